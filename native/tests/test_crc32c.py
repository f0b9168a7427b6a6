"""native.crc32c against the crc32c package: the same numbers for any bytes-like input,
continued or not, on both sides of the size where the interpreter is released."""

from __future__ import annotations

import importlib
import random

import crc32c as package
import pytest

import native


def test_the_native_function_is_chosen_where_it_is_built() -> None:
    if native._crc32c is None or not native._crc32c.available():
        pytest.skip("native._crc32c is not built, this CPU lacks SSE4.2, or PULSARD_PURE_PYTHON is set")
    assert native.crc32c is native._crc32c.crc32c


def test_pure_python_takes_the_package_and_no_extension(monkeypatch) -> None:
    monkeypatch.setenv("PULSARD_PURE_PYTHON", "1")
    try:
        assert importlib.reload(native).crc32c is package.crc32c
        assert native.extension("native._crc32c") is None
    finally:
        monkeypatch.undo()
        importlib.reload(native)


def test_an_extension_that_is_not_built_is_none() -> None:
    assert native.extension("native._no_such_extension") is None


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 63, 64, 65, 4095, 32 * 1024 - 1, 32 * 1024, 1 << 20])
def test_same_crc_as_the_package_whole_and_continued(size: int) -> None:
    data = random.Random(size).randbytes(size)
    assert native.crc32c(data) == package.crc32c(data)
    cut = size // 3
    assert native.crc32c(data[cut:], native.crc32c(data[:cut])) == package.crc32c(data)
    assert native.crc32c(data, 0xDEADBEEF) == package.crc32c(data, 0xDEADBEEF)


def test_any_bytes_like_input_and_a_known_value() -> None:
    assert native.crc32c(b"123456789") == 0xE3069283   # the CRC-32C check value
    data = bytearray(b"pulsard" * 1000)
    view = memoryview(data)[5:4000]
    assert native.crc32c(view) == package.crc32c(bytes(view))
    assert native.crc32c(data) == package.crc32c(bytes(data))
    with pytest.raises(TypeError):
        native.crc32c("text")
