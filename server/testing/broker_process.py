"""One real pulsard process on free loopback ports with a data directory of its own, for
application tests: the broker they run in production, not a mock, started in about a second."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import server

HOST = "127.0.0.1"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # loopback: never a proxy


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on right now, all different: bound together, then released (one
    bound and released after another could be handed out twice)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in socks:
            sock.bind((HOST, 0))
        return [sock.getsockname()[1] for sock in socks]


class PulsarBroker:
    """A pulsard process: start() waits until it serves; stop() ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, work_dir: Path, settings: dict[str, object] | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.data_dir = self.work_dir / "data"
        self.log_path = self.work_dir / "pulsard.log"
        self.settings = dict(settings or {})
        self.broker_port, self.web_port = free_ports(2)
        self._proc: subprocess.Popen | None = None

    @property
    def service_url(self) -> str:
        return f"pulsar://{HOST}:{self.broker_port}"

    @property
    def web_url(self) -> str:
        """The admin REST API, HTTP lookup and /metrics."""
        return f"http://{HOST}:{self.web_port}"

    admin_url = web_url

    def start(self) -> PulsarBroker:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "server", "standalone", "--bind-address", HOST,
                   "--broker-port", str(self.broker_port), "--web-port", str(self.web_port),
                   "--data-dir", str(self.data_dir), "--log-level", "WARNING"]
        if self.settings:
            conf = self.work_dir / "standalone.conf"
            conf.write_text("".join(f"{key}={value}\n" for key, value in self.settings.items()))
            command += ["--config", str(conf)]
        # The same pulsard as the one imported here, wherever it is installed.
        package_root = str(Path(server.__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          env=env)
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                raise RuntimeError(f"pulsard exited before it was ready:\n{self.log_tail()}")
            try:
                with _HTTP.open(f"{self.web_url}/admin/v2/brokers/health", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"pulsard not ready within {READY_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def __enter__(self) -> PulsarBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<PulsarBroker {self.service_url} {self.web_url} data={self.data_dir}>"
