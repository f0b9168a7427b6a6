"""Network faults between two processes on loopback, without touching either: a TCP proxy the
test owns, placed between them, and network namespaces to force a process's traffic through
such proxies when it learns its peers' addresses from elsewhere (a broker finds the bookies in
ZooKeeper).

``TcpProxy.blackhole()`` stops forwarding: connections stay open and new ones are accepted, but
no byte (nor a close) gets through, as when the network drops every packet; ``heal()`` forwards
again, what waited first. ``reset()`` closes every connection with a RST.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import subprocess
import threading
import uuid

_CLONE_NEWNET = 0x40000000
_POLL_S = 0.2


class NetworkNamespace:
    """A fresh network namespace with its own loopback (``ip netns``); delete() removes it.
    Its 127.0.0.1 is not the host's: only what a proxy forwards crosses."""

    def __init__(self) -> None:
        self.name = f"pulsard-{uuid.uuid4().hex[:8]}"
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        subprocess.run(self.command(["ip", "link", "set", "lo", "up"]), check=True)

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def socket(self) -> socket.socket:
        """A TCP socket of this namespace (a socket keeps the namespace it was made in)."""
        made: list[socket.socket | BaseException] = []

        def make() -> None:   # in a thread of its own: setns changes the calling thread only
            try:
                fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
                try:
                    if _libc().setns(fd, _CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns failed")
                finally:
                    os.close(fd)
                made.append(socket.socket())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                made.append(exc)

        thread = threading.Thread(target=make)
        thread.start()
        thread.join()
        if isinstance(made[0], BaseException):
            raise made[0]
        return made[0]

    def delete(self) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], check=False)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class TcpProxy:
    """Forwards 127.0.0.1:listen_port (in listen_ns, or the host's) to 127.0.0.1:target_port
    (in target_ns, or the host's). listen_port 0 picks a free one (see .port)."""

    def __init__(self, target_port: int, listen_port: int = 0,
                 listen_ns: NetworkNamespace | None = None,
                 target_ns: NetworkNamespace | None = None) -> None:
        self.target_port = target_port
        self._target_ns = target_ns
        self._listener = listen_ns.socket() if listen_ns else socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", listen_port))
        self._listener.listen(64)
        self._listener.settimeout(_POLL_S)
        self.port = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._stopped = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def blackhole(self) -> None:
        self._flowing.clear()

    def heal(self) -> None:
        self._flowing.set()

    def reset(self) -> None:
        """Close every connection with a RST (new ones are accepted still)."""
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            _abort(sock)

    def stop(self) -> None:
        self._stopped.set()
        self._flowing.set()
        self._listener.close()
        self.reset()

    # ---- threads -----------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                downstream, _ = self._listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return   # closed by stop()
            self._track(downstream)
            threading.Thread(target=self._connect, args=(downstream,), daemon=True).start()

    def _connect(self, downstream: socket.socket) -> None:
        if not self._wait_flowing():
            return
        upstream = self._target_ns.socket() if self._target_ns else socket.socket()
        self._track(upstream)
        try:
            upstream.connect(("127.0.0.1", self.target_port))
        except OSError:
            _abort(downstream)
            _abort(upstream)
            return
        for source, sink in ((downstream, upstream), (upstream, downstream)):
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        """Copy source to sink, each chunk (and the end) only while flowing."""
        source.settimeout(_POLL_S)
        while not self._stopped.is_set():
            try:
                data = source.recv(65536)
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                data = b""
            if not self._wait_flowing():
                return
            try:
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
            except OSError:
                _abort(source)
                return

    def _wait_flowing(self) -> bool:
        while not self._flowing.wait(_POLL_S):
            if self._stopped.is_set():
                return False
        return not self._stopped.is_set()

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)


def _abort(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()
