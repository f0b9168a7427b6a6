"""The optional native SEND path (``_send_path.c``), or None.

None when the extension is not built or not wanted (see ``native.extension``), or when this CPU
lacks the CRC32C instruction it uses; callers then take their Python path, which gives the
same results.
"""

from __future__ import annotations

from native import extension

_module = extension("protocol._send_path")
send_path = _module if _module is not None and _module.available() else None
