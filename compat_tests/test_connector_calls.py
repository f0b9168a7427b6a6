"""The stock Spark connector's (streamnative pulsar-spark) calls, replayed against pulsard.

The connector itself cannot be fetched on this machine (Maven Central answers 404 for
io.streamnative.connectors:pulsar-spark-connector_2.13), so compat_tests/java's ConnectorMain
replays its sequences of client calls (batch source, streaming source, topic discovery, schemas,
sink) with the official Java client, and compat_tests/admin_java's ConnectorAdmission replays its
PulsarAdmin calls (internalStats for maxBytesPerTrigger, subscription cleanup). One test per
scenario; the sink's messages are also read back here by the Python client.
"""

from __future__ import annotations

import uuid
from base64 import b64decode

import pulsar
import pytest

from compat_tests.helpers import receive_n
from compat_tests.toolchains import JAVA, ScenarioReport, marked_java_scenarios, run_program

JVM_TIMEOUT_S = 240
ADMIN_RUN_TIMEOUT_S = 120
SINK_TOPIC = f"persistent://public/default/conn-sink-{uuid.uuid4().hex[:12]}"
EVENT_TIME_BASE = 1_700_000_000_000


@pytest.fixture(scope="module")
def connector_report(java_command, broker, partitioned_broker) -> ScenarioReport:
    cp_index = java_command.index("-cp")
    command = [*java_command[:cp_index], f"-Dconnector.sinkTopic={SINK_TOPIC}", *java_command[cp_index:]]
    return run_program([*command, "pulsard.compat.ConnectorMain", broker.service_url,
                        partitioned_broker.service_url], JVM_TIMEOUT_S)


@pytest.fixture(scope="module")
def admission_report(admin_java_classpath, small_ledger_broker) -> ScenarioReport:
    return run_program([*JAVA, "-cp", admin_java_classpath, "pulsard.ConnectorAdmission",
                        small_ledger_broker.web_url, small_ledger_broker.service_url], ADMIN_RUN_TIMEOUT_S)


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", marked_java_scenarios("java", "ConnectorScenario"))
def test_connector_client_calls(scenario, connector_report, broker, partitioned_broker):
    connector_report.assert_passed(scenario)


@pytest.mark.timeout(ADMIN_RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", marked_java_scenarios("admin_java", "ConnectorScenario"))
def test_connector_admin_calls(scenario, admission_report, small_ledger_broker):
    admission_report.assert_passed(scenario)


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)
def test_connector_sink_read_back_by_python(connector_report, broker, connect):
    """What the sink's producer wrote (key bytes, properties, event time, batches) as Python sees it."""
    connector_report.assert_passed("connectorSinkProducer")
    consumer = connect(broker).subscribe(SINK_TOPIC, "python-check", schema=pulsar.schema.StringSchema(),
                                         initial_position=pulsar.InitialPosition.Earliest)
    messages = receive_n(consumer, 10)
    assert [m.value() for m in messages] == [f"row-{i}" for i in range(10)]
    # keyBytes travel base64-encoded (partition_key_b64_encoded); Python hands the stored text over.
    assert [b64decode(m.partition_key()) for m in messages] == [f"key-{i}".encode() for i in range(10)]
    assert [m.event_timestamp() for m in messages] == [EVENT_TIME_BASE + i for i in range(10)]
    assert [m.properties() for m in messages] == [{"row": str(i), "source": "spark"} for i in range(10)]
    positions = [(m.message_id().ledger_id(), m.message_id().entry_id(), m.message_id().batch_index())
                 for m in messages]
    assert all(batch_index >= 0 for _, _, batch_index in positions), positions   # batched, as the sink sends
    for (ledger, entry, index), (next_ledger, next_entry, next_index) in zip(positions, positions[1:]):
        same_entry = (next_ledger, next_entry) == (ledger, entry)
        assert (next_index == index + 1) if same_entry else (next_index == 0 and next_entry == entry + 1), positions
