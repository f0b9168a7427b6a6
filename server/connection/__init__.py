"""One client connection: the binary protocol's commands in, answers and messages out, with the
lookups and the back-pressure (publish budget, write buffer) that belong to a connection."""
