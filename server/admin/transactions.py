"""/admin/v3/transactions: the coordinators' stats, one transaction's metadata, slow
transactions, and the transactional state of a topic's buffer and a subscription's pending
acks, in Pulsar's JSON shapes. 503 while transactionCoordinatorEnabled is false, as Pulsar.

A broker answers for the coordinators it serves (all of them standalone).
"""

from __future__ import annotations

from typing import Any

from server import web
from server.broker_service import BrokerService
from server.topics.topic_name import TopicName
from server.errors import BrokerError
from server.transactions.coordinator.errors import CoordinatorNotFound, TransactionNotFound
from server.transactions.coordinator.metadata_store import TransactionMetadataStore, TxnMeta, now_ms
from server.transactions.coordinator.service import TransactionCoordinators
from server.transactions.interfaces import TxnID

from .errors import BAD_REQUEST, NOT_FOUND, SERVICE_UNAVAILABLE, RestError, require, rest_handler
from .topic_access import TopicAccess
from .topic_stats import ledger_internal_stats

V3 = "/admin/v3/transactions"
TOPIC = "{tenant}/{namespace}/{topic}"
DISABLED = "This Broker is not configured with transactionCoordinatorEnabled=true."
NO_COORDINATOR = "Transaction coordinator not found"


def _number(request: web.Request, name: str) -> int:
    raw = request.match_info.get(name) or request.query.get(name)
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise RestError(BAD_REQUEST, f"{name} must be a number, not {raw!r}") from None


def coordinator_stats(coordinators: TransactionCoordinators, tc_id: int, store: TransactionMetadataStore) -> dict:
    started, ended = coordinators.recover_times.get(tc_id, (0, 0))
    return {"state": "Ready", "leastSigBits": store.sequence, "lowWaterMark": store.low_water_mark,
            "ongoingTxnSize": len(store.txns), "recoverStartTime": started, "recoverEndTime": ended}


def _stats_of(participant: Any, txn: TxnID, empty: dict) -> dict:
    """A participant's view of one transaction, where it offers one (stats_of), else what
    Pulsar shows of one it does not know (its null fields left out, as Pulsar's JSON does)."""
    stats_of = getattr(participant, "stats_of", None)
    return stats_of(txn) if stats_of is not None else dict(empty)


def _log_stats(ledger: Any) -> dict:
    """Pulsar's TransactionLogStats: the log's managed ledger by its storage name
    (tenant/namespace/persistent/local) and its internal stats."""
    name = TopicName.parse(ledger.name)
    return {"managedLedgerName": f"{name.namespace}/{name.domain}/{name.local_name}",
            "managedLedgerInternalStats": ledger_internal_stats(ledger)}


def routes(broker: BrokerService, topics: TopicAccess) -> list[web.RouteDef]:
    def coordinators() -> TransactionCoordinators:
        require(broker.transactions is not None, SERVICE_UNAVAILABLE, DISABLED)
        return broker.transactions

    def store_of(tc_id: int, reason: str | None = None) -> TransactionMetadataStore:
        """404 with `reason`, else Pulsar's words for a coordinator asked for by id."""
        try:
            return coordinators().store(tc_id)
        except CoordinatorNotFound:
            raise RestError(NOT_FOUND, reason or f"{NO_COORDINATOR}! coordinator id : {tc_id}") from None

    async def loaded(partition: str) -> Any:
        """The topic, when it exists and is served here (else its stats are left empty)."""
        try:
            return await topics.broker.get_topic(TopicName.parse(partition), create=False)
        except BrokerError:
            return None

    async def metadata(meta: TxnMeta) -> dict:
        produced = {}
        for partition in meta.partitions:
            topic = await loaded(partition)
            produced[partition] = _stats_of(getattr(topic, "transaction_buffer", None), meta.txn,
                                            {"aborted": False})
        acked: dict[str, dict[str, dict]] = {}
        for partition, sub in meta.subscriptions:
            topic = await loaded(partition)
            subscription = topic.subscriptions.get(sub) if topic is not None else None
            acked.setdefault(partition, {})[sub] = _stats_of(getattr(subscription, "pending_acks", None), meta.txn,
                                                             {})
        found = {"txnId": str(meta.txn), "status": meta.status.value, "openTimestamp": meta.open_ms,
                 "timeoutAt": meta.timeout_ms, "producedPartitions": produced, "ackedPartitions": acked}
        if meta.owner is not None:   # Pulsar's JSON leaves out what is null
            found["owner"] = meta.owner
        return found

    @rest_handler
    async def get_coordinator_stats(request: web.Request) -> web.Response:
        served = coordinators()
        if "coordinatorId" in request.query:
            tc_id = _number(request, "coordinatorId")
            return web.json_response(coordinator_stats(served, tc_id, store_of(tc_id)))
        require(served.count > 0, NOT_FOUND, NO_COORDINATOR)
        return web.json_response({str(tc): coordinator_stats(served, tc, store)
                                  for tc, store in sorted(served.stores.items())})

    @rest_handler
    async def get_transaction_metadata(request: web.Request) -> web.Response:
        txn = TxnID(_number(request, "mostSigBits"), _number(request, "leastSigBits"))
        store = store_of(txn.most_bits, str(CoordinatorNotFound(txn.most_bits)))
        try:
            meta = store.get(txn)
        except TransactionNotFound as exc:
            raise RestError(NOT_FOUND, str(exc)) from None
        return web.json_response(await metadata(meta))

    @rest_handler
    async def get_slow_transactions(request: web.Request) -> web.Response:
        timeout_ms = _number(request, "timeout")
        served = coordinators()
        tc_ids = [_number(request, "coordinatorId")] if "coordinatorId" in request.query else sorted(served.stores)
        require(served.count > 0, NOT_FOUND, NO_COORDINATOR)
        now, slow = now_ms(), {}
        for tc_id in tc_ids:
            for meta in list(store_of(tc_id).txns.values()):
                if meta.open_ms + timeout_ms < now:
                    slow[str(meta.txn)] = await metadata(meta)
        return web.json_response(slow)

    async def topic_of(request: web.Request):
        coordinators()
        name = TopicName.parse(f"persistent://{request.match_info['tenant']}/{request.match_info['namespace']}/"
                               f"{request.match_info['topic']}")
        return await topics.topic(name)

    def participant(owner: Any, attribute: str) -> Any:
        found = getattr(owner, attribute, None)
        require(found is not None, SERVICE_UNAVAILABLE, f"{attribute} is not available on this broker yet")
        return found

    @rest_handler
    async def get_buffer_stats(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        low_water_marks = request.query.get("lowWaterMarks", "false").lower() == "true"
        return web.json_response(participant(topic, "transaction_buffer").stats(low_water_marks))

    @rest_handler
    async def get_pending_ack_stats(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        subscription = await topics.subscription(topic, request.match_info["subscription"])
        low_water_marks = request.query.get("lowWaterMarks", "false").lower() == "true"
        return web.json_response(participant(subscription, "pending_acks").stats(low_water_marks))

    @rest_handler
    async def get_in_buffer_stats(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        txn = TxnID(_number(request, "mostSigBits"), _number(request, "leastSigBits"))
        return web.json_response(_stats_of(participant(topic, "transaction_buffer"), txn,
                                           {"aborted": False}))

    @rest_handler
    async def get_in_pending_ack_stats(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        subscription = await topics.subscription(topic, request.match_info["subscription"])
        txn = TxnID(_number(request, "mostSigBits"), _number(request, "leastSigBits"))
        return web.json_response(_stats_of(participant(subscription, "pending_acks"), txn,
                                           {}))

    @rest_handler
    async def get_coordinator_internal_stats(request: web.Request) -> web.Response:
        tc_id = _number(request, "coordinatorId")
        return web.json_response({"transactionLogStats": _log_stats(store_of(tc_id).log.ledger)})

    @rest_handler
    async def get_pending_ack_internal_stats(request: web.Request) -> web.Response:
        topic = await topic_of(request)
        subscription = await topics.subscription(topic, request.match_info["subscription"])
        ledger = participant(subscription, "pending_acks").log_ledger
        require(ledger is not None, NOT_FOUND, "The subscription has no pending-ack log")
        return web.json_response({"pendingAckLogStats": _log_stats(ledger)})

    return [
        web.get(f"{V3}/coordinatorStats", get_coordinator_stats),
        web.get(f"{V3}/coordinatorInternalStats/{{coordinatorId}}", get_coordinator_internal_stats),
        web.get(f"{V3}/pendingAckInternalStats/{TOPIC}/{{subscription}}", get_pending_ack_internal_stats),
        web.get(f"{V3}/transactionMetadata/{{mostSigBits}}/{{leastSigBits}}", get_transaction_metadata),
        web.get(f"{V3}/slowTransactions/{{timeout}}", get_slow_transactions),
        web.get(f"{V3}/transactionBufferStats/{TOPIC}", get_buffer_stats),
        web.get(f"{V3}/pendingAckStats/{TOPIC}/{{subscription}}", get_pending_ack_stats),
        web.get(f"{V3}/transactionInBufferStats/{TOPIC}/{{mostSigBits}}/{{leastSigBits}}", get_in_buffer_stats),
        web.get(f"{V3}/transactionInPendingAckStats/{TOPIC}/{{subscription}}/{{mostSigBits}}/{{leastSigBits}}",
                get_in_pending_ack_stats),
    ]
