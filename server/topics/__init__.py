"""Topics (persistent and non-persistent), their producers, schemas, deduplication, compaction
and statistics; subscriptions and dispatchers live in ``topics.subscriptions``."""
