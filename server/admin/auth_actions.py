"""The actions a role may be granted on a namespace or topic, as Pulsar's AuthAction names them."""

from __future__ import annotations

from typing import Any

from .errors import BAD_REQUEST, RestError

AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")


def auth_actions(body: Any) -> list[str]:
    if not isinstance(body, list) or not all(action in AUTH_ACTIONS for action in body):
        raise RestError(BAD_REQUEST, f"Actions must be a list of {', '.join(AUTH_ACTIONS)}")
    return sorted(set(body))
