"""Subscriptions, their consumers, and one dispatcher per subscription type (with Key_Shared's
selectors and delayed delivery)."""
