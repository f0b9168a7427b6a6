"""The installed package's version, looked up when asked: importlib.metadata and the email
modules it loads cost some 15 ms that a broker's start need not spend."""

from __future__ import annotations


def broker_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pulsard")
    except PackageNotFoundError:
        return "unknown"
