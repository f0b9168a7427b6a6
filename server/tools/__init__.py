"""Command-line tools on the official Python client: `pulsard client` and `pulsard perf`."""
