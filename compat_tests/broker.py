"""A real pulsard process on free loopback ports, for the compat tests and the benchmarks.

No pytest here: conftest.py wraps this in fixtures and benchmarks/ use it directly.
The broker is started exactly as a user would start it:

    python -m server standalone --broker-port P --web-port W --bind-address 127.0.0.1 \
        --data-dir DIR [--config FILE]

and is ready when ``GET /admin/v2/brokers/health`` answers 200 ``ok``.

PULSARD_COMMAND (environment, optional) replaces ``python -m server`` with another command taking
the same arguments, e.g. a shim around a reference Apache Pulsar standalone, to check the
tests themselves against the original; PULSARD_READY_TIMEOUT (seconds, default 15) then gives
a slower broker more time to come up.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from server.testing.broker_process import free_ports

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
READY_TIMEOUT_S = float(os.environ.get("PULSARD_READY_TIMEOUT", "15"))
# Loopback only: never route the health probe through an HTTP proxy from the environment.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
STOP_TIMEOUT_S = 10.0


class BrokerError(RuntimeError):
    """The broker process did not start, or died, or did not stop."""


def free_port() -> int:
    """A TCP port that nothing listens on right now (bound and released by the kernel)."""
    return free_ports(1)[0]


def write_config(path: Path, settings: dict[str, object]) -> Path:
    """Write a standalone.conf-style file: one ``key=value`` a line (its directory made if new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


class Broker:
    """One pulsard process; keeps its ports and data dir across kill9()/restart()."""

    def __init__(self, work_dir: Path, config: dict[str, object] | None = None,
                 mode: str = "standalone") -> None:
        self.mode = mode   # or "broker": one broker of a cluster (config names ZooKeeper, bookies)
        self.work_dir = Path(work_dir)
        self.data_dir = self.work_dir / "data"
        self.log_path = self.work_dir / "broker.log"
        self.config_path = write_config(self.work_dir / "standalone.conf", config) if config else None
        self.broker_port, self.web_port = free_ports(2)
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        #: run the command under another (``ip netns exec NAME``: in a network namespace)
        self.command_prefix: list[str] = []

    # -- addresses ---------------------------------------------------------------------------
    @property
    def service_url(self) -> str:
        return f"pulsar://{HOST}:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://{HOST}:{self.web_port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise BrokerError("broker is not running")
        return self.proc.pid

    def command(self) -> list[str]:
        program = shlex.split(os.environ.get("PULSARD_COMMAND", "")) or [sys.executable, "-m", "server"]
        cmd = [
            *self.command_prefix, *program, self.mode,
            "--broker-port", str(self.broker_port),
            "--web-port", str(self.web_port),
            "--bind-address", HOST,
            "--data-dir", str(self.data_dir),
        ]
        if self.config_path is not None:
            cmd += ["--config", str(self.config_path)]
        return cmd

    # -- lifecycle ---------------------------------------------------------------------------
    def spawn(self) -> None:
        """Start the process without waiting for readiness."""
        if self.is_running():
            raise BrokerError("broker is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== start #{self.starts}: {' '.join(self.command())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.command(), cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float:
        """Poll the health endpoint; return the seconds waited. Raise BrokerError with the log."""
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise BrokerError(f"broker exited with code {code} before it was ready\n{self.log_tail()}")
            if self.health_ok():
                return time.monotonic() - started
            time.sleep(0.02)
        self.kill9()
        raise BrokerError(f"broker not ready within {timeout:.0f}s\n{self.log_tail()}")

    def start(self, timeout: float = READY_TIMEOUT_S) -> "Broker":
        self.spawn()
        self.wait_ready(timeout)
        return self

    def wait_for_namespace(self, namespace: str, timeout: float) -> None:
        """Until the admin API lists the namespace (Apache Pulsar standalone answers its health
        check before it has created public/default)."""
        tenant = namespace.partition("/")[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with _HTTP.open(f"{self.web_url}/admin/v2/namespaces/{tenant}", timeout=2) as resp:
                    if namespace in json.loads(resp.read()):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise BrokerError(f"{namespace} not created within {timeout:.0f}s")

    def health_ok(self) -> bool:
        try:
            with _HTTP.open(f"{self.web_url}/admin/v2/brokers/health", timeout=1) as resp:
                return resp.status == 200 and resp.read().strip() == b"ok"
        except urllib.error.HTTPError as exc:
            return exc.code in (401, 403)   # authentication on: it serves, but will not say more to us
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL: no chance to flush anything, like a power cut for the process."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)
        self.proc = None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``. Return the exit code of a clean stop, else None."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        if proc.poll() is not None:
            return proc.returncode
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT_S)
            return None

    def restart(self, timeout: float = READY_TIMEOUT_S) -> "Broker":
        """Start again on the same ports and data dir (after kill9() or stop())."""
        if self.is_running():
            self.stop()
        return self.start(timeout)

    # -- diagnostics -------------------------------------------------------------------------
    def log_tail(self, lines: int = 200) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no broker log)"
        return "\n".join(text.splitlines()[-lines:])

    def rss_kib(self) -> int:
        """Resident set size of the broker process, from /proc/PID/status (VmRSS, in KiB)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise BrokerError("VmRSS not found")

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<Broker {self.service_url} web={self.web_port} {state} dir={self.work_dir}>"
