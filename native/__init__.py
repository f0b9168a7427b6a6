"""Native helpers shared by the bottom layers (protocol, bookkeeper); depends on neither.

``extension(name)`` loads one of pulsard's optional C extensions, or gives None: not built
(no C compiler at install, not x86-64), or ``PULSARD_PURE_PYTHON`` set. Callers then take their
Python paths, which give the same results; those that use the CRC32C instruction also ask the
module's ``available()``.

``crc32c(data, value=0)``: the CRC32C every checksum of the protocol and of the storage uses.
It is native/_crc32c.c where that loads and the CPU has SSE4.2, else the crc32c package's,
which gives the same numbers. The package is imported only then: its import reads package
metadata, some 20 ms of a broker's start.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def extension(name: str) -> ModuleType | None:
    """The optional extension module ``name``, or None (see above)."""
    if os.environ.get("PULSARD_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


_crc32c = extension("native._crc32c")
if _crc32c is not None and _crc32c.available():
    crc32c = _crc32c.crc32c
else:
    from crc32c import crc32c

__all__ = ["crc32c", "extension"]
