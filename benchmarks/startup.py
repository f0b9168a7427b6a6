"""Start-up time and memory of pulsard.

    python benchmarks/startup.py [--runs 5] [--load 50000]

- start-up: time from spawning `python -m server standalone ...` (fresh temp data dir each run)
  until GET /admin/v2/brokers/health answers 200 "ok"; median, min and max of --runs;
- restart: the same on the last run's data dir, after a clean stop;
- idle RSS: VmRSS of the broker process (/proc/PID/status) one second after it is ready;
- RSS after load: VmRSS after a batched produce+consume run of --load 100-byte messages
  (0 to skip).

The broker's sources are byte-compiled first (into their __pycache__, git-ignored), as pip does
when it installs a package: with PYTHONDONTWRITEBYTECODE set and no caches, every start would
also compile some 120 modules from source (about 0.1 s here), which measures CPython's compiler
rather than the broker's start.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from compat_tests.broker import Broker  # noqa: E402
from throughput import environment_line, format_table, run_all  # noqa: E402

IDLE_SETTLE_S = 1.0
REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "server", "managed_ledger", "bookkeeper")


def timed_start(broker: Broker) -> float:
    started = time.perf_counter()
    broker.spawn()
    broker.wait_ready()
    return time.perf_counter() - started


def compile_sources() -> None:
    for package in PACKAGES:
        if not compileall.compile_dir(REPO_ROOT / package, quiet=2):
            raise SystemExit(f"cannot byte-compile {package}/")
    unset = "" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "un"
    print(f"bytecode: {', '.join(PACKAGES)} compiled ahead (PYTHONDONTWRITEBYTECODE {unset}set)")


def measure(runs: int, load: int) -> None:
    times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pulsard-startup-") as tmp:
        for run in range(runs):
            broker = Broker(Path(tmp) / f"run-{run}")
            try:
                times.append(timed_start(broker))
                if run == 0:
                    print(f"broker: $ {shlex.join(broker.command())}")
                if run < runs - 1:
                    continue
                broker.stop()
                restart_s = timed_start(broker)
                time.sleep(IDLE_SETTLE_S)
                idle_kib = broker.rss_kib()
                results = run_all(broker.service_url, [("batched", load, True)], 100) if load else []
                loaded_kib = broker.rss_kib() if load else None
            finally:
                broker.stop()

    print(f"start-up to healthy, fresh data dir ({runs} runs): median {statistics.median(times):.3f} s"
          f"  (min {min(times):.3f}, max {max(times):.3f})")
    print(f"restart on existing data dir: {restart_s:.3f} s")
    print(f"idle RSS after start: {idle_kib / 1024:.1f} MiB")
    if loaded_kib is not None:
        print(f"RSS after {load} batched messages produced and consumed: {loaded_kib / 1024:.1f} MiB")
        print(format_table(results))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=50_000,
                        help="batched messages to run through before the second RSS reading")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    print(f"$ {shlex.join([sys.executable, *sys.argv])}")
    print(environment_line())
    compile_sources()
    measure(args.runs, args.load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
