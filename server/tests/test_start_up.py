"""What `pulsard standalone` loads before it serves: the tools' and cluster mode's modules stay
out (each costs start-up time and resident memory). A fresh interpreter, as sys.modules of the
test process holds whatever other tests imported."""

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_FOR_STANDALONE = (
    "jwt", "cryptography", "bcrypt", "pulsar", "kazoo",
    "server.admin.cli", "server.security.tokens_cli", "server.tools.client_cli", "server.tools.perf",
    "server.cluster",
)


def test_standalone_start_leaves_the_tools_and_cluster_mode_unloaded():
    probe = (
        "import sys\n"
        "from server.cli import _parser\n"
        "from server.config import BrokerConfig\n"
        "from server.security.authentication import Authentication\n"
        "import server.standalone\n"
        "_parser('standalone').parse_args(['standalone'])\n"
        "Authentication(BrokerConfig().security)   # no provider configured, none loaded\n"
        f"print(' '.join(m for m in {NOT_FOR_STANDALONE!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert loaded == []


def test_a_tool_command_gets_its_parser():
    probe = ("import sys\nfrom server.cli import _parser\n"
             "args = _parser('tokens').parse_args(['tokens', 'show', 'x'])\n"
             "print(args.action, 'server.admin.cli' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["show", "False"]
