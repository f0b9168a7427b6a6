"""Subscription expiration: a durable subscription nobody has consumed from for the namespace's
subscription_expiration_time_minutes (else the broker's subscriptionExpirationTimeMinutes; 0 =
never) is deleted by the periodic check (subscriptionExpiryCheckIntervalInMinutes), as Pulsar's
checkInactiveSubscriptions does; one with a connected consumer stays. The broker keys take
fractions of a minute here, so the broker's own expiry is seen in seconds; a namespace's value
is whole minutes, as in Pulsar."""

from __future__ import annotations

import time

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.helpers import send_all, unique_topic

EXPIRY_S = 3
CONFIG = {"subscriptionExpirationTimeMinutes": EXPIRY_S / 60, "subscriptionExpiryCheckIntervalInMinutes": 0.01}
#: long enough for the broker's expiry and a few checks after it
WAIT_S = EXPIRY_S + 3


@pytest.fixture(scope="module")
def expiring_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "expiring", CONFIG)


def subscriptions(http: AdminHttp, topic: str) -> list[str]:
    namespace, local = topic.removeprefix("persistent://").rsplit("/", 1)
    response = http.get(f"/admin/v2/persistent/{namespace}/{local}/subscriptions")
    assert response.status_code == 200, response.text
    return sorted(response.json())


def idle_subscription(client, topic: str, name: str) -> None:
    """A durable subscription with a backlog whose consumer has left."""
    client.subscribe(topic, name).close()
    send_all(client.create_producer(topic), [b"kept in the backlog"])


def test_an_idle_subscription_expires_and_a_connected_one_stays(expiring_broker, connect):
    client, http = connect(expiring_broker), AdminHttp(expiring_broker.web_url)
    topic = f"persistent://public/default/{unique_topic()}"
    connected = client.subscribe(topic, "connected")
    idle_subscription(client, topic, "idle")

    deadline = time.monotonic() + WAIT_S + 10
    while "idle" in subscriptions(http, topic):
        assert time.monotonic() < deadline, "the idle subscription was never deleted"
        time.sleep(0.2)
    assert subscriptions(http, topic) == ["connected"]

    # the deleted subscription's backlog went with it: subscribing again starts from the end
    again = client.subscribe(topic, "idle")
    with pytest.raises(pulsar.Timeout):
        again.receive(500)
    assert connected.receive(5000).data() == b"kept in the backlog"


@pytest.mark.parametrize("minutes", [0, 1])
def test_the_namespace_value_overrides_the_broker(expiring_broker, connect, minutes):
    """0 turns expiry off for the namespace; 1 (minute) outlasts the broker's few seconds."""
    client, http = connect(expiring_broker), AdminHttp(expiring_broker.web_url)
    namespace = f"public/{unique_topic('ns')}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/subscriptionExpirationTime", json=minutes).status_code == 204
    assert http.get(f"/admin/v2/namespaces/{namespace}/subscriptionExpirationTime").json() == minutes
    kept, expiring = f"persistent://{namespace}/{unique_topic()}", f"persistent://public/default/{unique_topic()}"
    idle_subscription(client, kept, "idle")
    idle_subscription(client, expiring, "idle")

    deadline = time.monotonic() + WAIT_S + 10
    while "idle" in subscriptions(http, expiring):
        assert time.monotonic() < deadline, "the broker's expiry did not act"
        time.sleep(0.2)
    assert subscriptions(http, kept) == ["idle"]
