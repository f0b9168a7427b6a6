"""One binary-protocol connection's identity: authenticated at CONNECT, re-checked every
authenticationRefreshCheckSeconds while the connection lives.

As Pulsar: once the credentials expire, a client that announced supports_auth_refresh gets
AUTH_CHALLENGE ("PulsarAuthRefresh") and must answer AUTH_RESPONSE with valid credentials for
the same role before the next check; any other client, or a wrong answer, loses the connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from protocol import commands
from protocol import pulsar_api_pb2 as pb
from server.errors import AuthenticationError

from .authentication import Authentication, Identity

log = logging.getLogger(__name__)

REFRESH_AUTH_DATA = b"PulsarAuthRefresh"
#: CommandError.message of every refusal of credentials (Pulsar's words).
REFUSED = "Failed to authenticate"


class ClientAuth:
    def __init__(self, authentication: Authentication, refresh_seconds: float, peercert: dict | None,
                 write: Callable[[pb.BaseCommand], None], close: Callable[[], None], remote: str) -> None:
        self._authentication = authentication
        self._refresh_seconds = refresh_seconds
        self._peercert = peercert
        self._write = write
        self._close = close
        self._remote = remote
        self._method = ""
        self._refreshable = False
        self._challenged = False
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None
        self.identity: Identity | None = None
        #: True until CONNECT's credentials are accepted (a plain attribute: read for every frame).
        self.pending = authentication.enabled

    @property
    def required(self) -> bool:
        return self._authentication.enabled

    @property
    def role(self) -> str | None:
        return self.identity.role if self.identity is not None else None

    def begin(self, connect: pb.CommandConnect, connected: pb.BaseCommand) -> None:
        """Authenticate CONNECT, then write `connected`, or ERROR(AuthenticationError) and close:
        CONNECTED must be the first answer a client gets otherwise."""
        self._run(self._connect(connect, connected))

    async def _connect(self, connect: pb.CommandConnect, connected: pb.BaseCommand) -> None:
        """As Pulsar 3.0: a refusal is ERROR(request_id -1, AuthenticationError, "Failed to
        authenticate") whatever the reason, which only the broker's log tells (one line, from
        Authentication), so a client learns nothing about which users or keys exist."""
        try:
            await self.connect(connect)
        except Exception as exc:   # noqa: BLE001 - whatever went wrong, this client is not in
            if not isinstance(exc, AuthenticationError):
                log.error("authentication of %s failed", self._remote, exc_info=exc)
            self._refuse()
            return
        self._write(connected)

    def respond(self, response: pb.CommandAuthResponse) -> None:
        self._run(self.refresh(response))

    def _run(self, work) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._task = asyncio.get_running_loop().create_task(work)

    async def connect(self, connect: pb.CommandConnect) -> None:
        """Authenticate CONNECT's credentials; AuthenticationError when they are not valid."""
        self._method = connect.auth_method_name
        self._refreshable = connect.feature_flags.supports_auth_refresh
        self.identity = await self._authentication.authenticate(self._method, connect.auth_data, self._peercert)
        self.pending = False
        log.debug("%s authenticated as %s (%s)", self._remote, self.identity.role, self._method)
        if self.identity.expires_at is not None:
            self._schedule()

    def _schedule(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._refresh_seconds, self._check)

    def _check(self) -> None:
        identity = self.identity
        if identity is None or identity.expires_at is None:
            return
        if self._challenged:
            log.info("closing connection from %s (%s): no fresh credentials in time", self._remote, identity.role)
            self._close()
            return
        if identity.expires_at <= time.time():
            if not self._refreshable:
                log.info("closing connection from %s (%s): credentials expired", self._remote, identity.role)
                self._close()
                return
            self._challenged = True
            self._write(commands.auth_challenge("pulsard", self._method, REFRESH_AUTH_DATA, pb.v21))
        self._schedule()

    async def refresh(self, response: pb.CommandAuthResponse) -> None:
        """AUTH_RESPONSE: the connection keeps its role with the new credentials. As Pulsar 3.0:
        credentials refused get the same ERROR as a refused CONNECT, then the close; valid ones
        of another role just the close."""
        try:
            identity = await self._authentication.authenticate(
                response.response.auth_method_name, response.response.auth_data, self._peercert)
        except AuthenticationError:
            self._refuse()
            return
        if self.identity is not None and identity.role != self.identity.role:
            log.info("closing connection from %s: role changed from %s to %s on refresh", self._remote,
                     self.identity.role, identity.role)
            self._close()
            return
        self.identity, self._challenged = identity, False

    def _refuse(self) -> None:
        self._write(commands.error(-1, pb.AuthenticationError, REFUSED))
        self._close()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._task is not None:
            self._task.cancel()
