"""The open-files limit for benchmarks with thousands of sockets (the brokers they start inherit it)."""

from __future__ import annotations

import resource


def raise_open_files(needed: int | None = None) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to ``needed`` (default: as far as the hard limit allows);
    never above the hard limit, never lowered. Returns (soft, hard) as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if needed is None else needed
    if hard != resource.RLIM_INFINITY:
        wanted = hard if wanted == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and (wanted == resource.RLIM_INFINITY or soft < wanted):
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)
