"""Topic-policy changes in a cluster go to the broker serving the namespace's `__change_events`,
the log's only writer, as Pulsar's brokers send them to the system topic's owner through a
producer. The admin calls on a topic's policies stay at the topic's owner (its 307s, as
Pulsar's), which checks the topic and the value, then posts the resulting event here:
EVENTS_PATH on its own web port, whose answer is a 307 towards the broker serving
`__change_events` (placing its bundle first when nobody serves it). That broker appends the
event and shows it to read-only views before answering; the poster then reads it back.

A pulsard route, not Pulsar's: it needs a super-user where authorization is on (like every
broker-to-broker call, the post carries no credentials yet)."""

from __future__ import annotations

from typing import Any

from server import web
from server.admin.brokers import redirect_url
from server.admin.errors import BAD_REQUEST, query_flag, read_json, require, rest_handler
from server.policies.change_events import change_events_topic
from server.policies.topic_policies import TopicPolicies
from server.topics.topic_name import TopicName

from .cluster_lookup import ClusterLookup
from .owner_post import post_to_owner

EVENTS_PATH = "/admin/v2/pulsard/topic-policy-events"


class ForwardedEvents:
    """TopicPolicies' EventForwarder in a cluster."""

    def __init__(self, http_url: str) -> None:
        self._url = http_url + EVENTS_PATH

    async def append(self, topic: TopicName, policies: dict[str, Any] | None) -> None:
        await post_to_owner(self._url, {"topic": str(topic), "policies": policies},
                            f"Topic policies of {topic} not stored")


def policy_event_routes(policies: TopicPolicies, lookup: ClusterLookup) -> list[web.RouteDef]:
    @rest_handler
    async def append(request: web.Request) -> web.Response:
        body = await read_json(request)
        require(isinstance(body, dict) and isinstance(body.get("topic"), str)
                and isinstance(body.get("policies"), (dict, type(None))), BAD_REQUEST,
                'Expected {"topic": name, "policies": TopicPolicies or null}')
        topic = TopicName.parse(body["topic"])
        await lookup.check_namespace(topic)
        placement = await lookup.place(change_events_topic(topic.namespace), query_flag(request, "authoritative"))
        if not placement.is_me:
            raise web.HTTPTemporaryRedirect(redirect_url(placement.owner.http_url, request, placement.authoritative))
        await policies.append_here(topic, body["policies"])
        return web.Response(status=204)

    return [web.post(EVENTS_PATH, append)]
