"""Publish, dispatch and subscribe rates as Pulsar 3.0.7 enforces them, set at namespace and
topic level (and per subscription), lifted when removed, applied to loaded topics.

Rates are compared, never single operations timed: a client sends (or receives) as fast as it
can for a few seconds and the messages it got through after the first second are counted. With
preciseTopicPublishRateLimiterEnable (and always for dispatch) what one second takes past the
limit is paid by the next ones, so a window of W seconds sees at most the limit for W seconds
plus the bucket's slack: one period's permits (the window need not start where a period does)
and what was in flight (the producer's pending window; the last entry a dispatcher sent).
A publish past the rate is never refused: the broker stops reading the producer's connection.
"""

from __future__ import annotations

import threading
import time
import uuid

import pulsar
import pytest

from compat_tests.admin_http import AdminHttp
from compat_tests.conftest import _broker_fixture
from compat_tests.test_topic_policies import SETTLE_S

SECONDS = 4.0          # of each measurement; the first second (the initial bucket) is not counted
PENDING = 20           # the flooding producer's pending window
PAYLOAD = b"x" * 100
#: After a policy is readable, Pulsar may take a moment more to apply it to a loaded topic.
APPLY_S = 0.5


@pytest.fixture(scope="module")
def precise_broker(tmp_path_factory):
    yield from _broker_fixture(tmp_path_factory, "precise", {"preciseTopicPublishRateLimiterEnable": "true"})


@pytest.fixture
def http(precise_broker) -> AdminHttp:
    return AdminHttp(precise_broker.web_url)


@pytest.fixture
def client(precise_broker, connect) -> pulsar.Client:
    return connect(precise_broker)


def new_namespace(http: AdminHttp) -> str:
    namespace = f"public/rates-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status_code == 204
    return namespace


def reads(http: AdminHttp, path: str, expected, **params) -> bool:
    """GET answers `expected` (None: no body, 200 or 204), within the time policies take."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        response = http.get(path, **params)
        assert response.status_code in (200, 204), response.text
        found = response.json() if response.content else None
        if found == expected:
            return True
        assert time.monotonic() < deadline, f"{path}: {found!r}, expected {expected!r}"
        time.sleep(0.1)


def apply(http: AdminHttp, path: str, body) -> None:
    """Set a policy and wait until it reads back (Pulsar answers a topic's publishRate as its
    own value only, whatever ?applied says)."""
    assert http.post(path, json=body).status_code == 204
    assert reads(http, path, body, applied="true")
    time.sleep(APPLY_S)


def remove(http: AdminHttp, path: str) -> None:
    assert http.delete(path).status_code == 204
    time.sleep(APPLY_S)


class Timeline:
    """Times (since start) at which things happened, counted over a window."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.times: list[float] = []
        self.failures = 0
        self._lock = threading.Lock()

    def record(self) -> None:
        with self._lock:
            self.times.append(time.monotonic() - self.start)

    def after_first_second(self, seconds: float = SECONDS) -> int:
        return sum(1 for t in self.times if 1.0 < t <= seconds)


def flood(producer: pulsar.Producer, seconds: float = SECONDS, payload: bytes = PAYLOAD) -> Timeline:
    """Send as fast as the pending window allows for `seconds`; the receipts' times."""
    timeline = Timeline()

    def receipt(result, _msg_id) -> None:
        if result == pulsar.Result.Ok:
            timeline.record()
        else:
            timeline.failures += 1

    while time.monotonic() - timeline.start < seconds:
        producer.send_async(payload, receipt)
    producer.flush()
    return timeline


def drain(consumer: pulsar.Consumer, seconds: float = SECONDS) -> Timeline:
    """Receive (and acknowledge) whatever comes for `seconds`."""
    timeline = Timeline()
    while time.monotonic() - timeline.start < seconds:
        try:
            message = consumer.receive(timeout_millis=100)
        except pulsar.Timeout:
            continue
        timeline.record()
        consumer.acknowledge(message)
    return timeline


def producer_on(client: pulsar.Client, topic: str) -> pulsar.Producer:
    return client.create_producer(topic, batching_enabled=False, max_pending_messages=PENDING,
                                  block_if_queue_full=True)


def backlog(client: pulsar.Client, topic: str, count: int, subscriptions=("sub",)) -> None:
    """count messages stored for each subscription, made at the start of the topic."""
    for name in subscriptions:
        client.subscribe(topic, name).close()
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    for _ in range(count):
        producer.send_async(PAYLOAD, None)
    producer.flush()
    producer.close()


def assert_limited(steady: int, limit: int, in_flight: int) -> None:
    """At most the limit over the steady window plus the bucket's slack; at least half the
    limit (the client did flood, or drain)."""
    window = SECONDS - 1
    assert limit * window / 2 <= steady <= limit * (window + 1) + in_flight, steady


def assert_publish_limited(timeline: Timeline, limit: int) -> None:
    assert timeline.failures == 0   # never refused, only slowed
    assert_limited(timeline.after_first_second(), limit, PENDING)


def assert_dispatch_limited(timeline: Timeline, limit: int) -> None:
    assert_limited(timeline.after_first_second(), limit, 1)


def test_a_namespace_publish_rate_slows_its_producers_and_removal_lifts_it(http, client):
    namespace = new_namespace(http)
    path = f"/admin/v2/namespaces/{namespace}/publishRate"
    apply(http, path, {"publishThrottlingRateInMsg": 100, "publishThrottlingRateInByte": -1})
    producer = producer_on(client, f"persistent://{namespace}/t")
    assert_publish_limited(flood(producer), 100)

    remove(http, path)
    assert len(flood(producer, 1.0).times) > 300


def test_a_topic_publish_rate_overrides_the_namespace_on_a_loaded_topic(http, client):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/t"
    producer = producer_on(client, topic)
    apply(http, f"/admin/v2/namespaces/{namespace}/publishRate",
          {"publishThrottlingRateInMsg": 1000, "publishThrottlingRateInByte": -1})
    topic_path = f"/admin/v2/persistent/{namespace}/t/publishRate"
    apply(http, topic_path, {"publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": 20_000})
    timeline = flood(producer, payload=b"y" * 200)   # 20 000 bytes/s: 100 messages/s
    assert_publish_limited(timeline, 100)

    remove(http, topic_path)
    assert reads(http, topic_path, None)


def test_a_dispatch_rate_set_on_the_namespace_then_on_the_topic(http, client):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/t"
    backlog(client, topic, 2000)
    apply(http, f"/admin/v2/namespaces/{namespace}/dispatchRate",
          {"dispatchThrottlingRateInMsg": 200, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
           "ratePeriodInSecond": 1})
    consumer = client.subscribe(topic, "sub")
    first = drain(consumer)
    assert_dispatch_limited(first, 200)

    topic_path = f"/admin/v2/persistent/{namespace}/t/dispatchRate"
    apply(http, topic_path, {"dispatchThrottlingRateInMsg": -1, "dispatchThrottlingRateInByte": 5000,
                             "relativeToPublishRate": False, "ratePeriodInSecond": 1})
    second = drain(consumer)
    assert_dispatch_limited(second, 50)    # 100-byte messages

    remove(http, topic_path)
    remove(http, f"/admin/v2/namespaces/{namespace}/dispatchRate")
    rest = 2000 - len(first.times) - len(second.times)
    assert rest > 600 and len(drain(consumer, 2.0).times) == rest


def test_a_subscription_dispatch_rate_and_one_subscription_s_own(http, client):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/t"
    backlog(client, topic, 1500, subscriptions=("fast", "slow"))
    rate = {"dispatchThrottlingRateInMsg": 200, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
            "ratePeriodInSecond": 1}
    apply(http, f"/admin/v2/persistent/{namespace}/t/subscriptionDispatchRate", rate)
    own_path = f"/admin/v2/persistent/{namespace}/t/slow/dispatchRate"
    own = {**rate, "dispatchThrottlingRateInMsg": 50}
    apply(http, own_path, own)
    assert reads(http, f"/admin/v2/persistent/{namespace}/t/fast/dispatchRate", rate, applied="true")

    consumers = {name: client.subscribe(topic, name) for name in ("fast", "slow")}
    timelines: dict[str, Timeline] = {}
    threads = [threading.Thread(target=lambda n=name: timelines.__setitem__(n, drain(consumers[n])))
               for name in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_dispatch_limited(timelines["fast"], 200)
    assert_dispatch_limited(timelines["slow"], 50)

    remove(http, own_path)
    assert reads(http, own_path, None)
    assert reads(http, own_path, rate, applied="true")


def test_a_rate_period_of_several_seconds(http, client):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/t"
    backlog(client, topic, 500)
    apply(http, f"/admin/v2/persistent/{namespace}/t/dispatchRate",
          {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
           "ratePeriodInSecond": 2})
    timeline = drain(client.subscribe(topic, "sub"), 5.0)
    # 100 a period: 50 a second, plus the first period's 100 at once (Pulsar 3.0.7 gives each
    # period's 100 at its start; pulsard, as Pulsar 3.2, gives them back as time passes)
    assert 100 <= sum(1 for t in timeline.times if t <= 1.9) <= 100 + 50 * 1.9
    assert 200 <= len(timeline.times) <= 100 + 50 * 5.0


def test_a_consumer_that_subscribes_too_often_is_refused(precise_broker, http, connect):
    namespace = new_namespace(http)
    topic = f"persistent://{namespace}/t"
    path = f"/admin/v2/namespaces/{namespace}/subscribeRate"
    apply(http, path, {"subscribeThrottlingRatePerConsumer": 1, "ratePeriodInSecond": 30})

    def subscribe_once(name: str) -> None:
        """A new client's first consumer: the same consumer id every time."""
        client = connect(precise_broker)
        try:
            client.subscribe(topic, "sub", consumer_name=name).close()
        finally:
            client.close()

    subscribe_once("again")
    with pytest.raises(pulsar.NotAllowedError):   # not retried by the client: the subscribe fails
        subscribe_once("again")
    subscribe_once("another")    # a consumer of another name has its own count

    remove(http, path)
    subscribe_once("again")


def test_the_broker_keys_apply_where_no_policy_is_set(make_broker, connect):
    broker = make_broker({"maxPublishRatePerTopicInMessages": 100, "dispatchThrottlingRatePerSubscriptionInMsg": 100,
                          "subscribeThrottlingRatePerConsumer": 5, "preciseTopicPublishRateLimiterEnable": "true"})
    http, client = AdminHttp(broker.web_url), connect(broker)
    topic = "persistent://public/default/broker-keys"
    producer = producer_on(client, topic)
    base = "/admin/v2/persistent/public/default/broker-keys"
    assert reads(http, base + "/publishRate", None, applied="true")   # Pulsar answers the topic's own only
    assert reads(http, base + "/subscriptionDispatchRate", {
        "dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": 0, "relativeToPublishRate": False,
        "ratePeriodInSecond": 1}, applied="true")
    assert reads(http, base + "/subscribeRate", {"subscribeThrottlingRatePerConsumer": 5, "ratePeriodInSecond": 30},
                 applied="true")
    assert_publish_limited(flood(producer), 100)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert_dispatch_limited(drain(consumer), 100)


# -- resource groups -------------------------------------------------------------------------------

def test_resource_groups_over_rest(http):
    groups = "/admin/v2/resourcegroups"
    name = f"rg-{uuid.uuid4().hex[:8]}"
    assert http.get(f"{groups}/{name}").status_code == 404
    assert http.put(f"{groups}/{name}", json={"publishRateInMsgs": 100}).status_code == 204
    assert http.get(f"{groups}/{name}").json() == {
        "publishRateInMsgs": 100, "publishRateInBytes": -1, "dispatchRateInMsgs": -1, "dispatchRateInBytes": -1}
    assert name in http.get(groups).json()
    assert http.put(f"{groups}/{name}", json={"dispatchRateInBytes": 5000}).status_code == 204
    assert http.get(f"{groups}/{name}").json() == {
        "publishRateInMsgs": 100, "publishRateInBytes": -1, "dispatchRateInMsgs": -1, "dispatchRateInBytes": 5000}

    namespace = new_namespace(http)
    ns = f"/admin/v2/namespaces/{namespace}/resourcegroup"
    none = http.get(ns)
    assert none.status_code == 200 and none.content == b""
    refused = http.post(f"{ns}/no-such-group")
    assert refused.status_code == 412 and refused.json()["reason"] == "ResourceGroup does not exist"
    assert http.post(f"{ns}/{name}").status_code == 204
    assert http.get(ns).text == name   # the bare name, as Pulsar answers it
    assert http.get(f"/admin/v2/namespaces/{namespace}").json()["resource_group_name"] == name
    in_use = http.delete(f"{groups}/{name}")
    assert in_use.status_code == 412 and in_use.json()["reason"] == "ResourceGroup is in use"
    assert http.delete(ns).status_code == 204
    assert http.get(ns).content == b""
    assert http.delete(f"{groups}/{name}").status_code == 204
    assert name not in http.get(groups).json()


def attached_group(http: AdminHttp, quotas: dict) -> tuple[str, list[str]]:
    """A group with these quotas, attached to two new namespaces; three topics of them."""
    name = f"rg-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/resourcegroups/{name}", json=quotas).status_code == 204
    first, second = new_namespace(http), new_namespace(http)
    for namespace in (first, second):
        assert http.post(f"/admin/v2/namespaces/{namespace}/resourcegroup/{name}").status_code == 204
    time.sleep(APPLY_S)
    return name, [f"persistent://{first}/a", f"persistent://{first}/b", f"persistent://{second}/c"]


def in_parallel(work: list) -> list[Timeline]:
    """Run each callable in a thread of its own; their timelines."""
    timelines: list[Timeline] = []
    threads = [threading.Thread(target=lambda w=w: timelines.append(w())) for w in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timelines


def test_a_resource_group_publish_quota_is_shared_by_the_topics_of_its_namespaces(broker, connect):
    """On the default broker: Pulsar 3.0.7 applies a group's publish quota only when
    preciseTopicPublishRateLimiterEnable is false."""
    http = AdminHttp(broker.web_url)
    _, topics = attached_group(http, {"publishRateInMsgs": 200})
    client = connect(broker)
    producers = [producer_on(client, topic) for topic in topics]
    published = in_parallel([lambda p=p: flood(p) for p in producers])
    assert all(timeline.failures == 0 for timeline in published)
    assert_limited(sum(t.after_first_second() for t in published), 200, PENDING * len(producers))


def test_a_resource_group_dispatch_quota_is_shared_by_the_topics_of_its_namespaces(http, client):
    """Pulsar enforces a group's dispatch quotas from 3.1 on; 3.0.7 keeps them unenforced."""
    _, topics = attached_group(http, {"dispatchRateInMsgs": 100})
    for topic in topics:
        backlog(client, topic, 300)
    consumers = [client.subscribe(topic, "sub") for topic in topics]
    received = in_parallel([lambda c=c: drain(c) for c in consumers])
    assert_limited(sum(t.after_first_second() for t in received), 100, len(consumers))
