"""Metadata writes that finish even when whoever asked for them is cancelled.

A client that disconnects cancels its request's task; a metadata-store write already queued
is applied anyway. Had the caller's cancellation stopped the bookkeeping after it (the new
version, the registered cursor), the in-memory state would disagree with the store for good.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, TypeVar

T = TypeVar("T")


async def run_to_end(work: Awaitable[T]) -> T:
    """Await work in a task of its own that the caller's cancellation does not reach."""
    task = asyncio.ensure_future(work)
    task.add_done_callback(_observe)
    return await asyncio.shield(task)


def _observe(task: asyncio.Future) -> None:
    """A caller that was cancelled never reads the outcome; the work's owner handles failure
    (a failed cursor write stays dirty and is retried)."""
    if not task.cancelled():
        task.exception()
