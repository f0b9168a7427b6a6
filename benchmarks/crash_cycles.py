"""What the crash harnesses (crash_harness.py, txn_crash_harness.py) share: the broker killed
with SIGKILL at seeded random instants and restarted, a line per cycle; and the command line
around a run (the seed, a temporary work directory, the totals, exit 1 on the first violation).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Callable

from compat_tests.broker import Broker

Outage = tuple[float, float]   # (killed, ready again), time.monotonic()


def kill_cycles(broker: Broker, cycles: int, rng: random.Random, status: Callable[[], str],
                log: Callable[[str], None] = print) -> list[Outage]:
    """Let the broker run 0.2-1.5 s, kill it, restart it, let it run 0.5-1.0 s again, and log
    `status()`; `cycles` times. Returns the outages."""
    outages: list[Outage] = []
    for cycle in range(1, cycles + 1):
        time.sleep(rng.uniform(0.2, 1.5))
        broker.kill9()
        killed = time.monotonic()
        broker.restart()
        outages.append((killed, time.monotonic()))
        time.sleep(rng.uniform(0.5, 1.0))
        log(f"cycle {cycle:3d}: killed and restarted; {status()}")
    return outages


def main(doc: str, prefix: str, add_arguments: Callable[[argparse.ArgumentParser], None],
         run: Callable[[argparse.Namespace, Path], dict[str, object]]) -> int:
    """Parse --seed and the harness's own arguments, run it in a temporary directory, print
    the seed, then "passed: " and its figures, or "FAILED: " and the violation (exit 1)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    print(f"seed {args.seed}", flush=True)
    with tempfile.TemporaryDirectory(prefix=prefix) as work_dir:
        try:
            figures = run(args, Path(work_dir))
        except AssertionError as exc:
            print(f"FAILED: {exc}")
            return 1
    print("passed: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items()))
    return 0
