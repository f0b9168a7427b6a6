"""Native helpers shared by the bottom layers (protocol, bookkeeper); depends on neither.

``crc32c(data, value=0)``: the CRC32C every checksum of the protocol and of the storage uses.
It is native/_crc32c.c where that is built and the CPU has SSE4.2, else the crc32c package's,
which gives the same numbers (as it does with PULSARD_PURE_PYTHON=1). The package is imported
only then: its import reads package metadata, some 20 ms of a broker's start.
"""

from __future__ import annotations

import os

try:   # optional, built by pip install where it can be
    from ._crc32c import available as _available, crc32c as _native_crc32c
except ImportError:
    _native_crc32c = None

if _native_crc32c is not None and _available() and not os.environ.get("PULSARD_PURE_PYTHON"):
    crc32c = _native_crc32c
else:
    from crc32c import crc32c

__all__ = ["crc32c"]
