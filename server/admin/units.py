"""pulsar-admin's size and relative-time arguments ("100M", "16G", "3h", "2d", "-1"), so the
values users type for pulsar-admin mean the same to `pulsard admin`."""

from __future__ import annotations

import re

_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_size(text: str) -> int:
    """Bytes of "4096", "10M", "16G" (k/m/g/t, either case); -1 stays -1 (no limit)."""
    match = re.fullmatch(r"(-?\d+)([kKmMgGtT]?)", text.strip())
    if not match:
        raise ValueError(f"invalid size {text!r} (e.g. 4096, 10M, 16G, 3T, -1)")
    number, unit = int(match[1]), match[2].lower()
    return -1 if number < 0 else number * _SIZE_UNITS[unit]


def parse_relative_time(text: str) -> int:
    """Seconds of "120", "100m", "3h", "2d", "5w", "1y"; -1 stays -1 (no limit)."""
    match = re.fullmatch(r"(-?\d+)([smhdwySMHDWY]?)", text.strip())
    if not match:
        raise ValueError(f"invalid time {text!r} (e.g. 120, 100m, 3h, 2d, 5w, -1)")
    number, unit = int(match[1]), match[2].lower()
    return -1 if number < 0 else number * _TIME_UNITS[unit]


def size_in_mb(text: str) -> int:
    """Pulsar's retention size: bytes -> whole MB (under 1 MB is 0: no retention), -1 kept."""
    size = parse_size(text)
    return -1 if size < 0 else size // (1024 * 1024)


def time_in_minutes(text: str) -> int:
    """Pulsar's retention time: seconds -> whole minutes, -1 kept."""
    seconds = parse_relative_time(text)
    return -1 if seconds < 0 else seconds // 60
