"""Compatibility tests: the official Pulsar clients against a real pulsard process."""
