"""Counts of authentication outcomes and authorization refusals, for /metrics, and the log line
of every refusal (role and resource), so an operator sees who tried what."""

from __future__ import annotations

import logging
from collections import Counter

log = logging.getLogger(__name__)


class SecurityAudit:
    def __init__(self) -> None:
        self.authentications: Counter[tuple[str, str]] = Counter()   # (method, success|failure)
        self.refusals: Counter[str] = Counter()                        # operation

    def authenticated(self, method: str, ok: bool) -> None:
        self.authentications[(method, "success" if ok else "failure")] += 1

    def refused(self, role: str | None, operation: str, resource: str) -> None:
        self.refusals[operation] += 1
        log.warning("unauthorized: role %r may not %s on %s", role, operation, resource)

    def metric_lines(self, cluster: str) -> list[str]:
        lines = []
        for outcome in ("success", "failure"):
            name = f"pulsar_authentication_{'success' if outcome == 'success' else 'failures'}_total"
            lines += [f"# HELP {name} Authentications ({outcome}) by method", f"# TYPE {name} counter"]
            lines += [f'{name}{{auth_method="{method}",cluster="{cluster}"}} {n}'
                      for (method, result), n in sorted(self.authentications.items()) if result == outcome]
        name = "pulsard_authorization_failures_total"
        lines += [f"# HELP {name} Requests refused for lack of permission, by operation", f"# TYPE {name} counter"]
        lines += [f'{name}{{operation="{op}",cluster="{cluster}"}} {n}' for op, n in sorted(self.refusals.items())]
        return lines
