"""Regenerate ``protocol/pulsar_api_pb2.py`` from ``protocol/pulsar_api.proto``.

Run from anywhere as ``python -m protocol.generate``. The proto is compiled with the
repository root as include path, so the generated module registers itself as
``protocol/pulsar_api.proto`` and imports nothing by a top-level name: plain
``from protocol import pulsar_api_pb2`` works.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO = Path("protocol") / "pulsar_api.proto"


def main() -> int:
    """Run grpc_tools' bundled protoc; return its exit status."""
    command = [
        sys.executable, "-m", "grpc_tools.protoc",
        "--proto_path=.",
        "--python_out=.",
        "--pyi_out=.",
        str(PROTO),
    ]
    return subprocess.run(command, cwd=REPO_ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
