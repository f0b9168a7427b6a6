"""The broker health check (GET /admin/v2/brokers/health, pulsar-admin brokers healthcheck), as
Pulsar runs it: a message written to and read back from this broker's heartbeat topic,
persistent://pulsar/<cluster>/<host:port>/healthcheck (or, topicVersion=V2,
persistent://pulsar/<host:port>/healthcheck); "ok", or a 500 with the reason."""

from __future__ import annotations

import pytest

from compat_tests.admin_http import AdminHttp, reason

HEALTH = "/admin/v2/brokers/health"


@pytest.fixture
def http(fresh_broker) -> AdminHttp:
    return AdminHttp(fresh_broker.web_url)


def heartbeat_v2(broker) -> str:
    return f"/admin/v2/persistent/pulsar/{broker.web_url.removeprefix('http://')}/healthcheck"


def test_health_check_round_trips_through_the_heartbeat_topics(fresh_broker, http):
    for query in ({}, {"topicVersion": "V1"}, {"topicVersion": "V2"}):
        answer = http.get(HEALTH, **query)
        assert (answer.status_code, answer.text) == (200, "ok"), query
    address = fresh_broker.web_url.removeprefix("http://")
    assert f"loaded topic persistent://pulsar/standalone/{address}/healthcheck" in fresh_broker.log_tail()
    stats = http.get(f"{heartbeat_v2(fresh_broker)}/stats").json()
    assert stats["msgInCounter"] == 1 and stats["publishers"] == []
    assert http.get(HEALTH, topicVersion="V3").status_code == 404


def test_heartbeat_namespaces_are_not_listed(fresh_broker, http):
    assert http.get(HEALTH).text == "ok"
    assert http.get(HEALTH, topicVersion="V2").text == "ok"
    assert "pulsar" in http.get("/admin/v2/tenants").json()
    assert http.get("/admin/v2/namespaces/pulsar").json() == ["pulsar/system"]


def test_a_failed_round_trip_is_a_500_with_the_reason(fresh_broker, http):
    topic = heartbeat_v2(fresh_broker)
    assert http.get(HEALTH, topicVersion="V2").text == "ok"
    assert http.post(f"{topic}/terminate").status_code == 200   # the heartbeat topic takes no more messages
    failed = http.get(HEALTH, topicVersion="V2")
    assert failed.status_code == 500 and reason(failed).startswith("Health check failed: ")
    assert http.get(HEALTH).text == "ok"                          # the V1 topic is another one
    assert http.delete(topic, force="true").status_code == 204
    assert http.get(HEALTH, topicVersion="V2").text == "ok"       # a new heartbeat topic
    log = fresh_broker.log_tail()
    assert "health check failed" in log and "Traceback" not in log
