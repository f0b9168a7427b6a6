"""A persistent topic's transaction buffer: transactional entries invisible until commit."""
