"""Run the official Go client's own integration tests (pulsar-client-go's ./pulsar package) against pulsard.

Not part of the pytest suite (a full run takes tens of minutes). Usage, from the repository root:

    python compat_tests/go_upstream/run.py                 # every test, one at a time
    python compat_tests/go_upstream/run.py -run 'AckIDList|ChunkSize' --timeout 60

The upstream tests hard-code their broker (pulsar/helper_for_test.go: pulsar://localhost:6650,
pulsar+ssl://localhost:6651, http://localhost:8080, https://localhost:8443), so one pulsard listens on
those fixed loopback ports, set up as the client's CI sets up its broker (service.py: its
standalone.conf with TLS, authentication and authorization, its certificates, tokens and htpasswd,
its permission grants). Nothing from the Go module is copied into this repository: the module
(read-only in the Go module cache) is copied to a temporary directory, where its test binary is built
and run (the tests read certificates, tokens and keys relative to that package dir), and whose files
the broker's configuration names.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from compat_tests.broker import Broker, BrokerError  # noqa: E402
from compat_tests.go_upstream.service import SuperUserAdmin, broker_config, grant_permissions, module_dir  # noqa: E402

BROKER_PORT, WEB_PORT, WEB_PORT_TLS = 6650, 8080, 8443
DEFAULT_TIMEOUT_S = 40
#: Tests that wait out the client's operation timeout (30 s) by design, twice or more: their own limits.
SLOW_TESTS = {"TestTxn_ImplCommitOrAbort": 150, "TestTxn_RegisterOpAndEndOp": 200}
# Keys of the upstream standalone.conf that must differ here: loopback only.
CONF_OVERRIDES = {"bindAddress": "127.0.0.1", "brokerServicePort": BROKER_PORT, "webServicePort": WEB_PORT,
                  "brokerServicePortTls": 6651, "webServicePortTls": WEB_PORT_TLS}

# Tests that need something this runner cannot supply.
_DOCKER = "starts or stops a broker with Docker (testcontainers)"
EXCLUDED: dict[str, str] = {
    **{name: _DOCKER for name in (
        "TestConsumerKeepReconnectingAndThenCallClose", "TestReconnectConsumer",
        "TestReconnectedBrokerSendPermits", "TestProducerKeepReconnectingAndThenCallClose",
        "TestSendAsyncCouldTimeoutWhileReconnecting")},
}

# First match wins: a failing test's output -> a one-line cause.
CAUSES: list[tuple[str, str]] = [
    (r"(?i)testcontainers|docker", "needs Docker"),
    (r"TopicTerminated|terminate", "topic termination"),
    (r"http error status code: 404|status code: 404|404 Not Found", "admin REST endpoint answered 404"),
    (r"http error status code: (\d+)|status code: (\d+)", "admin REST answered an error status"),
    (r"panic: test timed out", "timed out inside go test"),
    (r"(?i)connection refused", "connection refused"),
]


@dataclass
class Outcome:
    name: str
    status: str           # PASS, FAIL, TIMEOUT, SKIP (t.Skip inside the test)
    seconds: float
    cause: str = ""
    output: str = ""


def build(work: Path) -> tuple[Path, Path]:
    """Copy the module to `work` (writable), build ./pulsar's test binary; return (binary, package dir)."""
    src = work / "pulsar-client-go"
    shutil.copytree(module_dir(), src)
    for path in [src, *src.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    binary = work / "pulsar.test"
    subprocess.run(["go", "test", "-c", "-o", str(binary), "./pulsar"], cwd=src, check=True)
    return binary, src / "pulsar"


def list_tests(binary: Path, package_dir: Path, pattern: str) -> list[str]:
    out = subprocess.run([str(binary), "-test.list", pattern], cwd=package_dir,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.split() if line.startswith("Test")]


def start_broker(work: Path, module: Path) -> tuple[Broker, SuperUserAdmin]:
    (work / "broker").mkdir(exist_ok=True)
    broker = Broker(work / "broker", broker_config(module, CONF_OVERRIDES))
    broker.broker_port, broker.web_port = BROKER_PORT, WEB_PORT
    broker.start()
    admin = SuperUserAdmin(module, WEB_PORT_TLS)
    grant_permissions(admin)
    return broker, admin


def classify(output: str) -> str:
    for pattern, cause in CAUSES:
        if re.search(pattern, output):
            return cause
    failure = re.search(r"Error:\s+(.*)\n\s*(.*)", output) or re.search(r"(?m)^\s+\S+_test\.go:\d+: (.*)()", output)
    if failure is None:
        return ""
    first, second = failure.group(1).strip(), failure.group(2).strip()
    return (f"{first} {second}" if first.endswith(":") else first)[:110]


def run_one(binary: Path, package_dir: Path, name: str, timeout: float) -> Outcome:
    started = time.monotonic()
    cmd = [str(binary), "-test.run", f"^{name}$", "-test.v", "-test.count=1", f"-test.timeout={timeout:.0f}s"]
    try:
        done = subprocess.run(cmd, cwd=package_dir, capture_output=True, text=True, timeout=timeout + 15)
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else "", None
    seconds = time.monotonic() - started
    if code is None or "panic: test timed out" in output:
        return Outcome(name, "TIMEOUT", seconds, "", output)
    if code == 0 and f"--- SKIP: {name}" in output:
        return Outcome(name, "SKIP", seconds, "", output)
    if code == 0 and f"--- PASS: {name}" in output:
        return Outcome(name, "PASS", seconds, "", output)
    return Outcome(name, "FAIL", seconds, classify(output), output)


def print_table(outcomes: list[Outcome]) -> None:
    width = max((len(o.name) for o in outcomes), default=10)
    for o in outcomes:
        print(f"{o.name:<{width}}  {o.status:<7} {o.seconds:6.1f}s  {o.cause}")
    totals = {s: sum(o.status == s for o in outcomes) for s in ("PASS", "FAIL", "TIMEOUT", "SKIP")}
    print(f"\nran {len(outcomes)}: " + ", ".join(f"{v} {k.lower()}" for k, v in totals.items())
          + f"; excluded {len(EXCLUDED)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-run", default=".*", help="regex of top-level test names, as go test -run")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per test")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (broker log, outputs)")
    parser.add_argument("--show-output", action="store_true", help="print the output of failing tests")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="pulsard-go-upstream-"))
    binary, package_dir = build(work)
    names = [n for n in list_tests(binary, package_dir, args.run) if n not in EXCLUDED]
    broker, admin = start_broker(work, package_dir.parent)
    outputs = work / "outputs"
    outputs.mkdir()
    outcomes: list[Outcome] = []
    try:
        for index, name in enumerate(names, 1):
            outcome = run_one(binary, package_dir, name, max(args.timeout, SLOW_TESTS.get(name, 0)))
            outcomes.append(outcome)
            (outputs / f"{name}.log").write_text(outcome.output)
            print(f"[{index}/{len(names)}] {name}: {outcome.status} {outcome.seconds:.1f}s {outcome.cause}", flush=True)
            if args.show_output and outcome.status in ("FAIL", "TIMEOUT"):
                print(outcome.output[-4000:])
            if outcome.status == "TIMEOUT" or not admin.healthy():
                print(f"    restarting the broker after {name}", flush=True)
                broker.restart()
                grant_permissions(admin)
    except BrokerError as exc:
        print(f"broker failed: {exc}", file=sys.stderr)
    finally:
        broker.stop()
    print()
    print_table(outcomes)
    print(f"\noutputs and broker log: {work}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(o.status in ("PASS", "SKIP") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
