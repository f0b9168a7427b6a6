"""What a role may do (authorizationEnabled), after Pulsar's PulsarAuthorizationProvider.

- superUserRoles may do everything; a tenant's adminRoles everything inside the tenant
  (its namespaces, topics, and producing and consuming on them).
- Other roles need a permission (produce, consume, functions, ...) granted on the namespace
  (Policies.auth_policies.namespace_auth) or on the topic (destination_auth, keyed by the
  partitioned topic's name); a lookup needs produce or consume.
- A subscription listed in subscription_auth_roles may be consumed only by the roles listed.

Policies are read at each check, so a revoked permission refuses the role's next request.
Refusals raise AuthorizationError (403 on the web port), are logged and counted (audit.py).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from server.errors import AuthorizationError
from server.topics.topic_name import TopicName

from .audit import SecurityAudit
from .config import SecurityConfig

PRODUCE, CONSUME, LOOKUP = "produce", "consume", "lookup"
TENANT_ADMIN_REQUIRED = "Don't have permission to administrate resources on this tenant"
SUPER_USER_REQUIRED = "This operation requires super-user access"


class PolicyReader(Protocol):
    async def shared(self, namespace: str) -> dict[str, Any] | None: ...


class DocumentStore(Protocol):
    async def get(self, path: str) -> tuple[bytes, int] | None: ...


class Authorization:
    def __init__(self, config: SecurityConfig, policies: PolicyReader, store: DocumentStore, tenants_root: str,
                 audit: SecurityAudit) -> None:
        self.enabled = config.authorization_enabled
        self._super_users = config.super_users
        self._policies = policies
        self._store = store
        self._tenants_root = tenants_root
        self.audit = audit

    def is_super_user(self, role: str | None) -> bool:
        return role is not None and role in self._super_users

    async def is_tenant_admin(self, role: str | None, tenant: str) -> bool:
        if role is None:
            return False
        if self.is_super_user(role):
            return True
        stored = await self._store.get(f"{self._tenants_root}/{tenant}")
        info = json.loads(stored[0]) if stored is not None else {}
        return role in (info.get("adminRoles") or [])

    async def may(self, role: str | None, topic: TopicName, action: str, subscription: str | None = None) -> bool:
        if not self.enabled or await self.is_tenant_admin(role, topic.tenant):
            return True
        if role is None:
            return False
        auth = (await self._policies.shared(topic.namespace) or {}).get("auth_policies") or {}
        granted = set((auth.get("namespace_auth") or {}).get(role, ()))
        topic_grants = (auth.get("destination_auth") or {}).get(str(topic.partitioned_parent)) or {}
        granted.update(topic_grants.get(role, ()))
        if action == LOOKUP:
            return bool(granted & {PRODUCE, CONSUME})
        if action == CONSUME and subscription is not None:
            allowed = (auth.get("subscription_auth_roles") or {}).get(subscription)
            if allowed and role not in allowed:
                return False
        return action in granted

    async def may_in_namespace(self, role: str | None, namespace: str, action: str) -> bool:
        """Namespace-wide operations (listing its topics needs consume there)."""
        if not self.enabled or await self.is_tenant_admin(role, namespace.partition("/")[0]):
            return True
        auth = (await self._policies.shared(namespace) or {}).get("auth_policies") or {}
        return role is not None and action in (auth.get("namespace_auth") or {}).get(role, ())

    async def check(self, role: str | None, topic: TopicName, action: str, subscription: str | None = None,
                    message: str = "") -> None:
        """AuthorizationError (logged, counted) unless the role may do `action` on the topic."""
        if not await self.may(role, topic, action, subscription):
            resource = f"{topic} subscription {subscription}" if subscription else str(topic)
            self.audit.refused(role, action, resource)
            raise AuthorizationError(message or f"Client is not authorized to {action.capitalize()}")

    async def check_namespace(self, role: str | None, namespace: str, action: str, message: str) -> None:
        if not await self.may_in_namespace(role, namespace, action):
            self.audit.refused(role, action, namespace)
            raise AuthorizationError(message)
