"""Pulsar's admin REST API (v2), one module per resource (assembled in resources.py), and
`pulsard admin`, its command-line client (cli.py), which imports none of the broker."""
