"""What the leader's load manager asks of the cluster, asked as Pulsar's leader asks it:
through the admin API (its 307s lead to the bundle's owner, which does the work)."""

from __future__ import annotations

from aiohttp import ClientSession   # as a client only

from server.admin.errors import RestError

from .bundles import NamespaceBundles


class AdminActions:
    def __init__(self, http_url: str, bundles: NamespaceBundles) -> None:
        self._http_url = http_url
        self._bundles = bundles

    async def split(self, bundle: str, unload: bool) -> None:
        await self._put(bundle, "split", {"unload": str(unload).lower()})

    async def unload(self, bundle: str) -> None:
        await self._put(bundle, "unload", {})

    async def bundle_count(self, namespace: str) -> int:
        return len(await self._bundles.load(namespace))

    async def _put(self, bundle: str, action: str, query: dict[str, str]) -> None:
        namespace, _, bundle_range = bundle.rpartition("/")
        async with ClientSession() as session:
            async with session.put(f"{self._http_url}/admin/v2/namespaces/{namespace}/{bundle_range}/{action}",
                                   params=query) as response:   # 307s followed
                if response.status >= 400:
                    raise RestError(response.status, await response.text())
