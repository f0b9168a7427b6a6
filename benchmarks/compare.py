"""pulsard next to Apache Pulsar 3.0.7 standalone, driven by the official Go client.

    python benchmarks/compare.py [--rounds 3] [--batched 300000] [--unbatched 30000]
                                 [--catchup 300000] [--fixed-seconds 5] [--pulsard-only]
                                 [--cases word,...] [--baseline DIR] [--pulsard-conf KEY=VALUE]

Builds benchmarks/loadgen (pulsar-client-go v0.19.0), starts pulsard and the reference Pulsar
(compat_tests/reference/pulsar_shim.py, journalSyncData=true) on free loopback ports, then runs
each case against one broker and then the other (the order rotating), for --rounds rounds, on fresh topics each time.
Per case it records msg/s, publish latency percentiles, broker CPU per message (utime+stime from
/proc/PID/stat over the case), the load tool's CPU per message (the client's share of the two
cores) and the broker's peak RSS; it prints medians and pulsard/Pulsar ratios. The fixed-rate
case runs at half of pulsard's max unbatched rate in round 1, on both; its per-round line adds
the p99 of its three worst 100-ms windows (one stall or a spread tail).
If the reference cannot start (no jars, no java), pulsard runs alone and the reason is printed.
The broker's sources are byte-compiled first, as an installed package is (see startup.py).
--pulsard-conf KEY=VALUE runs pulsard with that setting (journalSyncData=false: what is left of
the latency without fsyncs). --baseline DIR adds a third broker, pulsard from another source
tree (`git archive C | tar -x`), interleaved the same way, for before/after ratios on a shared,
noisy machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests import broker as _broker  # noqa: E402
from startup import compile_sources  # noqa: E402

HERE = Path(__file__).resolve().parent
SHIM = HERE.parent / "compat_tests" / "reference" / "pulsar_shim.py"
TICKS = os.sysconf("SC_CLK_TCK")
REFERENCE_READY_S = 180


class Reference(_broker.Broker):
    """The reference Pulsar standalone behind pulsard's command line; ready once public/default exists."""

    def command(self) -> list[str]:
        cmd = super().command()
        return [sys.executable, str(SHIM), *cmd[cmd.index("standalone"):]]

    def wait_ready(self, timeout: float = REFERENCE_READY_S) -> float:
        waited = super().wait_ready(timeout)
        self.wait_for_namespace("public/default", timeout)
        return waited


class Baseline(_broker.Broker):
    """pulsard from another source tree (e.g. `git archive <commit>` unpacked), for before/after."""

    def __init__(self, work_dir: Path, source: Path) -> None:
        super().__init__(work_dir)
        self.source = source

    def command(self) -> list[str]:
        cmd = super().command()
        return ["bash", "-c", 'cd "$0" && exec "$1" -m server "${@:2}"', str(self.source), sys.executable,
                *cmd[cmd.index("standalone"):]]


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (which may hold spaces)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far."""
    fields = _stat_fields(pid)
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS   # utime, stime


def minor_faults(pid: int) -> int:
    """Page faults of a process so far that needed no I/O (fresh or reclaimed memory)."""
    return int(_stat_fields(pid)[7])   # minflt


class PeakRss:
    """Samples VmRSS of a broker every 100 ms while a case runs."""

    def __init__(self, broker: _broker.Broker) -> None:
        self.broker, self.peak_kib, self._stop = broker, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, self.broker.rss_kib())
            self._stop.wait(0.1)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def build_loadgen(out: Path) -> Path:
    binary = out / "loadgen"
    subprocess.run(["go", "build", "-o", str(binary), "."], cwd=HERE / "loadgen", check=True)
    return binary


def children_cpu_seconds() -> float:
    """User+system CPU seconds of this process's waited-for children (the load tool's runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_case(loadgen: Path, broker: _broker.Broker, args: list[str],
             others: list[_broker.Broker]) -> dict[str, float]:
    """One load tool run against ``broker`` alone: the other brokers are stopped (SIGSTOP)
    meanwhile, so that work they deferred (a bookie flushes its write cache to entry logs and
    fsyncs them seconds after the load) cannot land in this broker's fsyncs, and dirty pages
    of the cases before are written out first. Seconds of CPU the others took anyway are
    reported (zero unless stopping failed)."""
    os.sync()
    others_before = sum(sum(cpu_seconds(other.pid)) for other in others)
    for other in others:
        os.kill(other.pid, signal.SIGSTOP)
    try:
        cpu_before, client_before = cpu_seconds(broker.pid), children_cpu_seconds()
        faults_before = minor_faults(broker.pid)
        with PeakRss(broker) as rss:
            proc = subprocess.run([str(loadgen), *args, "-url", broker.service_url],
                                  capture_output=True, text=True, timeout=900)
        client_cpu = children_cpu_seconds() - client_before
        user, system = (after - before for after, before in zip(cpu_seconds(broker.pid), cpu_before))
        faults = minor_faults(broker.pid) - faults_before
        others_cpu = sum(sum(cpu_seconds(other.pid)) for other in others) - others_before
    finally:
        for other in others:
            os.kill(other.pid, signal.SIGCONT)
    if proc.returncode != 0:
        raise RuntimeError(f"loadgen {' '.join(args)} failed: {proc.stderr.strip()[-2000:]}")
    line = proc.stdout.strip().splitlines()[-1]
    result = {k: float(v) for k, v in (kv.split("=") for kv in line.split())}
    result["cpu_us"] = (user + system) / result["msgs"] * 1e6
    result["sys_us"] = system / result["msgs"] * 1e6
    result["client_us"] = client_cpu / result["msgs"] * 1e6
    result["others_s"] = others_cpu
    result["faults"] = faults
    result["rss_mib"] = rss.peak_kib / 1024
    windows = [float(line.split("p99_ms=")[1].split()[0]) for line in proc.stderr.splitlines()
               if line.startswith("window_ms=")]
    if windows:   # -windows: whether a p99 is one stall or spread over the run
        result["worst_windows_ms"] = sorted(windows, reverse=True)[:3]
    return result


def cases(args, round_no: int, fixed_rate: float) -> list[tuple[str, list[str]]]:
    p = f"r{round_no}-{time.time_ns()}"
    return [
        ("batched 1 topic", ["produce", "-prefix", f"b1-{p}", "-batched", "-messages", str(args.batched)]),
        ("batched 16 topics", ["produce", "-prefix", f"b16-{p}", "-topics", "16", "-batched",
                               "-messages", str(args.batched)]),
        ("unbatched 1 topic", ["produce", "-prefix", f"u1-{p}", "-messages", str(args.unbatched)]),
        ("unbatched fixed rate", ["produce", "-prefix", f"uf-{p}", "-rate", f"{fixed_rate:.0f}", "-windows", "100ms",
                                   "-messages", str(int(fixed_rate * args.fixed_seconds))]),
        ("catch-up read", ["consume", "-prefix", f"b1-{p}", "-messages", str(min(args.catchup, args.batched))]),
    ]


def _worst_windows(result: dict) -> str:
    worst = result.get("worst_windows_ms")
    return f" worst 100-ms windows p99 {', '.join(f'{w:.1f}' for w in worst)} ms" if worst else ""


def start(broker: _broker.Broker, timeout: float) -> tuple[float, float]:
    started = time.perf_counter()
    broker.spawn()
    broker.wait_ready(timeout)
    up = time.perf_counter() - started
    time.sleep(1.0)
    return up, broker.rss_kib() / 1024


def median(results: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in results)


def report(names: list[str], results: dict[str, dict[str, list[dict]]], brokers: list[str]) -> None:
    cols = ("rate", "cpu_us", "p99_ms", "rss_mib")
    print(f"\n{'case':22} {'broker':8} {'msg/s':>9} {'cpu us/msg':>10} {'client us':>9} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'peak RSS':>9}")
    for name in names:
        for b in brokers:
            rs = results[b][name]
            if rs:
                print(f"{name:22} {b:8} {median(rs, 'rate'):9,.0f} {median(rs, 'cpu_us'):10.1f} "
                      f"{median(rs, 'client_us'):9.1f} "
                      f"{median(rs, 'p50_ms') if 'p50_ms' in rs[0] else 0:8.1f} "
                      f"{median(rs, 'p99_ms') if 'p99_ms' in rs[0] else 0:8.1f} {median(rs, 'rss_mib'):8.0f}M")
        for other in ("pulsar", "before"):
            if other in brokers and results["pulsard"].get(name) and results[other].get(name):
                a, r = results["pulsard"][name], results[other][name]
                ratios = [f"{k} {median(a, k) / median(r, k):.2f}x" for k in cols
                          if k in a[0] and median(r, k) > 0]
                print(f"{'':22} {'/' + other:8} " + ", ".join(ratios))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batched", type=int, default=300_000, help="messages per batched case")
    parser.add_argument("--unbatched", type=int, default=30_000, help="messages in the max-rate unbatched case")
    parser.add_argument("--catchup", type=int, default=300_000, help="backlog read (of the batched 1-topic case)")
    parser.add_argument("--fixed-seconds", type=float, default=5.0, help="length of the fixed-rate case")
    parser.add_argument("--fixed-rate", type=float, help="override: msg/s of the fixed-rate case")
    parser.add_argument("--pulsard-only", action="store_true")
    parser.add_argument("--baseline", type=Path, help="also run pulsard from this source tree, as 'before'")
    parser.add_argument("--pulsard-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a standalone.conf key for pulsard (repeatable): journalSyncData=false "
                             "and journalMaxGroupWaitMSec=0 give the latency floor without fsyncs")
    parser.add_argument("--cases", default="", help="comma-separated words; run only cases whose name holds one")
    args = parser.parse_args(argv)
    print(f"$ {' '.join([sys.executable, *sys.argv])}")
    print(f"load average before: {os.getloadavg()}")
    compile_sources()   # as an installed package is: start-up without CPython's compiler

    with tempfile.TemporaryDirectory(prefix="pulsard-compare-") as tmp:
        loadgen = build_loadgen(Path(tmp))
        brokers: dict[str, _broker.Broker] = {}
        try:
            pulsard = _broker.Broker(Path(tmp) / "pulsard", dict(kv.split("=", 1) for kv in args.pulsard_conf))
            up, idle = start(pulsard, _broker.READY_TIMEOUT_S)
            brokers["pulsard"] = pulsard
            print(f"pulsard: start to healthy {up:.2f} s, idle RSS {idle:.0f} MiB")
            if args.baseline:
                before = Baseline(Path(tmp) / "before", args.baseline.resolve())
                up, idle = start(before, _broker.READY_TIMEOUT_S)
                brokers["before"] = before
                print(f"before:  start to healthy {up:.2f} s, idle RSS {idle:.0f} MiB ({args.baseline})")
            if args.pulsard_only:
                print("reference Pulsar: skipped (--pulsard-only)")
            elif not (SHIM.parent / "lib").is_dir() or not shutil.which("java"):
                print("reference Pulsar: not started (compat_tests/reference/lib or java missing; "
                      "see compat_tests/reference/README.md)")
            else:
                reference = Reference(Path(tmp) / "pulsar")
                try:
                    up, idle = start(reference, REFERENCE_READY_S)
                    brokers["pulsar"] = reference
                    print(f"pulsar:  start to healthy (public/default) {up:.2f} s, idle RSS {idle:.0f} MiB")
                except _broker.BrokerError as exc:
                    reference.stop()
                    print(f"reference Pulsar: could not start: {str(exc).splitlines()[0]}")
            results: dict[str, dict[str, list[dict]]] = {b: {} for b in brokers}
            fixed_rate = args.fixed_rate
            names: list[str] = []
            for round_no in range(args.rounds):
                for name, case_args in cases(args, round_no, fixed_rate or 0):
                    if args.cases and not any(word in name for word in args.cases.split(",")):
                        continue
                    if name.endswith("fixed rate") and not fixed_rate:
                        if "unbatched 1 topic" not in results["pulsard"]:
                            raise SystemExit("the fixed-rate case needs --fixed-rate or the unbatched 1 topic case")
                        fixed_rate = 0.5 * results["pulsard"]["unbatched 1 topic"][0]["rate"]
                        name, case_args = cases(args, round_no, fixed_rate)[3]
                    if name not in names:
                        names.append(name)
                    order = list(brokers)   # rotated each round: no broker always runs after another
                    order = order[round_no % len(order):] + order[:round_no % len(order)]
                    for b in order:
                        r = run_case(loadgen, brokers[b], case_args,
                                     [other for key, other in brokers.items() if key != b])
                        results[b].setdefault(name, []).append(r)
                        print(f"round {round_no + 1} {name:22} {b:8} {r['rate']:9,.0f} msg/s "
                              f"{r['cpu_us']:6.1f} us/msg ({r['sys_us']:.1f} sys, client {r['client_us']:.1f}) "
                              f"p99 {r.get('p99_ms', 0):7.1f} ms idle brokers {r['others_s']:.1f} s "
                              f"{r['faults'] / r['msgs']:.2f} faults/msg "
                              f"rss {r['rss_mib']:.0f}M" + _worst_windows(r), flush=True)
            fixed = f"fixed rate {fixed_rate:,.0f} msg/s; " if fixed_rate else ""
            print(f"\nmedians of {args.rounds} rounds; {fixed}load average after: {os.getloadavg()}")
            report(names, results, list(brokers))
        finally:
            for broker in brokers.values():
                broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
