"""Batch ack sets as the protocol carries them (int64 words, a bit SET = that index still
unacknowledged) and as the pending acks keep them (an int whose SET bits are the indexes a
transaction acknowledged)."""

from __future__ import annotations

_WORD = 0xFFFF_FFFF_FFFF_FFFF


def full_mask(batch_size: int) -> int:
    return (1 << batch_size) - 1


def acked_mask(words: list[int], batch_size: int) -> int:
    """The indexes below batch_size that the words say are acknowledged."""
    unacked = 0
    for i, word in enumerate(words):
        unacked |= (word & _WORD) << (64 * i)
    return full_mask(batch_size) & ~unacked


def words_of(acked: int, batch_size: int) -> list[int]:
    """The protocol's words for a batch whose `acked` indexes are acknowledged."""
    unacked = full_mask(batch_size) & ~acked
    words = []
    for i in range((batch_size + 63) // 64):
        word = (unacked >> (64 * i)) & _WORD
        words.append(word - (1 << 64) if word >= 1 << 63 else word)
    return words
