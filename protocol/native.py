"""The optional native SEND path (``_send_path.c``), or None.

None when the extension is not built (no C compiler at install, not x86-64), when this CPU
lacks the CRC32C instruction it uses, or when ``PULSARD_PURE_PYTHON`` is set; callers then
take their Python path, which gives the same results.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("PULSARD_PURE_PYTHON"):
        return None
    try:
        from protocol import _send_path
    except ImportError:
        return None
    return _send_path if _send_path.available() else None


send_path = _load()
