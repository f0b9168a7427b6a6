"""The transaction coordinator (transactionCoordinatorEnabled=true): the official Java client's
enableTransaction(true) in one JVM run, then the coordinator's protocol answers, timeouts,
restarts and kill -9 over bare requests (the Python client has no transactions API).

What happens to the messages and acknowledgements of a transaction is tested with the
transaction buffer and pending acks; here it is the coordinator's own state.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time

import pytest
import requests

from compat_tests.admin_http import AdminHttp
from compat_tests.raw_requests import RawConnection
from compat_tests.test_authorization import SECRET, TOKEN, token
from compat_tests.toolchains import marked_java_scenarios, run_program, tail
from protocol import commands
from protocol import pulsar_api_pb2 as pb

Cmd = pb.BaseCommand
TXN_CONFIG = {"transactionCoordinatorEnabled": "true"}
ASSIGN = "persistent://pulsar/system/transaction_coordinator_assign"
JVM_TIMEOUT_S = 120
POLL_S = 15


class Coordinator:
    """Bare transaction requests on one connection to a broker (TC_CLIENT_CONNECT sent first)."""

    def __init__(self, broker, tc_id: int = 0, connect_tc: bool = True, token: str | None = None) -> None:
        self.raw = RawConnection(broker.broker_port)
        credentials = {"auth_method_name": "token", "auth_data": token.encode()} if token else {}
        connected = self.raw.connect(pb.CommandConnect(client_version="compat", protocol_version=21, **credentials))
        assert connected is not None and connected.type == Cmd.CONNECTED
        self._ids = iter(range(1, 1 << 30))
        if connect_tc:   # as the clients do: look the coordinator up (Pulsar serves it only then)
            self.call(Cmd(type=Cmd.LOOKUP, lookupTopic=pb.CommandLookupTopic(
                topic=f"{ASSIGN}-partition-{tc_id}", request_id=next(self._ids))))
            assert self.tc_connect(tc_id).tcClientConnectResponse.error == 0

    def call(self, command: Cmd) -> Cmd:
        self.raw.send(command)
        answer = self.raw.receive()
        assert answer is not None, "the broker closed the connection"
        return answer

    def tc_connect(self, tc_id: int = 0) -> Cmd:
        return self.call(Cmd(type=Cmd.TC_CLIENT_CONNECT_REQUEST, tcClientConnectRequest=pb.CommandTcClientConnectRequest(
            request_id=next(self._ids), tc_id=tc_id)))

    def new_txn(self, ttl_ms: int = 60000, tc_id: int = 0) -> pb.CommandNewTxnResponse:
        return self.call(Cmd(type=Cmd.NEW_TXN, newTxn=pb.CommandNewTxn(
            request_id=next(self._ids), txn_ttl_seconds=ttl_ms, tc_id=tc_id))).newTxnResponse

    def begin(self, ttl_ms: int = 60000) -> tuple[int, int]:
        answer = self.new_txn(ttl_ms)
        assert answer.error == 0, answer.message
        return answer.txnid_most_bits, answer.txnid_least_bits

    def add_partition(self, txn: tuple[int, int], topic: str) -> pb.CommandAddPartitionToTxnResponse:
        return self.call(Cmd(type=Cmd.ADD_PARTITION_TO_TXN, addPartitionToTxn=pb.CommandAddPartitionToTxn(
            request_id=next(self._ids), txnid_most_bits=txn[0], txnid_least_bits=txn[1],
            partitions=[topic]))).addPartitionToTxnResponse

    def add_subscription(self, txn: tuple[int, int], topic: str, sub: str) -> pb.CommandAddSubscriptionToTxnResponse:
        return self.call(Cmd(type=Cmd.ADD_SUBSCRIPTION_TO_TXN, addSubscriptionToTxn=pb.CommandAddSubscriptionToTxn(
            request_id=next(self._ids), txnid_most_bits=txn[0], txnid_least_bits=txn[1],
            subscription=[pb.Subscription(topic=topic, subscription=sub)]))).addSubscriptionToTxnResponse

    def end(self, txn: tuple[int, int], action: int) -> pb.CommandEndTxnResponse:
        return self.call(Cmd(type=Cmd.END_TXN, endTxn=pb.CommandEndTxn(
            request_id=next(self._ids), txnid_most_bits=txn[0], txnid_least_bits=txn[1],
            txn_action=action))).endTxnResponse

    def close(self) -> None:
        self.raw.close()


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from compat_tests.conftest import _broker_fixture
    yield from _broker_fixture(tmp_path_factory, "txn", TXN_CONFIG)


@pytest.fixture
def coordinator(txn_broker):
    tc = Coordinator(txn_broker)
    yield tc
    tc.close()


def error_of(reply: Cmd) -> tuple[int, str]:
    """A refusal's code and words: in the request's own response form (pulsard), or in an ERROR
    (Pulsar, for transaction requests while transactions are off)."""
    body = reply.error if reply.type == Cmd.ERROR else commands.body_of(reply)
    return body.error, body.message


def until(condition, what: str):
    deadline = time.monotonic() + POLL_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {POLL_S} s: {what}")


# -- the Java client --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def java_report(java_command, txn_broker, broker):
    return run_program([*java_command, "pulsard.compat.CoordinatorMain", txn_broker.service_url,
                        broker.service_url], JVM_TIMEOUT_S)


@pytest.mark.timeout(JVM_TIMEOUT_S + 60)
@pytest.mark.parametrize("scenario", marked_java_scenarios("java", "CoordinatorScenario"))
def test_java_scenario(scenario, java_report):
    java_report.assert_passed(scenario)


# -- the Go client ----------------------------------------------------------------------------

def test_go_client_commits_and_aborts(go_binaries, txn_broker):
    """TestTxnCoordinator with a coordinator (test_go_client.py runs it against a broker without)."""
    go_binary = go_binaries[0]
    done = subprocess.run([str(go_binary), "-test.run", "^TestTxnCoordinator$", "-test.v", "-test.count=1",
                           "-test.timeout=45s"], cwd=go_binary.parent.parent, capture_output=True, text=True,
                          env={**os.environ, "PULSAR_TXN_SERVICE_URL": txn_broker.service_url}, timeout=60)
    assert done.returncode == 0 and "--- PASS: TestTxnCoordinator" in done.stdout, tail(done.stdout + done.stderr)


# -- protocol answers -------------------------------------------------------------------------

def test_assign_topic_has_one_partition_standalone(coordinator):
    answer = coordinator.call(Cmd(type=Cmd.PARTITIONED_METADATA, partitionMetadata=pb.CommandPartitionedTopicMetadata(
        topic=ASSIGN, request_id=99)))
    assert answer.partitionMetadataResponse.partitions == 1


def test_commit_and_abort_of_empty_transactions(coordinator):
    committed, aborted = coordinator.begin(), coordinator.begin()
    assert committed[0] == 0 and aborted[1] == committed[1] + 1   # (0, 0) first, as Pulsar
    assert coordinator.end(committed, pb.COMMIT).error == 0
    assert coordinator.end(aborted, pb.ABORT).error == 0


def test_an_ended_transaction_is_forgotten(coordinator):
    """Pulsar 3.0 drops a transaction once it ended: a second END_TXN, either way, and any
    addition, are TransactionNotFound."""
    txn = coordinator.begin()
    assert coordinator.end(txn, pb.COMMIT).error == 0
    again = coordinator.end(txn, pb.COMMIT)
    assert (again.error, again.message) == (pb.TransactionNotFound,
                                            f"The transaction with this txdID `({txn[0]},{txn[1]})`not found ")
    assert coordinator.end(txn, pb.ABORT).error == pb.TransactionNotFound
    assert coordinator.add_partition(txn, "persistent://public/default/t").error == pb.TransactionNotFound


def test_unknown_transaction_and_coordinator(coordinator):
    assert coordinator.end((0, 987654), pb.COMMIT).error == pb.TransactionNotFound
    assert coordinator.add_subscription((0, 987654), "persistent://public/default/t", "s").error == pb.TransactionNotFound
    missing = coordinator.new_txn(tc_id=5)
    assert (missing.error, missing.message) == (pb.TransactionCoordinatorNotFound,
                                                "Transaction coordinator with id 5 not found!")
    assert coordinator.tc_connect(5).tcClientConnectResponse.error == pb.ServiceNotReady   # look it up again


def test_partitions_and_subscriptions_without_transactional_state_end_cleanly(coordinator, txn_broker):
    """Topics that do not exist, or have no transaction buffer / pending acks, have nothing to end."""
    txn = coordinator.begin()
    assert coordinator.add_partition(txn, "persistent://public/default/never-created").error == 0
    assert coordinator.add_subscription(txn, "persistent://public/default/never-created", "sub").error == 0
    assert coordinator.add_partition(txn, "non-persistent://public/default/np").error == 0
    assert coordinator.end(txn, pb.COMMIT).error == 0


def timed_out(broker) -> bool:
    metrics = AdminHttp(broker.web_url).get("/metrics").text
    return 'pulsar_txn_timeout_total{cluster="standalone",coordinator_id="0"} 1' in metrics


def test_timeout_aborts(coordinator, txn_broker):
    txn = coordinator.begin(ttl_ms=200)
    until(lambda: timed_out(txn_broker), "the transaction timed out")
    assert coordinator.end(txn, pb.COMMIT).error == pb.TransactionNotFound


def test_the_transaction_log_is_no_topic(coordinator):
    """A client cannot write into a coordinator's log (it would replay the client's bytes)."""
    refused = coordinator.call(Cmd(type=Cmd.PRODUCER, producer=pb.CommandProducer(
        topic="persistent://pulsar/system/__transaction_log_0", producer_id=1, request_id=4242)))
    assert error_of(refused) == (pb.NotAllowedError,
                                 "persistent://pulsar/system/__transaction_log_0 is a transaction coordinator's log")
    txn = coordinator.begin()
    assert coordinator.end(txn, pb.COMMIT).error == 0


def test_the_transaction_log_is_listed_only_with_system_topics(coordinator, txn_broker):
    """As Pulsar lists its transaction-internal topics: only with includeSystemTopic=true."""
    admin, log_topic = AdminHttp(txn_broker.web_url), "persistent://pulsar/system/__transaction_log_0"
    assert log_topic not in admin.get("/admin/v2/persistent/pulsar/system").json()
    assert log_topic in admin.get("/admin/v2/persistent/pulsar/system", includeSystemTopic="true").json()


def test_max_active_transactions(make_broker):
    """Pulsar 3.0.7 leaves the refused NEW_TXN unanswered (the client times out); pulsard
    answers it with Pulsar's words (its ReachMaxActiveTxnException maps to no other code)."""
    broker = make_broker({**TXN_CONFIG, "maxActiveTransactionsPerCoordinator": 2})
    tc = Coordinator(broker)
    try:
        first, _ = tc.begin(), tc.begin()
        refused = tc.new_txn()
        assert (refused.error, refused.message) == (pb.UnknownError, "New txn op reach max active txn! tcId : 0")
        assert tc.end(first, pb.ABORT).error == 0
        assert tc.new_txn().error == 0
    finally:
        tc.close()


def test_only_the_owner_or_a_super_user_may_use_a_transaction(make_broker):
    """With authorization on, as Pulsar: another role is told TransactionNotFound, and may read
    the transaction's metadata."""
    broker = make_broker({**TXN_CONFIG, "authenticationEnabled": "true", "authenticationProviders": TOKEN,
                          "tokenSecretKey": base64.b64encode(SECRET).decode(), "authorizationEnabled": "true",
                          "superUserRoles": "admin"})
    alice, bob, admin = (Coordinator(broker, token=token(role)) for role in ("alice", "bob", "admin"))
    try:
        txn = alice.begin()
        refused = bob.end(txn, pb.COMMIT)
        assert (refused.error, refused.message) == (
            pb.TransactionNotFound, f"Client (bob) is neither the owner of the transaction ({txn[0]},{txn[1]}) "
                                    f"nor a super user")
        assert bob.add_partition(txn, "persistent://public/default/t").error == pb.TransactionNotFound
        assert admin.add_partition(txn, "persistent://public/default/t").error == 0
        # Admin v3's transaction reads are open to any authenticated role, as Pulsar 3.0's are
        # (the Go client's own suite reads them anonymously); an unauthenticated caller gets 401.
        metadata_url = f"{broker.web_url}/admin/v3/transactions/transactionMetadata/{txn[0]}/{txn[1]}"
        meta = requests.get(metadata_url, headers={"Authorization": "Bearer " + token("bob")}, timeout=10).json()
        assert meta["owner"] == "alice"
        assert requests.get(metadata_url, timeout=10).status_code == 401
        assert alice.end(txn, pb.COMMIT).error == 0
    finally:
        for tc in (alice, bob, admin):
            tc.close()


def test_disabled_is_a_clean_refusal(broker):
    tc = Coordinator(broker, connect_tc=False)
    try:
        answer = tc.call(Cmd(type=Cmd.PARTITIONED_METADATA, partitionMetadata=pb.CommandPartitionedTopicMetadata(
            topic=ASSIGN, request_id=99)))
        assert answer.partitionMetadataResponse.partitions == 0
        assert error_of(tc.tc_connect()) == (pb.NotAllowedError, "Transactions are not enabled.")
        assert error_of(tc.call(Cmd(type=Cmd.NEW_TXN, newTxn=pb.CommandNewTxn(request_id=7))))[0] == pb.NotAllowedError
    finally:
        tc.close()


# -- admin v3 ---------------------------------------------------------------------------------

def test_admin_coordinator_stats_and_transaction_metadata(coordinator, txn_broker):
    admin = AdminHttp(txn_broker.web_url)
    topic = "persistent://public/default/admin-txn"   # existing: Pulsar asks each topic for its part
    assert admin.put("/admin/v2/persistent/public/default/admin-txn").status_code == 204
    assert admin.put("/admin/v2/persistent/public/default/admin-txn/subscription/sub").status_code == 204
    txn = coordinator.begin(ttl_ms=45000)
    assert coordinator.add_partition(txn, topic).error == 0
    assert coordinator.add_subscription(txn, topic, "sub").error == 0
    try:
        stats = admin.get("/admin/v3/transactions/coordinatorStats").json()
        assert set(stats) == {"0"}
        assert set(stats["0"]) == {"state", "leastSigBits", "lowWaterMark", "ongoingTxnSize",
                                   "recoverStartTime", "recoverEndTime"}
        assert stats["0"]["state"] == "Ready" and stats["0"]["leastSigBits"] >= txn[1]
        assert stats["0"]["ongoingTxnSize"] >= 1 and stats["0"]["lowWaterMark"] < txn[1]
        assert admin.get("/admin/v3/transactions/coordinatorStats", coordinatorId=0).json() == stats["0"]
        missing = admin.get("/admin/v3/transactions/coordinatorStats", coordinatorId=3)
        assert (missing.status_code, missing.json()["reason"]) == (
            404, "Transaction coordinator not found! coordinator id : 3")

        meta = admin.get(f"/admin/v3/transactions/transactionMetadata/{txn[0]}/{txn[1]}").json()
        assert meta["txnId"] == f"({txn[0]},{txn[1]})" and meta["status"] == "OPEN"
        assert meta["timeoutAt"] == 45000 and meta["openTimestamp"] > 0
        assert set(meta) == {"txnId", "status", "openTimestamp", "timeoutAt", "producedPartitions",
                             "ackedPartitions"}   # no owner without authentication (null: left out)
        assert meta["producedPartitions"] == {topic: {"aborted": False}}
        assert meta["ackedPartitions"] == {topic: {"sub": {}}}
        unknown = admin.get("/admin/v3/transactions/transactionMetadata/7/1")
        assert (unknown.status_code, unknown.json()["reason"]) == (404, "Transaction coordinator with id 7 not found!")

        slow = admin.get("/admin/v3/transactions/slowTransactions/0").json()
        assert f"({txn[0]},{txn[1]})" in slow
        assert admin.get("/admin/v3/transactions/slowTransactions/3600000").json() == {}
    finally:
        assert coordinator.end(txn, pb.ABORT).error == 0
    ended = admin.get(f"/admin/v3/transactions/transactionMetadata/{txn[0]}/{txn[1]}")
    assert (ended.status_code, ended.json()["reason"]) == (
        404, f"The transaction with this txdID `({txn[0]},{txn[1]})`not found ")
    assert admin.get("/admin/v3/transactions/transactionBufferStats/public/default/no-such-topic").status_code == 404


def test_admin_refuses_when_disabled(broker):
    response = AdminHttp(broker.web_url).get("/admin/v3/transactions/coordinatorStats")
    assert (response.status_code, response.json()["reason"]) == (
        503, "This Broker is not configured with transactionCoordinatorEnabled=true.")


# -- restarts and kill -9 ---------------------------------------------------------------------

def test_open_transactions_survive_restart_and_kill9(make_broker):
    broker = make_broker(TXN_CONFIG)
    tc = Coordinator(broker)
    stopped = tc.begin()
    assert tc.add_partition(stopped, "persistent://public/default/kept").error == 0
    tc.close()
    broker.stop()
    broker.restart()
    tc = Coordinator(broker)
    killed = tc.begin()
    assert killed[1] > stopped[1]
    tc.close()
    broker.kill9()
    broker.restart()
    tc = Coordinator(broker)
    try:
        assert tc.end(stopped, pb.COMMIT).error == 0
        assert tc.end(killed, pb.ABORT).error == 0
        assert tc.begin()[1] > killed[1], "a transaction id was handed out twice"
    finally:
        tc.close()


def test_ids_are_not_reused_once_the_log_is_trimmed(make_broker):
    broker = make_broker({**TXN_CONFIG, "managedLedgerMaxEntriesPerLedger": 2,
                          "managedLedgerMinLedgerRolloverTimeMinutes": 0})
    tc = Coordinator(broker)
    begun = [tc.begin() for _ in range(3)]
    for txn in begun:
        assert tc.end(txn, pb.COMMIT).error == 0
    tc.close()
    broker.kill9()
    broker.restart()
    tc = Coordinator(broker)
    try:
        assert tc.begin()[1] > max(txn[1] for txn in begun)
    finally:
        tc.close()


def test_a_timeout_survives_kill9(make_broker):
    broker = make_broker(TXN_CONFIG)
    tc = Coordinator(broker)
    txn = tc.begin(ttl_ms=1500)
    tc.close()
    broker.kill9()
    broker.restart()
    tc = Coordinator(broker)
    try:
        until(lambda: timed_out(broker), "the recovered transaction timed out")
        assert tc.end(txn, pb.COMMIT).error == pb.TransactionNotFound
    finally:
        tc.close()


def test_commit_logged_before_kill9_is_finished_at_restart(make_broker, monkeypatch):
    monkeypatch.setenv("PULSARD_CRASH_AT", "coordinator-after-ending-logged")
    broker = make_broker(TXN_CONFIG)
    tc = Coordinator(broker)
    txn = tc.begin()
    assert tc.add_partition(txn, "persistent://public/default/crash").error == 0
    tc.raw.send(Cmd(type=Cmd.END_TXN, endTxn=pb.CommandEndTxn(request_id=1000, txnid_most_bits=txn[0],
                                                               txnid_least_bits=txn[1], txn_action=pb.COMMIT)))
    assert tc.raw.receive() is None, "the broker answered END_TXN instead of crashing"
    tc.close()
    broker.proc.wait(timeout=10)
    monkeypatch.delenv("PULSARD_CRASH_AT")
    broker.restart()
    admin = AdminHttp(broker.web_url)
    until(lambda: 'pulsar_txn_committed_total{cluster="standalone",coordinator_id="0"} 1'
          in admin.get("/metrics").text, "recovery finished the commit, before any client came")
    assert 'pulsar_txn_aborted_total{cluster="standalone",coordinator_id="0"} 0' in admin.get("/metrics").text
    tc = Coordinator(broker)
    try:
        assert tc.end(txn, pb.ABORT).error == pb.TransactionNotFound
    finally:
        tc.close()
