"""Admin resources kept as JSON documents in the metadata store, one per name under a root
(clusters at /admin/clusters/{name}, tenants at /admin/policies/{name}), as Pulsar keeps them,
and the list/get/create/update/delete REST routes every such collection has."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

from managed_ledger.errors import MetadataBadVersionError, MetadataNotFoundError
from managed_ledger.interfaces import MetadataStore
from server import web
from server.topics.topic_name import TopicName

from .errors import CONFLICT, NOT_FOUND, PRECONDITION_FAILED, no_content, read_json, require, rest_handler

#: Checks a request body and returns the document to store.
Validate = Callable[[Any], Awaitable[dict[str, Any]]]
#: Raises a RestError when the named document may not be deleted now.
CheckDelete = Callable[[str], Awaitable[None]]


async def read_doc(store: MetadataStore, path: str) -> Any | None:
    stored = await store.get(path)
    return json.loads(stored[0]) if stored is not None else None


async def create_doc(store: MetadataStore, path: str, doc: Any) -> bool:
    """Store a new document; False when one is already there."""
    try:
        await store.put(path, _encode(doc), -1)
    except MetadataBadVersionError:
        return False
    return True


def _encode(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True).encode()


class DocumentCollection:
    """Named documents under `root`; `kind` words the errors as Pulsar does ("Tenant does not exist")."""

    def __init__(self, store: MetadataStore, root: str, kind: str) -> None:
        self.store = store
        self.root = root
        self.kind = kind

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    async def names(self) -> list[str]:
        return sorted(await self.store.children(self.root))

    async def get(self, name: str) -> dict[str, Any]:
        doc = await read_doc(self.store, self.path(name)) if TopicName.is_named_entity(name) else None
        require(doc is not None, NOT_FOUND, f"{self.kind} does not exist")
        return doc

    async def exists(self, name: str) -> bool:
        return TopicName.is_named_entity(name) and await read_doc(self.store, self.path(name)) is not None

    async def create(self, name: str, doc: dict[str, Any]) -> None:
        require(TopicName.is_named_entity(name), PRECONDITION_FAILED, f"{self.kind} name is not valid")
        require(await create_doc(self.store, self.path(name), doc), CONFLICT, f"{self.kind} already exists")

    async def replace(self, name: str, doc: dict[str, Any]) -> None:
        await self.store.put(self.path(name), _encode(doc))

    async def delete(self, name: str) -> None:
        try:
            await self.store.delete(self.path(name))
        except MetadataNotFoundError:
            pass  # deleted meanwhile by another request


def collection_routes(collection: DocumentCollection, url: str, validate: Validate,
                      check_delete: CheckDelete) -> list[web.RouteDef]:
    """GET url, and GET / PUT (create) / POST (update) / DELETE url/{name}."""

    @rest_handler
    async def list_all(request: web.Request) -> web.Response:
        return web.json_response(await collection.names())

    @rest_handler
    async def get(request: web.Request) -> web.Response:
        return web.json_response(await collection.get(request.match_info["name"]))

    @rest_handler
    async def create(request: web.Request) -> web.Response:
        await collection.create(request.match_info["name"], await validate(await read_json(request, {})))
        return no_content()

    @rest_handler
    async def update(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        await collection.get(name)   # 404 before a 400 about the body, as Pulsar answers
        await collection.replace(name, await validate(await read_json(request, {})))
        return no_content()

    @rest_handler
    async def delete(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        await collection.get(name)
        await check_delete(name)
        await collection.delete(name)
        return no_content()

    item = url + "/{name}"
    return [web.get(url, list_all), web.get(item, get), web.put(item, create), web.post(item, update),
            web.delete(item, delete)]
