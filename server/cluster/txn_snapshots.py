"""Transaction buffer snapshots in a cluster go to the broker serving the namespace's
`__transaction_buffer_snapshot`, the log's only writer, as topic-policy events reach the writer
of `__change_events` (policy_events.py): a post to SNAPSHOTS_PATH on this broker's own web port,
whose answer is a 307 towards the broker serving the snapshot topic (placing its bundle first
when nobody serves it). That broker appends the record and shows it to read-only views before
answering 204; the poster reads it back from there.

A pulsard route, not Pulsar's (its brokers write the system topic through a producer): it needs
a super-user where authorization is on, like every broker-to-broker call."""

from __future__ import annotations

import base64

from server import web
from server.admin.brokers import redirect_url
from server.admin.errors import BAD_REQUEST, query_flag, read_json, require, rest_handler
from server.topics.topic_name import TopicName
from server.transactions.buffer.snapshots import TopicSnapshots, snapshot_topic

from .cluster_lookup import ClusterLookup
from .owner_post import post_to_owner

SNAPSHOTS_PATH = "/admin/v2/pulsard/transaction-buffer-snapshots"


class ForwardedSnapshots:
    """TopicSnapshots' SnapshotForwarder in a cluster."""

    def __init__(self, http_url: str) -> None:
        self._url = http_url + SNAPSHOTS_PATH

    async def append(self, topic: TopicName, record: bytes) -> None:
        body = {"topic": str(topic), "record": base64.b64encode(record).decode()}
        await post_to_owner(self._url, body, f"transaction buffer snapshot of {topic} not stored")


def txn_snapshot_routes(snapshots: TopicSnapshots, lookup: ClusterLookup) -> list[web.RouteDef]:
    @rest_handler
    async def append(request: web.Request) -> web.Response:
        body = await read_json(request)
        require(isinstance(body, dict) and isinstance(body.get("topic"), str) and isinstance(body.get("record"), str),
                BAD_REQUEST, 'Expected {"topic": name, "record": base64 of the snapshot record}')
        topic = TopicName.parse(body["topic"])
        placement = await lookup.place(snapshot_topic(topic.namespace), query_flag(request, "authoritative"))
        if not placement.is_me:
            raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request, placement.authoritative))
        await snapshots.append_here(topic, base64.b64decode(body["record"]))
        return web.Response(status=204)

    return [web.post(SNAPSHOTS_PATH, append)]
