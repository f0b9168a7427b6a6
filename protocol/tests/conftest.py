"""The decoder's two paths: every test using the ``decoding`` fixture runs on both."""

from __future__ import annotations

import pytest

from protocol import codec


@pytest.fixture(params=["native", "python"])
def decoding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """'native': plain SENDs go through protocol._send_path (skipped where it is not built);
    'python': every frame is decoded in Python, as with PULSARD_PURE_PYTHON=1."""
    if request.param == "native":
        if codec._scan_sends is None:
            pytest.skip("protocol._send_path is not built or not usable here")
    else:
        monkeypatch.setattr(codec, "_scan_sends", None)
    return request.param
