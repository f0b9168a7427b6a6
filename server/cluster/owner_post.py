"""A broker's request to whichever broker serves a topic: POSTed to this broker's own web port,
whose answer is the work done or a 307 to the owner (followed here). Topic-policy events,
transaction ends and transaction buffer snapshots reach their writers this way."""

from __future__ import annotations

from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout   # as a client only: the web port is server.web's

from server.errors import ServiceNotReady

#: How long one forwarded request may take before it counts as failed (callers retry).
TIMEOUT_S = 30


async def post_to_owner(url: str, body: dict[str, Any], failure: str) -> None:
    """POST `body`; ServiceNotReady("{failure}: why") when it is not done."""
    try:
        async with ClientSession(timeout=ClientTimeout(total=TIMEOUT_S)) as session:
            async with session.post(url, json=body) as response:   # 307s are followed
                if response.status >= 400:
                    raise ServiceNotReady(f"{failure}: {response.status} {await response.text()}")
    except ClientError as exc:
        raise ServiceNotReady(f"{failure}: {exc}") from exc
