"""Hand freed message buffers back to the operating system.

glibc serves allocations below its mmap threshold from the heap, and raises that threshold
each time a large mmapped block is freed; message-sized buffers (tens to hundreds of KB) then
end up in the heap, where fragmentation keeps them resident after they are freed. A flood of
100 KB messages left the broker at 900 MB RSS. A fixed threshold of 64 KB keeps such buffers
mmapped, so their memory returns to the system when they are freed.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3   # from glibc's malloc.h
MMAP_THRESHOLD = 64 * 1024


def return_large_buffers_to_the_system() -> None:
    """Fix glibc's mmap threshold (a no-op on another C library). The C library is already
    loaded: its symbols are looked up in the process itself, as ctypes.util.find_library
    would spend milliseconds of the start searching for it."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    if mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:
        log.debug("mallopt(M_MMAP_THRESHOLD) refused")
