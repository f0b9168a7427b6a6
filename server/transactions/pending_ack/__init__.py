"""Pending acks: each subscription's transactional acknowledgements, held until their transaction ends."""
