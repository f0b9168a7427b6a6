"""What `pulsard standalone` does before it serves: the tools' and cluster mode's modules stay
out (each costs start-up time and resident memory), and the cyclic collector, off while modules
load, is back on afterwards. Imports are checked in a fresh interpreter, as sys.modules of the
test process holds whatever other tests imported."""

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli import main
from server.gc_tuning import collect_from_now_on

REPO_ROOT = Path(__file__).resolve().parents[2]
NOT_FOR_STANDALONE = (
    "jwt", "cryptography", "bcrypt", "pulsar", "kazoo", "fastavro", "cramjam", "lz4",
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


@pytest.fixture
def collector_off():
    gc.disable()
    yield
    gc.unfreeze()
    gc.enable()


def test_serving_freezes_start_up_objects_and_collects_again(collector_off):
    collect_from_now_on()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_other_commands_run_with_the_collector_on(collector_off, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["tokens", "create-secret-key", "--base64"])
    assert exit_.value.code == 0
    assert gc.isenabled()
