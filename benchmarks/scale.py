"""pulsard at scale next to Apache Pulsar 3.0.7: many topics, many connections, many consumers.

    python benchmarks/scale.py [--topics 10000] [--clients 8] [--parallel 64] [--timeout 60]
                               [--connections 10000] [--fair-topics 100] [--fair-messages 4000]
                               [--sample 20] [--cases topics,restart,listing,connections] [--pulsard-only]

Builds the Go load tool (benchmarks/loadgen, official pulsar-client-go v0.19.0) and runs every case
on pulsard, then on the reference Pulsar standalone (as compare.py starts it), one broker at a
time; prints a table per case with a pulsard row, a Pulsar row and their ratios. Nothing is
asserted: a broker that falls over, or a load-tool run that fails, becomes a figure.

- topics: --topics topics scale-{i}, opened by --clients client instances with --parallel topics
  in flight each: a durable subscription, a producer and one message per topic. Wall time, opens/s,
  broker CPU, and broker RSS before, with everything open, and after the clients closed
  and --settle seconds passed, with the broker's CPU use over those seconds; per topic means per
  topic the broker stored (its topic list), as an open the client gave up on after --timeout (the
  client's operation timeout) may still have completed there.
- restart: SIGTERM, then the broker again on the same data dir: exec to healthy; then --sample
  random topics one at a time, from Subscribe (lookup included) to their first message (the
  backlog's one message); then every topic reopened and its message read (healthy / missing).
- listing: GET /admin/v2/persistent/public/default and GET /metrics (seconds, bytes): after the
  topics case, just after the restart, and after every topic was reopened.
- connections: a fresh broker; --connections client instances connect at once (a connection
  each), then each subscribes one consumer to a Shared subscription on one of --fair-topics topics;
  then --fair-messages unbatched messages per topic, consumers reading without acknowledging:
  messages per consumer (min / median / max, how many got none). RSS per connection and consumer.

The open-files limit is raised to the hard limit (the brokers and the load tool inherit it; it is
printed, and the connection count is lowered to fit if it must be). Warnings and errors in each
broker's log are counted per case.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compare import REFERENCE_READY_S, SHIM, PeakRss, Reference, build_loadgen, cpu_seconds, start  # noqa: E402
from compat_tests import broker as _broker  # noqa: E402
from open_files import raise_open_files  # noqa: E402
from startup import compile_sources  # noqa: E402

CASES = ("topics", "restart", "listing", "connections")
LOADGEN_TIMEOUT_S = 3600
HTTP_TIMEOUT_S = 300
STOP_TIMEOUT_S = 900   # a clean stop closes every loaded topic
LIST_PATH = "/admin/v2/persistent/public/default"
RESTART_READY_S = 600   # a broker that loads every topic before it is healthy may take long
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # loopback: no proxy
_LOG_LEVEL = re.compile(r"\b(ERROR|WARN|WARNING|CRITICAL|FATAL)\b")


class CaseFailed(RuntimeError):
    """A case could not finish; its message becomes the figure."""


class LoadTool:
    """One loadgen run that prints key=value lines and, with -hold, waits for a line between phases."""

    def __init__(self, binary: Path, args: list[str], url: str, stderr: Path) -> None:
        self.stderr_path = stderr
        self._stderr = open(stderr, "w")
        self.proc = subprocess.Popen([str(binary), *args, "-url", url], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True)

    def line(self) -> dict[str, float]:
        """The next result line's key=value pairs (a leading bare word is dropped)."""
        text = self.proc.stdout.readline()
        if not text:
            self.proc.wait(timeout=10)
            raise CaseFailed(f"load tool exited with {self.proc.returncode}: {self.stderr_tail()}")
        return {k: float(v) for k, v in (kv.split("=", 1) for kv in text.split() if "=" in kv)}

    def go_on(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def finish(self) -> None:
        try:
            self.proc.stdin.close()
            if self.proc.wait(timeout=LOADGEN_TIMEOUT_S) != 0:
                raise CaseFailed(f"load tool exited with {self.proc.returncode}: {self.stderr_tail()}")
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()

    def stderr_tail(self) -> str:
        return " | ".join(self.stderr_path.read_text(errors="replace").strip().splitlines()[-3:])[-600:]

    def warnings(self) -> int:
        """Lines the client logged (warnings and errors only)."""
        return len(self.stderr_path.read_text(errors="replace").splitlines())


def run_once(binary: Path, args: list[str], url: str, stderr: Path) -> tuple[dict[str, float], LoadTool]:
    tool = LoadTool(binary, args, url, stderr)
    try:
        result = tool.line()
    finally:
        tool.finish()
    return result, tool


class LogWatch:
    """Counts warning and error lines that a broker's log gained since mark()."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def counts(self) -> tuple[dict[str, float], list[str]]:
        """Lines per kind since mark(), and the first three error lines."""
        errors = warnings = tracebacks = 0
        samples: list[str] = []
        with open(self.path, errors="replace") as log:
            log.seek(self.offset)
            for line in log:
                level = _LOG_LEVEL.search(line[:120])
                if line.startswith("Traceback"):
                    tracebacks += 1
                elif level and level.group(1) in ("ERROR", "CRITICAL", "FATAL"):
                    errors += 1
                    if len(samples) < 3:
                        samples.append(line.strip()[:240])
                elif level:
                    warnings += 1
        return {"errors": errors, "warnings": warnings, "tracebacks": tracebacks}, samples


def rss_mib(broker: _broker.Broker) -> float:
    return broker.rss_kib() / 1024


def cpu(broker: _broker.Broker) -> float:
    return sum(cpu_seconds(broker.pid))


def sockets(pid: int) -> int:
    """Open sockets of a process (its listeners and connections)."""
    fd_dir = Path(f"/proc/{pid}/fd")
    count = 0
    for fd in os.listdir(fd_dir):
        try:
            count += os.readlink(fd_dir / fd).startswith("socket:")
        except OSError:
            pass
    return count


def timed_get(url: str) -> tuple[float, int, bytes]:
    started = time.perf_counter()
    with _HTTP.open(url, timeout=HTTP_TIMEOUT_S) as resp:
        body = resp.read()
    return time.perf_counter() - started, len(body), body


def listing(broker: _broker.Broker) -> dict[str, float]:
    """Topic list and /metrics, three times each: the first answer and the best of three."""
    figures: dict[str, float] = {}
    for key, path in (("list", LIST_PATH), ("metrics", "/metrics")):
        runs = [timed_get(broker.web_url + path) for _ in range(3)]
        figures[f"{key}_first_s"] = runs[0][0]
        figures[f"{key}_best_s"] = min(r[0] for r in runs)
        figures[f"{key}_mib"] = runs[0][1] / 2**20
        if key == "list":
            figures["listed"] = len(json.loads(runs[0][2]))
    return figures


class Scale:
    """Runs the chosen cases on one broker kind and collects their figures by table."""

    def __init__(self, args: argparse.Namespace, loadgen: Path, work: Path) -> None:
        self.args, self.loadgen, self.work = args, loadgen, work
        self.tables: dict[str, dict[str, dict[str, float] | str]] = {}
        self.log_samples: dict[str, list[str]] = {}

    def record(self, table: str, name: str, run: Callable[[], dict[str, float]]) -> bool:
        try:
            self.tables.setdefault(table, {})[name] = run()
            return True
        except (CaseFailed, _broker.BrokerError, OSError, ValueError, subprocess.SubprocessError) as exc:
            self.tables.setdefault(table, {})[name] = f"failed: {str(exc).splitlines()[0][:300]}"
            print(f"{name}: {table} failed: {exc}", flush=True)
            return False

    def tool_args(self) -> list[str]:
        return ["-topics", str(self.args.topics), "-clients", str(self.args.clients),
                "-inflight", str(self.args.parallel), "-timeout", f"{self.args.timeout}s"]

    def run_broker(self, name: str, kind: type[_broker.Broker], ready_s: float) -> None:
        cases = self.args.cases
        broker = kind(self.work / name)
        watch = LogWatch(broker.log_path)
        try:
            if "topics" in cases and self.record("start", name, lambda: self.started(broker, ready_s)):
                self.with_log("topics", name, watch, lambda: self.topics_case(broker))
                if "listing" in cases:
                    self.with_log("listing after create", name, watch, lambda: listing(broker))
                if "restart" in cases:
                    self.restart_case(name, broker, watch, ready_s)
        finally:
            broker.stop(STOP_TIMEOUT_S)
        if "connections" in cases:
            fresh = kind(self.work / f"{name}-connections")
            watch = LogWatch(fresh.log_path)
            try:
                if self.record("start", f"{name} (connections)", lambda: self.started(fresh, ready_s)):
                    self.with_log("connections", name, watch, lambda: self.connections_case(fresh))
            finally:
                fresh.stop(STOP_TIMEOUT_S)

    def with_log(self, table: str, name: str, watch: LogWatch, run: Callable[[], dict[str, float]]) -> bool:
        watch.mark()
        started = time.perf_counter()
        ok = self.record(table, name, run)
        figures = self.tables[table][name]
        print(f"  {name} {table}: {time.perf_counter() - started:.1f} s; load average {os.getloadavg()}", flush=True)
        if isinstance(figures, dict):
            counts, samples = watch.counts()
            self.tables.setdefault("broker log", {})[f"{name} {table}"] = counts
            if samples:
                self.log_samples[f"{name} {table}"] = samples
        return ok

    @staticmethod
    def started(broker: _broker.Broker, ready_s: float) -> dict[str, float]:
        up, idle = start(broker, ready_s)
        return {"healthy_s": up, "rss_mib": idle}

    def stderr(self, label: str) -> Path:
        return self.work / f"loadgen-{label}-{time.time_ns()}.log"

    def topics_case(self, broker: _broker.Broker) -> dict[str, float]:
        n = self.args.topics
        cpu_before, rss_before = cpu(broker), rss_mib(broker)
        with PeakRss(broker) as peak:
            tool = LoadTool(self.loadgen, ["topics", "-mode", "create", "-hold", *self.tool_args()],
                            broker.service_url, self.stderr("topics"))
            try:
                opened = tool.line()
                cpu_open = cpu(broker) - cpu_before
                time.sleep(self.args.settle)
                rss_open = rss_mib(broker)
                tool.go_on()
                closed = tool.line()
            finally:
                tool.finish()
            cpu_closed = cpu(broker)
            time.sleep(self.args.settle)
            rss_closed, idle_cpu = rss_mib(broker), (cpu(broker) - cpu_closed) / self.args.settle
        # per topic the broker stored: an open the client gave up on may have completed there
        stored = len(json.loads(timed_get(broker.web_url + LIST_PATH)[2])) or 1
        print(f"  topics: {opened['ok']:.0f} of {n} open in {opened['seconds']:.1f} s, "
              f"closed in {closed['seconds']:.1f} s", flush=True)
        return {"ok": opened["ok"], "failed": opened["failed"], "stored": stored, "seconds": opened["seconds"],
                "opens_s": opened["rate"], "open_p50_ms": opened["open_p50_ms"],
                "open_p99_ms": opened["open_p99_ms"], "cpu_s": cpu_open, "cpu_ms_topic": cpu_open / stored * 1e3,
                "rss_before": rss_before, "rss_open": rss_open, "kib_open": (rss_open - rss_before) * 1024 / stored,
                "rss_closed": rss_closed, "kib_idle": (rss_closed - rss_before) * 1024 / stored,
                "rss_peak": peak.peak_kib / 1024, "idle_cpu_pct": idle_cpu * 100,
                "client_warnings": tool.warnings()}

    def restart_case(self, name: str, broker: _broker.Broker, watch: LogWatch, ready_s: float) -> None:
        def restart() -> dict[str, float]:
            started = time.perf_counter()
            code = broker.stop(STOP_TIMEOUT_S)
            stopped = time.perf_counter()
            broker.spawn()
            broker.wait_ready(max(ready_s, RESTART_READY_S))
            return {"stop_s": stopped - started, "exit_code": -9 if code is None else code,
                    "exec_healthy_s": time.perf_counter() - stopped, "rss_mib": rss_mib(broker)}

        if not self.with_log("restart", name, watch, restart):
            return
        if "listing" in self.args.cases:
            self.with_log("listing after restart (cold)", name, watch, lambda: listing(broker))
        self.with_log("first message", name, watch, lambda: self.first_case(broker))

        def reopen() -> dict[str, float]:
            cpu_before = cpu(broker)
            result, tool = run_once(self.loadgen, ["topics", "-mode", "reopen", *self.tool_args()],
                                    broker.service_url, self.stderr("reopen"))
            return {**result, "cpu_s": cpu(broker) - cpu_before, "rss_mib": rss_mib(broker),
                    "client_warnings": tool.warnings()}

        self.with_log("reopen all", name, watch, reopen)
        if "listing" in self.args.cases:
            self.with_log("listing after reopen", name, watch, lambda: listing(broker))

    def first_case(self, broker: _broker.Broker) -> dict[str, float]:
        result, _ = run_once(self.loadgen, ["topics", "-mode", "first", "-topics", str(self.args.topics),
                                            "-sample", str(self.args.sample), "-timeout", f"{self.args.timeout}s"],
                             broker.service_url, self.stderr("first"))
        return result

    def connections_case(self, broker: _broker.Broker) -> dict[str, float]:
        n = self.args.connections
        rss_before, sockets_before = rss_mib(broker), sockets(broker.pid)
        tool = LoadTool(self.loadgen, ["connections", "-hold", "-connections", str(n),
                                       "-topics", str(self.args.fair_topics),
                                       "-messages", str(self.args.fair_messages)],
                        broker.service_url, self.stderr("connections"))
        try:
            connected = tool.line()
            time.sleep(self.args.settle)
            rss_connected, broker_sockets = rss_mib(broker), sockets(broker.pid) - sockets_before
            tool.go_on()
            subscribed = tool.line()
            time.sleep(self.args.settle)
            rss_subscribed = rss_mib(broker)
            tool.go_on()
            cpu_before = cpu(broker)
            fair = tool.line()
            fair_cpu = cpu(broker) - cpu_before
            rss_after = rss_mib(broker)
            tool.go_on()
        finally:
            tool.finish()
        print(f"  connections: {connected['ok']:.0f} connected in {connected['seconds']:.1f} s, "
              f"{subscribed['ok']:.0f} subscribed in {subscribed['seconds']:.1f} s, "
              f"{fair['received']:.0f} of {fair['messages']:.0f} messages received", flush=True)
        return {"connected": connected["ok"], "connect_failed": connected["failed"],
                "connect_s": connected["seconds"], "sockets": broker_sockets,
                "kib_conn": (rss_connected - rss_before) * 1024 / max(connected["ok"], 1),
                "subscribed": subscribed["ok"], "subscribe_failed": subscribed["failed"],
                "subscribe_s": subscribed["seconds"],
                "kib_consumer": (rss_subscribed - rss_connected) * 1024 / max(subscribed["ok"], 1),
                "rss_before": rss_before, "rss_after": rss_after, "client_warnings": tool.warnings(),
                **{f"fair_{k}": v for k, v in fair.items()}, "fair_cpu_s": fair_cpu}


# table: [(column header, key, format)]
TABLES: dict[str, list[tuple[str, str, str]]] = {
    "start": [("healthy s", "healthy_s", ".2f"), ("idle RSS MiB", "rss_mib", ".0f")],
    "topics": [("opened", "ok", ",.0f"), ("failed", "failed", ",.0f"), ("stored", "stored", ",.0f"),
               ("seconds", "seconds", ".1f"),
               ("opens/s", "opens_s", ",.0f"), ("open p50 ms", "open_p50_ms", ".1f"),
               ("open p99 ms", "open_p99_ms", ".1f"), ("CPU s", "cpu_s", ".1f"),
               ("CPU ms/topic", "cpu_ms_topic", ".2f"), ("client warns", "client_warnings", ".0f")],
    "topics memory": [("RSS before", "rss_before", ".0f"), ("RSS open", "rss_open", ".0f"),
                      ("KiB/topic open", "kib_open", ".1f"), ("RSS closed", "rss_closed", ".0f"),
                      ("KiB/idle topic", "kib_idle", ".1f"), ("peak RSS", "rss_peak", ".0f"),
                      ("idle CPU %", "idle_cpu_pct", ".1f")],
    "restart": [("stop s", "stop_s", ".2f"), ("exit code", "exit_code", ".0f"),
                ("exec->healthy s", "exec_healthy_s", ".2f"), ("RSS MiB", "rss_mib", ".0f")],
    "first message": [("healthy", "healthy", ".0f"), ("missing", "missing", ".0f"), ("failed", "failed", ".0f"),
                      ("subscribe p50 ms", "subscribe_p50_ms", ".1f"), ("subscribe max ms", "subscribe_max_ms", ".1f"),
                      ("first p50 ms", "first_p50_ms", ".1f"), ("first max ms", "first_max_ms", ".1f")],
    "reopen all": [("healthy", "healthy", ",.0f"), ("missing", "missing", ".0f"), ("failed", "failed", ".0f"),
                   ("seconds", "seconds", ".1f"), ("topics/s", "rate", ",.0f"),
                   ("first p50 ms", "first_p50_ms", ".1f"), ("first p99 ms", "first_p99_ms", ".1f"),
                   ("CPU s", "cpu_s", ".1f"), ("RSS MiB", "rss_mib", ".0f")],
    "connections": [("connected", "connected", ",.0f"), ("failed", "connect_failed", ".0f"),
                    ("storm s", "connect_s", ".2f"), ("broker sockets", "sockets", ",.0f"),
                    ("KiB/conn", "kib_conn", ".1f"), ("consumers", "subscribed", ",.0f"),
                    ("failed", "subscribe_failed", ".0f"), ("subscribe s", "subscribe_s", ".2f"),
                    ("KiB/consumer", "kib_consumer", ".1f"), ("RSS after", "rss_after", ".0f")],
    "fairness": [("messages", "fair_messages", ",.0f"), ("received", "fair_received", ",.0f"),
                 ("seconds", "fair_seconds", ".1f"), ("CPU s", "fair_cpu_s", ".1f"), ("min", "fair_min", ".0f"),
                 ("median", "fair_p50", ".0f"), ("max", "fair_max", ".0f"), ("got none", "fair_zero", ".0f"),
                 ("topic max/min", "fair_topic_spread", ".2f")],
    "listing": [("list s 1st", "list_first_s", ".3f"), ("list s best", "list_best_s", ".3f"),
                ("listed", "listed", ",.0f"), ("list MiB", "list_mib", ".2f"),
                ("metrics s 1st", "metrics_first_s", ".3f"), ("metrics s best", "metrics_best_s", ".3f"),
                ("metrics MiB", "metrics_mib", ".2f")],
    "broker log": [("errors", "errors", ".0f"), ("warnings", "warnings", ".0f"), ("tracebacks", "tracebacks", ".0f")],
}
NO_RATIO = {"exit_code", "listed", "stored", "ok", "healthy", "connected", "subscribed", "fair_messages"}
# tables whose figures another table's columns show (same rows, other columns)
SOURCES = {"topics memory": "topics", "fairness": "connections"}


def print_table(title: str, columns: list[tuple[str, str, str]], rows: dict[str, dict | str]) -> None:
    width = max([12, *(len(name) for name in rows)])
    print(f"\n{title}")
    print(f"{'':{width}} " + " ".join(f"{header:>{max(len(header), 9)}}" for header, _, _ in columns))
    for name, figures in rows.items():
        if isinstance(figures, str):
            print(f"{name:{width}} {figures}")
        else:
            print(f"{name:{width}} " + " ".join(
                f"{format(figures[key], fmt) if key in figures else '-':>{max(len(header), 9)}}"
                for header, key, fmt in columns))
    pulsard, pulsar = rows.get("pulsard"), rows.get("pulsar")
    if isinstance(pulsard, dict) and isinstance(pulsar, dict):
        print(f"{'pulsard/pulsar':{width}} " + " ".join(
            f"{ratio(pulsard, pulsar, key):>{max(len(header), 9)}}" for header, key, _ in columns))


def ratio(pulsard: dict[str, float], pulsar: dict[str, float], key: str) -> str:
    if key in NO_RATIO or key not in pulsard or not pulsar.get(key):
        return ""
    return f"{pulsard[key] / pulsar[key]:.2f}x"


def report(scale: Scale) -> None:
    for table, rows in scale.tables.items():
        if table == "broker log":
            continue
        columns = TABLES["listing" if table.startswith("listing") else table]
        print_table(table, columns, rows)
        for derived, source in SOURCES.items():
            if source == table:
                print_table(derived, TABLES[derived], rows)
    if "broker log" in scale.tables:
        print_table("broker log (lines per case)", TABLES["broker log"], scale.tables["broker log"])
        for case, samples in scale.log_samples.items():
            for line in samples:
                print(f"  {case}: {line}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8, help="client instances opening topics")
    parser.add_argument("--parallel", type=int, default=64, help="topics in flight per client instance")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="the client's operation timeout, and its wait for a topic's message (seconds)")
    parser.add_argument("--sample", type=int, default=20, help="topics timed to their first message after restart")
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--fair-topics", type=int, default=100, help="topics the connections' consumers share")
    parser.add_argument("--fair-messages", type=int, default=4000, help="messages published to each of them")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before sampling an idle RSS")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--pulsard-only", action="store_true")
    args = parser.parse_args(argv)
    args.cases = args.cases.split(",")
    if unknown := set(args.cases) - set(CASES):
        parser.error(f"unknown cases {sorted(unknown)}; known: {','.join(CASES)}")
    if {"restart", "listing"} & set(args.cases) and "topics" not in args.cases:
        parser.error("restart and listing run on the topics the topics case opens: add it to --cases")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    print(f"$ {' '.join([sys.executable, *sys.argv])}")
    print(f"load average before: {os.getloadavg()}")
    soft, hard = raise_open_files()
    print(f"open files limit (soft, hard): {soft}, {hard}")
    if "connections" in args.cases and args.connections + 200 > soft:
        args.connections = soft - 200
        print(f"connections lowered to {args.connections}: the hard open-files limit is {hard}")
    compile_sources()
    kinds: list[tuple[str, type[_broker.Broker], float]] = [("pulsard", _broker.Broker, _broker.READY_TIMEOUT_S)]
    if args.pulsard_only:
        print("reference Pulsar: skipped (--pulsard-only)")
    elif not (SHIM.parent / "lib").is_dir() or not shutil.which("java"):
        print("reference Pulsar: not started (compat_tests/reference/lib or java missing)")
    else:
        kinds.append(("pulsar", Reference, REFERENCE_READY_S))
    with tempfile.TemporaryDirectory(prefix="pulsard-scale-") as tmp:
        scale = Scale(args, build_loadgen(Path(tmp)), Path(tmp))
        for name, kind, ready_s in kinds:
            print(f"{name}: cases {','.join(args.cases)}; load average {os.getloadavg()}", flush=True)
            scale.run_broker(name, kind, ready_s)
        connections = (f"{args.connections:,} connections on {args.fair_topics} topics; "
                       if "connections" in args.cases else "")
        print(f"\n{args.topics:,} topics, {args.clients} clients x {args.parallel} in flight; {connections}"
              f"load average after: {os.getloadavg()}")
        report(scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
