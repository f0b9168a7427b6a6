"""The examples of README.md, docs/ and benchmarks/README.md, run as written.

A code block preceded by a marker comment is run:

    <!-- test: run -->                  a ```sh block through bash (-e, pipefail), or a
                                        ```python block through python
    <!-- test: run; expect: TEXT -->    the same, and TEXT must be in its standard output
    <!-- test: pytest -->               a ```python block as a test file, with pulsard's pytest plugin

The blocks of one file run in order on one real pulsard (free loopback ports, its own data
directory), so a block may use what an earlier block of its file made. The examples name the
default addresses 127.0.0.1:6650 and 127.0.0.1:8080: those are replaced by the broker's, and
PULSAR_CLIENT_CONF names a client.conf with them, so `pulsard admin` and `pulsard client`
reach it without flags. Commands run in the broker's work directory (`./data` is its data
directory), with `pulsard` on the PATH running this source tree.

Unmarked blocks are not run: the two install commands (CI runs those), commands that start
a broker or a cluster, Spark, TLS set-ups.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from compat_tests.broker import REPO_ROOT, Broker, BrokerError

DOC_FILES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
             REPO_ROOT / "benchmarks" / "README.md"]
MARKER = re.compile(r"^<!--\s*test:\s*(run|pytest)\s*(?:;\s*expect:\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^```(\w+)\s*$")
DEFAULT_BROKER_ADDRESS = "127.0.0.1:6650"
DEFAULT_WEB_ADDRESS = "127.0.0.1:8080"
EXAMPLE_TIMEOUT_S = 120
# The first ```sh block of the README: a tool reads its lines 1 and 2 (install + start, install + test).
README_COMMANDS = [
    "python3 -m pip install -e . && pulsard standalone",
    "python3 -m pip install -e '.[test]' && python3 -m pytest",
]


@dataclass(frozen=True)
class Example:
    path: Path
    line: int          # of the opening fence, 1-based
    kind: str          # "run" or "pytest"
    language: str      # "sh" or "python"
    code: str
    expect: str | None

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"


def examples_of(path: Path) -> list[Example]:
    """The marked blocks of one Markdown file; a marker not followed by a fenced block, or on
    a block of another language, is an error (so a typo does not silently skip an example)."""
    lines = path.read_text().splitlines()
    found: list[Example] = []
    for index, line in enumerate(lines):
        marker = MARKER.match(line)
        if not marker:
            continue
        start = next((i for i in range(index + 1, len(lines)) if lines[i].strip()), len(lines))
        fence = FENCE.match(lines[start]) if start < len(lines) else None
        where = f"{path.relative_to(REPO_ROOT)}:{index + 1}"
        if fence is None:
            raise ValueError(f"{where}: a test marker must be followed by a fenced code block")
        kind, language = marker.group(1), fence.group(1)
        if (kind, language) not in (("run", "sh"), ("run", "python"), ("pytest", "python")):
            raise ValueError(f"{where}: `test: {kind}` does not take a ```{language} block")
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise ValueError(f"{where}: the code block is not closed")
        found.append(Example(path, start + 1, kind, language, "\n".join(lines[start + 1:end]) + "\n",
                             marker.group(2)))
    return found


EXAMPLES = [example for path in DOC_FILES for example in examples_of(path)]


# -- the documents themselves --------------------------------------------------------------------
def test_readme_opens_with_the_two_commands():
    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert block is not None and block.group(1).splitlines() == README_COMMANDS


def test_every_document_has_runnable_examples_parsed():
    assert len(EXAMPLES) >= 10, [example.name for example in EXAMPLES]


def test_relative_links_point_to_files():
    broken = []
    for path in DOC_FILES:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (path.parent / target.partition("#")[0]).exists():
                broken.append(f"{path.relative_to(REPO_ROOT)}: {target}")
    assert broken == []


def test_configuration_tables_name_exactly_the_keys_pulsard_reads():
    from server.config import BrokerConfig
    from server.config_rules import known_keys

    documented: set[str] = set()
    for page in ("configuration.md", "security.md"):
        for line in (REPO_ROOT / "docs" / page).read_text().splitlines():
            cells = line.split("|")
            if line.startswith("| ") and cells[1].strip() not in ("key", "---"):
                documented.update(key for key in re.split(r"[\s/,]+", cells[1]) if key)
    known = set(known_keys(BrokerConfig()))
    assert sorted(documented - known) == [], "documented, but pulsard does not read them"
    assert sorted(known - documented) == [], "read by pulsard, but not documented"


# -- running the examples ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def doc_broker(tmp_path_factory):
    """doc_broker(path) -> the broker of that document, started on first use; the previous
    document's broker is stopped then (the examples run file by file)."""
    current: dict[Path, Broker] = {}

    def _for(path: Path) -> Broker:
        if path not in current:
            for broker in current.values():
                broker.stop()
            current.clear()
            broker = Broker(tmp_path_factory.mktemp(f"docs-{path.stem}"))
            try:
                current[path] = broker.start()
            except BrokerError as exc:
                pytest.fail(f"pulsard did not come up: {exc}", pytrace=False)
        return current[path]

    yield _for
    for broker in current.values():
        broker.stop()


@pytest.fixture(scope="module")
def pulsard_bin(tmp_path_factory) -> Path:
    """A folder with a `pulsard` command that runs this source tree (the installed console
    script may belong to another checkout)."""
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "pulsard"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m server "$@"\n')
    script.chmod(0o755)
    return folder


def _environment(broker: Broker, pulsard_bin: Path) -> dict[str, str]:
    client_conf = broker.work_dir / "client.conf"
    client_conf.write_text(f"brokerServiceUrl={broker.service_url}\nwebServiceUrl={broker.web_url}\n")
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(pulsard_bin), os.environ.get("PATH", "")]),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "PULSAR_CLIENT_CONF": str(client_conf),
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    }


def _on_broker(code: str, broker: Broker) -> str:
    return (code.replace(DEFAULT_BROKER_ADDRESS, f"127.0.0.1:{broker.broker_port}")
                .replace(DEFAULT_WEB_ADDRESS, f"127.0.0.1:{broker.web_port}"))


def _command(example: Example, code: str, work_dir: Path) -> list[str]:
    if example.kind == "pytest":
        test_file = work_dir / f"test_doc_example_{example.line}.py"
        test_file.write_text(code)
        return [sys.executable, "-m", "pytest", "-q", "-p", "server.testing.pytest_plugin",
                "-p", "no:cacheprovider", "--rootdir", str(work_dir),
                "--basetemp", str(work_dir / f"pytest-{example.line}"), str(test_file)]
    if example.language == "python":
        return [sys.executable, "-c", code]
    return ["bash", "-e", "-o", "pipefail", "-c", code]


@pytest.mark.timeout(EXAMPLE_TIMEOUT_S + 30)
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_example_runs_as_written(example: Example, doc_broker, pulsard_bin):
    broker = doc_broker(example.path)
    env = _environment(broker, pulsard_bin)
    if example.kind == "pytest":
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"   # the plugin is loaded once, by -p
    code = _on_broker(example.code, broker)
    try:
        run = subprocess.run(_command(example, code, broker.work_dir), cwd=broker.work_dir, env=env,
                             capture_output=True, text=True, timeout=EXAMPLE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{example.name} did not finish in {EXAMPLE_TIMEOUT_S} s:\n{code}\n"
                    f"stdout:\n{exc.stdout}\nstderr:\n{exc.stderr}", pytrace=False)
    report = f"{example.name} (exit {run.returncode}):\n{code}\nstdout:\n{run.stdout[-4000:]}\nstderr:\n{run.stderr[-4000:]}"
    assert run.returncode == 0, report
    if example.kind == "pytest":
        assert " passed" in run.stdout and "failed" not in run.stdout, report
    if example.expect is not None:
        assert example.expect in run.stdout, report
