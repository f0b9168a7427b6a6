"""Namespace and topic policies and the monitors that apply them to loaded topics (retention,
TTL, backlog quotas, inactive topics, auto-creation)."""
