"""Transactional crash harness: a consume-transform-produce worker on the official Go client's
transactions (benchmarks/loadgen/txnworker) runs while the broker (transactionCoordinatorEnabled)
is killed with SIGKILL at random instants and restarted, as in crash_harness.py.

The input topic holds --messages numbered messages. The worker receives a few at a time on an
Exclusive subscription (Failover's 1 s delay when the active consumer changes would slow its
restarts), sends "N N*N TXN" per input to the output topic (of --partitions, so that a commit
writes its marker on several) in a transaction, acks the inputs in it, and commits (or aborts
some on purpose); on an error it abandons the transaction (the broker aborts it on its
timeout) and its client, and starts again. Messages given back after an abort come with the rest
of the unacknowledged ones, some of which a later transaction may have committed already: the
broker refuses their acks (TransactionConflict, the ack_conflicts figure), and the worker
abandons that transaction and starts again. Deduplication is on, as exactly-once asks.

After the cycles the harness waits for the input subscription's backlog to reach 0, stops the
worker, waits for the broker to time out the transactions the worker abandoned, kills and
restarts the broker once more, and checks, with a reader of the output from the earliest
position:
- every input number is in the output exactly once, transformed right (nothing lost, nothing
  doubled);
- a transaction whose commit the worker saw succeed is wholly visible; one it never asked to
  commit (aborted on purpose, or abandoned before its commit) is not visible at all; one whose
  commit's answer was lost is visible wholly or not at all;
- the input subscription's backlog is still 0 (the acks of committed transactions kept).

    python benchmarks/txn_crash_harness.py [--cycles 20] [--messages N] [--batch 5]
        [--abort-ratio 0.1] [--partitions 3] [--seed N]

prints one line per cycle and the totals; exits 1 on the first violation. Needs Go (the worker
is built at start). compat_tests/test_txn_crash_harness.py runs a few cycles in CI.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pulsar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import crash_cycles  # noqa: E402
from benchmarks.crash_cycles import kill_cycles  # noqa: E402
from compat_tests.admin_http import AdminHttp  # noqa: E402
from compat_tests.broker import Broker  # noqa: E402
from compat_tests.toolchains import require_tools, run_build  # noqa: E402

CONFIG = {
    "transactionCoordinatorEnabled": "true",
    # As Pulsar's documentation says, exactly-once needs it: a send the client repeats after a
    # reconnection is otherwise stored twice, in a transaction as out of one.
    "brokerDeduplicationEnabled": "true",
    "defaultRetentionTimeInMinutes": -1,      # keep everything, so the check can read it all
    "defaultRetentionSizeInMB": -1,
}
INPUT = "persistent://public/default/txn-harness-in"
OUTPUT = "persistent://public/default/txn-harness-out"
SUBSCRIPTION = "transform"
TXN_TIMEOUT_S = 5        # the broker aborts an abandoned transaction after this
STALL_S = 60             # the backlog not falling for this long is a violation
LOADGEN = Path(__file__).resolve().parent / "loadgen"


@dataclass
class Outcomes:
    """The worker's transactions by outcome: transaction id -> the input numbers in it."""

    committed: dict[str, list[int]] = field(default_factory=dict)
    aborted: dict[str, list[int]] = field(default_factory=dict)      # on purpose
    abandoned: dict[str, list[int]] = field(default_factory=dict)    # left to the broker's timeout
    unknown: dict[str, list[int]] = field(default_factory=dict)
    restarts: int = 0
    conflicts: int = 0      # of the restarts: an ack refused with TransactionConflict
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, line: str) -> None:
        kind, _, rest = line.strip().partition(" ")
        with self.lock:
            if kind == "ERROR":
                self.restarts += 1
                self.conflicts += "TransactionConflict" in rest
            elif kind in ("COMMITTED", "ABORTED", "ABANDONED", "UNKNOWN"):
                tag, _, numbers = rest.partition(" ")
                getattr(self, kind.lower())[tag] = [int(n) for n in numbers.split(",")]

    def status(self) -> str:
        with self.lock:
            inputs = sum(len(v) for v in self.committed.values())
            return (f"{len(self.committed)} committed ({inputs} inputs), {len(self.aborted)} aborted, "
                    f"{len(self.abandoned)} abandoned, {len(self.unknown)} unknown, {self.restarts} worker restarts")

    def wait_for_commit(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not self.committed:
            if time.monotonic() > deadline:
                raise AssertionError(f"the worker committed nothing within {timeout} s")
            time.sleep(0.1)


class Worker:
    """The Go worker process; a thread reads its report lines into Outcomes."""

    def __init__(self, binary: Path, broker: Broker, batch: int, abort_ratio: float, seed: int,
                 work_dir: Path) -> None:
        self.outcomes = Outcomes()
        self.stderr = open(work_dir / "worker.log", "wb")     # the client's warnings
        self.lines = open(work_dir / "worker.out", "w")       # its report, timed, for a failure's story
        self.proc = subprocess.Popen(
            [str(binary), "-url", broker.service_url, "-input", INPUT, "-output", OUTPUT,
             "-subscription", SUBSCRIPTION, "-batch", str(batch), "-abort-ratio", str(abort_ratio),
             "-seed", str(seed), "-txn-timeout", f"{TXN_TIMEOUT_S}s"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.write(f"{time.monotonic():.3f} {line}")
            self.outcomes.record(line)

    def stop(self) -> None:
        """Close its stdin (it finishes its transaction and exits); kill it if it hangs."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=2 * TXN_TIMEOUT_S + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join()
        self.stderr.close()
        self.lines.close()


def build_worker(out_dir: Path) -> Path:
    binary = out_dir / "txnworker"
    require_tools("go")
    run_build(["go", "build", "-o", str(binary), "./txnworker"], LOADGEN, "go build of the worker", print)
    return binary


def fill_input(client: pulsar.Client, messages: int) -> None:
    producer = client.create_producer(INPUT, batching_enabled=False, block_if_queue_full=True)
    for n in range(messages):
        producer.send_async(str(n).encode(), lambda _result, _msg_id: None)
    producer.flush()
    producer.close()


def backlog(admin: AdminHttp) -> int:
    response = admin.get(f"/admin/v2/persistent/{INPUT.removeprefix('persistent://')}/stats")
    response.raise_for_status()
    return response.json()["subscriptions"][SUBSCRIPTION]["msgBacklog"]


def wait_for_empty_backlog(admin: AdminHttp, worker: Worker) -> None:
    """Poll until the input subscription's backlog is 0; a backlog stuck for STALL_S fails."""
    last, since = backlog(admin), time.monotonic()
    while last:
        if worker.proc.poll() is not None:
            raise AssertionError(f"the worker exited ({worker.proc.returncode}) with {last} inputs left")
        time.sleep(0.5)
        now = backlog(admin)
        if now < last:
            since = time.monotonic()
        elif time.monotonic() - since > STALL_S:
            raise AssertionError(f"the input backlog stuck at {now} for {STALL_S} s")
        last = now


def wait_for_no_open_transaction(admin: AdminHttp) -> None:
    """Poll until the coordinators hold no open transaction: the broker has ended, on their
    timeouts, those the worker abandoned (an open one would hold the output's readers back)."""
    deadline = time.monotonic() + 3 * TXN_TIMEOUT_S
    while True:
        response = admin.get("/admin/v3/transactions/coordinatorStats")
        response.raise_for_status()
        open_ = sum(stats["ongoingTxnSize"] for stats in response.json().values())
        if not open_:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{open_} transactions still open {3 * TXN_TIMEOUT_S} s after the worker stopped")
        time.sleep(0.5)


def output_topics(partitions: int) -> list[str]:
    return [f"{OUTPUT}-partition-{i}" for i in range(partitions)] if partitions > 1 else [OUTPUT]


def read_output(client: pulsar.Client, partitions: int) -> dict[str, list[int]]:
    """The output, each partition from the earliest position: transaction id -> input numbers."""
    visible: dict[str, list[int]] = defaultdict(list)
    for topic in output_topics(partitions):
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        try:
            while True:
                n, square, tag = reader.read_next(2000).data().decode().split(" ")
                if int(square) != int(n) ** 2:
                    raise AssertionError(f"output {n} {square} {tag}: not transformed right")
                visible[tag].append(int(n))
        except pulsar.Timeout:
            pass
        finally:
            reader.close()
    return visible


def check(visible: dict[str, list[int]], outcomes: Outcomes, messages: int) -> None:
    """Each input exactly once; each transaction's outputs visible as its outcome allows."""
    count: dict[int, list[str]] = defaultdict(list)
    for tag, numbers in visible.items():
        for n in numbers:
            count[n].append(tag)
    doubled = {n: tags for n, tags in count.items() if len(tags) > 1}
    if doubled:
        raise AssertionError(f"{len(doubled)} inputs in the output more than once, e.g. {next(iter(doubled.items()))}")
    lost = sorted(set(range(messages)) - set(count))
    if lost:
        raise AssertionError(f"{len(lost)} inputs missing from the output, e.g. {lost[:5]}")
    for tag, numbers in visible.items():
        if tag in outcomes.aborted or tag in outcomes.abandoned:
            raise AssertionError(f"transaction {tag}, never committed, is visible: {numbers}")
        expected = outcomes.committed.get(tag, outcomes.unknown.get(tag))
        if expected is None:
            raise AssertionError(f"transaction {tag}, unknown to the worker, is visible: {numbers}")
        if sorted(numbers) != sorted(expected):
            raise AssertionError(f"transaction {tag} partly visible: {sorted(numbers)} of {sorted(expected)}")
    invisible = set(outcomes.committed) - set(visible)
    if invisible:
        tag = next(iter(invisible))
        raise AssertionError(f"{len(invisible)} committed transactions not visible, "
                             f"e.g. {tag} {outcomes.committed[tag]}")


def run(cycles: int, messages: int, batch: int, abort_ratio: float, partitions: int, seed: int,
        work_dir: Path, log=print) -> dict[str, object]:
    rng = random.Random(seed)
    binary = build_worker(work_dir)
    broker = Broker(work_dir, CONFIG).start()
    admin = AdminHttp(broker.web_url)
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=30,
                           logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(work_dir / "client.log")))
    worker = None
    started = time.monotonic()
    try:
        client.subscribe(INPUT, SUBSCRIPTION).close()
        if partitions > 1:
            admin.put(f"/admin/v2/persistent/{OUTPUT.removeprefix('persistent://')}/partitions",
                      json=partitions).raise_for_status()
        fill_input(client, messages)
        worker = Worker(binary, broker, batch, abort_ratio, seed, work_dir)
        worker.outcomes.wait_for_commit(30)
        kill_cycles(broker, cycles, rng, worker.outcomes.status, log)
        wait_for_empty_backlog(admin, worker)
        worker.stop()
        wait_for_no_open_transaction(admin)
        broker.kill9()
        broker.restart()
        if backlog(admin):
            raise AssertionError(f"after a last restart the input backlog is {backlog(admin)}, not 0")
        outcomes = worker.outcomes
        visible = read_output(client, partitions)
        check(visible, outcomes, messages)
        return {"cycles": cycles, "seconds": time.monotonic() - started, "inputs": messages,
                "committed": len(outcomes.committed), "aborted": len(outcomes.aborted),
                "abandoned": len(outcomes.abandoned),
                "unknown": len(outcomes.unknown),
                "unknown_visible": len(set(outcomes.unknown) & set(visible)),
                "worker_restarts": outcomes.restarts, "ack_conflicts": outcomes.conflicts}
    finally:
        if worker is not None and worker.proc.poll() is None:
            worker.stop()
        client.close()
        broker.stop()


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--messages", type=int, help="inputs (default: 600 per cycle, to keep the worker busy)")
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--abort-ratio", type=float, default=0.1)
    parser.add_argument("--partitions", type=int, default=3, help="of the output topic (1: not partitioned)")


def main() -> int:
    return crash_cycles.main(__doc__, "txn-crash-harness-", _arguments, lambda args, work_dir: run(
        args.cycles, args.messages or 600 * args.cycles, args.batch, args.abort_ratio, args.partitions, args.seed,
        work_dir))


if __name__ == "__main__":
    sys.exit(main())
