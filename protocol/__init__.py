"""Sans-IO Pulsar wire protocol: frames <-> commands, stored entries, broker command builders.

Imports no other pulsard layer and does no I/O.
"""
