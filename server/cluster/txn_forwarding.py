"""In a cluster, a coordinator ends a transaction on a topic another broker serves through that
broker, as topic-policy events reach the writer of `__change_events` (policy_events.py): a
post to END_PATH on this broker's own web port, whose answer is a 307 towards the broker
serving the topic (placing its bundle first when nobody serves it). That broker ends the
transaction on the topic's buffer or the subscription's pending acks before answering 204.

Pulsar's coordinator sends END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION through its broker
client instead; this pulsard route needs a super-user where authorization is on (like every
broker-to-broker call, the post carries no credentials yet)."""

from __future__ import annotations

from typing import Any

from server import web
from server.admin.brokers import redirect_url
from server.admin.errors import BAD_REQUEST, query_flag, read_json, require, rest_handler
from server.topics.topic_name import TopicName
from server.transactions.interfaces import ABORT, COMMIT, TransactionParticipants, TxnID

from .cluster_lookup import ClusterLookup
from .owner_post import post_to_owner

END_PATH = "/admin/v2/pulsard/transaction-ends"


class ForwardedParticipants:
    """TransactionParticipants for topics served by other brokers of the cluster."""

    def __init__(self, http_url: str) -> None:
        self._url = http_url + END_PATH

    async def end_on_partition(self, topic: str, txn: TxnID, action: int) -> None:
        await self._post({"topic": topic, "subscription": None, "mostBits": txn.most_bits,
                          "leastBits": txn.least_bits, "action": action})

    async def end_on_subscription(self, topic: str, subscription: str, txn: TxnID, action: int) -> None:
        await self._post({"topic": topic, "subscription": subscription, "mostBits": txn.most_bits,
                          "leastBits": txn.least_bits, "action": action})

    async def _post(self, body: dict[str, Any]) -> None:
        await post_to_owner(self._url, body, f"ending transaction on {body['topic']} failed")


def _valid(body: Any) -> bool:
    return (isinstance(body, dict) and isinstance(body.get("topic"), str)
            and isinstance(body.get("subscription"), (str, type(None)))
            and all(isinstance(body.get(k), int) for k in ("mostBits", "leastBits"))
            and body.get("action") in (COMMIT, ABORT))


def txn_end_routes(local: TransactionParticipants, lookup: ClusterLookup) -> list[web.RouteDef]:
    """`local` ends it on this broker's topics only (no forwarding of its own: no loops)."""
    @rest_handler
    async def end(request: web.Request) -> web.Response:
        body = await read_json(request)
        require(_valid(body), BAD_REQUEST, 'Expected {"topic", "subscription" (or null), "mostBits", '
                                           '"leastBits", "action" (0 commit, 1 abort)}')
        topic = TopicName.parse(body["topic"])
        placement = await lookup.place(topic, query_flag(request, "authoritative"))
        if not placement.is_me:
            raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request, placement.authoritative))
        txn = TxnID(body["mostBits"], body["leastBits"])
        if body["subscription"] is None:
            await local.end_on_partition(body["topic"], txn, body["action"])
        else:
            await local.end_on_subscription(body["topic"], body["subscription"], txn, body["action"])
        return web.Response(status=204)

    return [web.post(END_PATH, end)]
