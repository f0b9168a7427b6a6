"""Helpers for applications that test against a real pulsard: a broker process and a pytest plugin."""
