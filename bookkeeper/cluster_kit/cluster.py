"""A local Apache ZooKeeper + Apache BookKeeper cluster of real Java processes, on loopback.

``LocalCluster(bookies=3).start()`` fetches the jars (jars.py), starts one ZooKeeper server,
formats BookKeeper's metadata with BookKeeper's own ``BookieShell metaformat``, starts the
bookies (DbLedgerStorage, small caches, journal fsync on) and waits until every one is
registered under ``/ledgers/available``. Ports are free loopback ports picked at start; every
file lives under one temporary root that ``stop()`` removes, after killing every process it
started. Used by the cluster tests (a session fixture) and by ``python -m
bookkeeper.cluster_kit`` to give users a cluster to point pulsard at.

The calls block (process start, polling); async callers run them in a thread.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient

from .jars import Progress, ToolchainError, ensure_jars, java_executable

logger = logging.getLogger(__name__)

JVM_OPTIONS = ["-Xms64m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-XX:+UseSerialGC",
               "-XX:TieredStopAtLevel=1", "-Dzookeeper.admin.enableServer=false"]
#: ZooKeeper ticks of 500 ms allow sessions of 1..10 s (2..20 ticks), so tests see a dead
#: bookie's registration go (and a session expire) within seconds.
ZK_TICK_MS = 500
BOOKIE_ZK_TIMEOUT_MS = 4000
#: How long AutoRecovery leaves an open ledger's last segment naming a lost bookie to its
#: writer (which replaces the bookie at its next add) before fencing and re-replicating it
#: (BookKeeper's default is 30 s).
OPEN_LEDGER_GRACE_MS = 5000

_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <Console name="out" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{HH:mm:ss.SSS} %-5level %c{1} - %msg%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Root level="${sys:pulsard.log.level:-INFO}"><AppenderRef ref="out"/></Root>
  </Loggers>
</Configuration>
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class JavaProcess:
    name: str
    process: subprocess.Popen
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, kill: bool = False, timeout: float = 10.0) -> None:
        """Signal the process group (a supervised process is a shell loop and its JVM)."""
        if not self.alive():
            return
        os.killpg(self.process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@dataclass
class Bookie:
    index: int
    port: int
    directory: Path
    conf_path: Path
    java: JavaProcess | None = None

    @property
    def bookie_id(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class LocalCluster:
    """ZooKeeper plus ``bookies`` bookies under ``root`` (a new temporary folder if None)."""

    bookies: int = 3
    root: Path | None = None
    #: Run BookKeeper's AutoRecovery (auditor + replication worker) beside the bookies.
    auto_recovery: bool = True
    progress: Progress | None = None
    zk_port: int = 0
    bookie_list: list[Bookie] = field(default_factory=list)
    _zk: JavaProcess | None = None
    _auto_recovery: JavaProcess | None = None
    _registrations: dict[str, int] = field(default_factory=dict)   # when ZooKeeper stopped
    _own_root: bool = False
    _lib: Path | None = None

    # ---- addresses -------------------------------------------------------------------------

    @property
    def zk_address(self) -> str:
        return f"127.0.0.1:{self.zk_port}"

    @property
    def metadata_service_uri(self) -> str:
        """bookkeeperMetadataServiceUri for pulsard (and BookKeeper's own tools)."""
        return f"zk+hierarchical://{self.zk_address}/ledgers"

    @property
    def metadata_store_url(self) -> str:
        """metadataStoreUrl for pulsard."""
        return f"zk:{self.zk_address}"

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        began = time.monotonic()
        self._lib = ensure_jars(self._say)
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="pulsard-cluster-"))
            self._own_root = True
        atexit.register(self.stop)
        try:
            (self.root / "conf").mkdir(parents=True, exist_ok=True)
            (self.root / "logs").mkdir(exist_ok=True)
            (self.root / "tmp").mkdir(exist_ok=True)
            (self.root / "conf" / "log4j2.xml").write_text(_LOG4J2)
            self._start_zookeeper()
            self._format()
            for index in range(self.bookies):
                self.bookie_list.append(self._new_bookie(index))
            for bookie in self.bookie_list:
                self._launch_bookie(bookie)
            self.wait_registered([b.bookie_id for b in self.bookie_list])
            if self.auto_recovery:
                self._start_auto_recovery()
        except BaseException:
            self.stop()
            raise
        self._say(f"cluster up in {time.monotonic() - began:.1f} s: ZooKeeper {self.zk_address}, "
                  f"bookies {', '.join(b.bookie_id for b in self.bookie_list)}")
        return self

    def stop(self) -> None:
        """Kill every process this cluster started and remove its temporary root."""
        if self._zk is not None and self._zk.alive():
            self._say("stopping the cluster")
        if self._auto_recovery is not None:
            self._auto_recovery.stop(kill=True)
        for bookie in self.bookie_list:
            if bookie.java is not None:
                bookie.java.stop(kill=True)
        if self._zk is not None:
            self._zk.stop(kill=True)
        if self._own_root and self.root is not None and self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- ZooKeeper -----------------------------------------------------------------------

    def stop_zookeeper(self, kill: bool = False) -> None:
        """SIGTERM (or kill -9) ZooKeeper; its data dir stays, for restart_zookeeper()."""
        if self._zk is not None and self._zk.alive():
            self._registrations = self._registration_owners()
            self._zk.stop(kill=kill)
            self._say(f"stopped ZooKeeper {self.zk_address}")

    def restart_zookeeper(self) -> None:
        """Start ZooKeeper again on the same port and data dir. It gives each session it knew
        its whole timeout again: returns once each bookie's session outlived that (its client
        came back in time), or expired and the bookie registered anew (a few seconds later)."""
        if self._zk is not None and self._zk.alive():
            return
        self._start_zookeeper()
        kept_after = time.monotonic() + (BOOKIE_ZK_TIMEOUT_MS + 2 * ZK_TICK_MS) / 1000
        deadline = time.monotonic() + 90
        while True:
            owners = self._registration_owners()
            waiting = [bookie_id for bookie_id, before in self._registrations.items()
                       if owners.get(bookie_id) is None
                       or (owners[bookie_id] == before and time.monotonic() < kept_after)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"bookies {waiting} did not register again in 90 s")
            time.sleep(0.2)

    # ---- bookies -------------------------------------------------------------------------

    def kill_bookie(self, index: int) -> None:
        """kill -9, as a crash."""
        bookie = self.bookie_list[index]
        if bookie.java is not None:
            bookie.java.stop(kill=True)
            self._say(f"killed bookie {bookie.bookie_id} (pid {bookie.java.pid})")

    def stop_bookie(self, index: int) -> None:
        """SIGTERM: the bookie shuts down as it does when told to (journal flushed)."""
        bookie = self.bookie_list[index]
        if bookie.java is not None:
            bookie.java.stop(timeout=30)
            self._say(f"stopped bookie {bookie.bookie_id}")

    def pause_bookie(self, index: int) -> None:
        """SIGSTOP: the bookie hangs (connections stay open, nothing is answered). Resume it
        within its zkTimeout, or its session expires."""
        bookie = self.bookie_list[index]
        if bookie.java is not None and bookie.java.alive():
            bookie.java.process.send_signal(signal.SIGSTOP)

    def resume_bookie(self, index: int) -> None:
        bookie = self.bookie_list[index]
        if bookie.java is not None and bookie.java.alive():
            bookie.java.process.send_signal(signal.SIGCONT)

    def restart_bookie(self, index: int) -> None:
        """Start a stopped (or killed) bookie again and wait until it registered anew: a
        killed bookie's registration outlives it until its ZooKeeper session expires, and
        the new process waits for that before it serves."""
        bookie = self.bookie_list[index]
        if bookie.java is not None and bookie.java.alive():
            return
        stale = self._registration_owner(bookie.bookie_id)
        self._launch_bookie(bookie)
        deadline = time.monotonic() + 90
        while True:
            owner = self._registration_owner(bookie.bookie_id)
            if owner is not None and owner != stale and _port_open(bookie.port):
                return
            if bookie.java is not None and not bookie.java.alive():
                raise ToolchainError(f"bookie {bookie.bookie_id} exited:\n{bookie.java.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"bookie {bookie.bookie_id} did not register again in 90 s")
            time.sleep(0.2)

    def _registration_owner(self, bookie_id: str) -> int | None:
        """The session owning the bookie's /ledgers/available node, None when absent."""
        return self._registration_owners([bookie_id]).get(bookie_id)

    def _registration_owners(self, bookie_ids: list[str] | None = None) -> dict[str, int]:
        """bookie id -> the session owning its registration, for those registered (of the
        running bookies, by default)."""
        if bookie_ids is None:
            bookie_ids = [b.bookie_id for b in self.bookie_list if b.java is not None and b.java.alive()]
        zk = self._zk_client()
        try:
            stats = {bookie_id: zk.exists(f"/ledgers/available/{bookie_id}") for bookie_id in bookie_ids}
            return {bookie_id: stat.ephemeralOwner for bookie_id, stat in stats.items() if stat is not None}
        finally:
            zk.stop()
            zk.close()

    def add_bookie(self) -> Bookie:
        bookie = self._new_bookie(len(self.bookie_list))
        self.bookie_list.append(bookie)
        self._launch_bookie(bookie)
        self.wait_registered([bookie.bookie_id])
        return bookie

    def available_bookies(self) -> list[str]:
        zk = self._zk_client()
        try:
            return sorted(c for c in zk.get_children("/ledgers/available") if c != "readonly")
        finally:
            zk.stop()
            zk.close()

    def wait_registered(self, bookie_ids: list[str], timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        zk = self._zk_client()
        try:
            while True:
                available = set(zk.get_children("/ledgers/available"))
                ports = {b.bookie_id: b.port for b in self.bookie_list}
                # a killed bookie's registration outlives it until its session expires: the
                # restarted one is up once its port is open as well
                missing = [b for b in bookie_ids
                           if b not in available or (b in ports and not _port_open(ports[b]))]
                if not missing:
                    return
                for bookie in self.bookie_list:
                    if bookie.bookie_id in missing and bookie.java and not bookie.java.alive():
                        raise ToolchainError(f"bookie {bookie.bookie_id} exited:\n"
                                             f"{bookie.java.log_tail()}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"bookies {missing} did not register in {timeout} s")
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()

    # ---- BookKeeper's own tools ----------------------------------------------------------

    def bookie_shell(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run ``BookieShell -conf <client conf> args...``; output (logs included) in stdout.
        BookieShell's exit code is not to be trusted (it is 0 after some failures)."""
        return subprocess.run(
            self._java_command("org.apache.bookkeeper.bookie.BookieShell",
                               ["-conf", str(self.root / "conf" / "client.conf"), *args]),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)

    # ---- internals -----------------------------------------------------------------------

    def _say(self, message: str) -> None:
        (self.progress or logger.info)(message)

    def _java_command(self, main: str, args: list[str]) -> list[str]:
        assert self.root is not None and self._lib is not None
        return [java_executable(), *JVM_OPTIONS,
                f"-Dlog4j.configurationFile={self.root / 'conf' / 'log4j2.xml'}",
                # what a JVM unpacks (the bookie's native checksum library) stays inside the
                # cluster's directory even when the JVM is killed, never in /tmp
                f"-Djava.io.tmpdir={self.root / 'tmp'}",
                "-cp", f"{self._lib}/*", main, *args]

    def _spawn(self, name: str, main: str, args: list[str], supervised: bool = False) -> JavaProcess:
        """A JVM in a process group of its own; supervised, started again whenever it exits."""
        assert self.root is not None
        log_path = self.root / "logs" / f"{name}.log"
        command = self._java_command(main, args)
        if supervised:
            command = ["sh", "-c", 'while :; do "$@"; sleep 1; done', "sh", *command]
        log = open(log_path, "ab")
        try:
            process = subprocess.Popen(command, stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        finally:
            log.close()
        return JavaProcess(name, process, log_path)

    def _start_zookeeper(self) -> None:
        assert self.root is not None
        self.zk_port = self.zk_port or free_port()
        data = self.root / "zk"
        data.mkdir(exist_ok=True)
        conf = self.root / "conf" / "zoo.cfg"
        conf.write_text(f"tickTime={ZK_TICK_MS}\ndataDir={data}\nclientPort={self.zk_port}\n"
                        f"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
                        f"4lw.commands.whitelist=ruok,srvr\nmaxClientCnxns=0\n")
        self._say(f"starting ZooKeeper on {self.zk_address}")
        self._zk = self._spawn("zookeeper", "org.apache.zookeeper.server.ZooKeeperServerMain",
                               [str(conf)])
        deadline = time.monotonic() + 60
        while not _port_open(self.zk_port):
            if not self._zk.alive():
                raise ToolchainError(f"ZooKeeper exited:\n{self._zk.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError("ZooKeeper did not open its port in 60 s")
            time.sleep(0.1)

    def _format(self) -> None:
        assert self.root is not None
        (self.root / "conf" / "client.conf").write_text(
            f"metadataServiceUri={self.metadata_service_uri}\nzkTimeout=10000\n")
        self._say("formatting BookKeeper metadata (BookieShell metaformat)")
        result = self.bookie_shell("metaformat", "-nonInteractive", "-force")
        if "Successfully formatted" not in result.stdout and result.returncode != 0:
            raise ToolchainError(f"metaformat failed:\n{result.stdout[-3000:]}")

    def _new_bookie(self, index: int) -> Bookie:
        assert self.root is not None
        port = free_port()
        directory = self.root / f"bookie{index}"
        (directory / "journal").mkdir(parents=True, exist_ok=True)
        (directory / "ledgers").mkdir(exist_ok=True)
        conf_path = self.root / "conf" / f"bookie{index}.conf"
        settings = {
            "bookiePort": port, "advertisedAddress": "127.0.0.1", "listeningInterface": "lo",
            "allowLoopback": "true", "useHostNameAsBookieID": "false",
            "journalDirectories": directory / "journal", "ledgerDirectories": directory / "ledgers",
            "metadataServiceUri": self.metadata_service_uri, "zkTimeout": BOOKIE_ZK_TIMEOUT_MS,
            "httpServerEnabled": "false", "autoRecoveryDaemonEnabled": "false",
            "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
            "dbStorage_writeCacheMaxSizeMb": 16, "dbStorage_readAheadCacheMaxSizeMb": 16,
            "dbStorage_rocksDB_blockCacheSize": 8388608, "dbStorage_rocksDB_writeBufferSizeMB": 4,
            "journalPreAllocSizeMB": 4, "numAddWorkerThreads": 1, "numReadWorkerThreads": 1,
            "serverNumIOThreads": 2, "diskUsageThreshold": 0.99, "diskUsageWarnThreshold": 0.98,
            "journalMaxGroupWaitMSec": 1,
        }
        conf_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return Bookie(index, port, directory, conf_path)

    def _start_auto_recovery(self) -> None:
        """One AutoRecovery process (auditor election and a replication worker), apart from
        the bookies as BookKeeper's docs describe: run inside a bookie, its ZooKeeper session
        expiring (a ZooKeeper restart can do that) shuts the whole bookie down. It exits on
        such an expiry by design, so it is supervised. BookKeeper's defaults, but for the
        grace period: tests wait seconds, not minutes, for an idle open ledger on a lost bookie
        to be fenced and re-replicated."""
        assert self.root is not None
        conf = self.root / "conf" / "autorecovery.conf"
        settings = {
            "metadataServiceUri": self.metadata_service_uri, "zkTimeout": BOOKIE_ZK_TIMEOUT_MS,
            "advertisedAddress": "127.0.0.1", "bookiePort": free_port(),   # its id in the election
            "useHostNameAsBookieID": "false", "allowLoopback": "true",
            "lostBookieRecoveryDelay": 0, "openLedgerRereplicationGracePeriod": OPEN_LEDGER_GRACE_MS,
            "rwRereplicateBackoffMs": 1000,
        }
        conf.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        self._say("starting AutoRecovery (auditor and replication worker)")
        self._auto_recovery = self._spawn(
            "autorecovery", "org.apache.bookkeeper.replication.AutoRecoveryMain",
            ["--conf", str(conf)], supervised=True)

    def _launch_bookie(self, bookie: Bookie) -> None:
        self._say(f"starting bookie {bookie.bookie_id}")
        bookie.java = self._spawn(f"bookie{bookie.index}", "org.apache.bookkeeper.server.Main",
                                  ["--conf", str(bookie.conf_path)])

    def _zk_client(self) -> KazooClient:
        zk = KazooClient(hosts=self.zk_address, timeout=10.0)
        zk.start(timeout=15)
        return zk
