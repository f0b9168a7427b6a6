package pulsard.compat;

import static pulsard.compat.CoordinatorScenarios.begin;
import static pulsard.compat.CoordinatorScenarios.transactional;
import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.text;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * Pending acks as the Java client's enableTransaction(true) uses them: acknowledgements in a
 * transaction are held until it ends, an abort delivers the messages again, a commit keeps them
 * acknowledged, and consume-transform-produce acks one topic and produces to another in one
 * transaction. PENDING_ACK_COMMIT_TOPIC names the topic the commit scenario uses (the test
 * restarts the broker after it and checks the acks stayed).
 */
public final class PendingAckScenarios {
    private PendingAckScenarios() {}

    static final int TIMEOUT_S = 10;

    static Consumer<byte[]> subscribe(PulsarClient client, String topic, String subscription) throws Exception {
        return client.newConsumer().topic(topic).subscriptionName(subscription)
                .subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    static Producer<byte[]> producer(PulsarClient client, String topic) throws Exception {
        return client.newProducer().topic(topic).enableBatching(false).sendTimeout(0, TimeUnit.SECONDS).create();
    }

    static void produce(PulsarClient client, String topic, List<String> payloads) throws Exception {
        try (Producer<byte[]> producer = producer(client, topic)) {
            for (String payload : payloads) {
                producer.send(bytes(payload));
            }
        }
    }

    static void ackAll(Consumer<byte[]> consumer, List<Message<byte[]>> messages, Transaction txn) throws Exception {
        for (Message<byte[]> message : messages) {
            consumer.acknowledgeAsync(message.getMessageId(), txn).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
    }

    static List<String> sorted(List<Message<byte[]>> messages) {
        List<String> out = Ctx.texts(messages);
        out.sort(null);
        return out;
    }

    @PendingAckScenario
    public static void pendingAckAbortRedelivers(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-ack-abort");
        List<String> payloads = Ctx.payloads(3, "abort");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = subscribe(client, topic, "sub")) {
            produce(client, topic, payloads);
            Transaction txn = begin(client);
            ackAll(consumer, Ctx.receive(consumer, 3, false), txn);
            txn.abort().get(TIMEOUT_S, TimeUnit.SECONDS);
            expectEqual("redelivered after the abort", payloads, sorted(Ctx.receive(consumer, 3, false)));
        }
    }

    @PendingAckScenario
    public static void pendingAckCommitKeepsAcks(Ctx ctx) throws Exception {
        String named = System.getenv("PENDING_ACK_COMMIT_TOPIC");
        String topic = named != null ? named : Ctx.topic("txn-ack-commit");
        try (PulsarClient client = transactional(ctx.serviceUrl)) {
            try (Consumer<byte[]> consumer = subscribe(client, topic, "sub")) {
                produce(client, topic, Ctx.payloads(3, "commit"));
                Transaction txn = begin(client);
                ackAll(consumer, Ctx.receive(consumer, 3, false), txn);
                txn.commit().get(TIMEOUT_S, TimeUnit.SECONDS);
            }
            try (Consumer<byte[]> again = subscribe(client, topic, "sub")) {
                Ctx.expectQuiet(again);
            }
        }
    }

    @PendingAckScenario
    public static void pendingAckConflictingAckFails(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-ack-conflict");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = subscribe(client, topic, "sub")) {
            produce(client, topic, Ctx.payloads(1, "conflict"));
            Message<byte[]> message = Ctx.receive(consumer, 1, false).get(0);
            Transaction first = begin(client);
            Transaction second = begin(client);
            consumer.acknowledgeAsync(message.getMessageId(), first).get(TIMEOUT_S, TimeUnit.SECONDS);
            try {
                consumer.acknowledgeAsync(message.getMessageId(), second).get(TIMEOUT_S, TimeUnit.SECONDS);
                throw new AssertionError("a message another transaction holds was acknowledged again");
            } catch (ExecutionException expected) {
                check(expected.getCause() instanceof PulsarClientException.TransactionConflictException,
                        "expected TransactionConflictException, got " + expected.getCause());
            }
            second.abort().get(TIMEOUT_S, TimeUnit.SECONDS);
            first.commit().get(TIMEOUT_S, TimeUnit.SECONDS);
            Ctx.expectQuiet(consumer);
        }
    }

    /**
     * One batch of four: indexes 0 and 1 acknowledged in a committed transaction, 2 in an aborted
     * one. The batch comes again without 0 and 1 (the broker runs with
     * acknowledgmentAtBatchIndexLevelEnabled=true).
     */
    @PendingAckScenario
    public static void pendingAckBatchIndexes(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-ack-batch");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("sub")
                     .subscriptionType(SubscriptionType.Shared).enableBatchIndexAcknowledgment(true)
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(true)
                     .batchingMaxMessages(4).batchingMaxPublishDelay(5, TimeUnit.SECONDS).create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>();
            for (String payload : Ctx.payloads(4, "batch")) {
                sent.add(producer.sendAsync(bytes(payload)));
            }
            producer.flush();
            for (CompletableFuture<MessageId> id : sent) {
                id.get(TIMEOUT_S, TimeUnit.SECONDS);
            }
            List<Message<byte[]>> messages = Ctx.receive(consumer, 4, false);
            Transaction committed = begin(client);
            Transaction aborted = begin(client);
            ackAll(consumer, messages.subList(0, 2), committed);
            ackAll(consumer, messages.subList(2, 3), aborted);
            committed.commit().get(TIMEOUT_S, TimeUnit.SECONDS);
            aborted.abort().get(TIMEOUT_S, TimeUnit.SECONDS);
            Message<byte[]> again = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(again != null, "the aborted transaction's message did not come again");
            List<String> redelivered = new ArrayList<>();
            while (again != null) {
                redelivered.add(text(again));
                again = consumer.receive(Ctx.QUIET_MS, TimeUnit.MILLISECONDS);
            }
            check(redelivered.contains("batch-2"), "batch-2 not redelivered: " + redelivered);
            check(!redelivered.contains("batch-0") && !redelivered.contains("batch-1"),
                    "committed indexes delivered again: " + redelivered);
        }
    }

    /** Read from `in`, write upper-cased to `out`, ack `in`: all in one transaction. */
    static void transform(PulsarClient client, Consumer<byte[]> in, Producer<byte[]> out, int n, boolean commit)
            throws Exception {
        Transaction txn = begin(client);
        for (Message<byte[]> message : Ctx.receive(in, n, false)) {
            out.newMessage(txn).value(bytes(text(message).toUpperCase())).send();
            in.acknowledgeAsync(message.getMessageId(), txn).get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        (commit ? txn.commit() : txn.abort()).get(TIMEOUT_S, TimeUnit.SECONDS);
    }

    @PendingAckScenario
    public static void pendingAckConsumeTransformProduce(Ctx ctx) throws Exception {
        String source = Ctx.topic("txn-ctp-in");
        String sink = Ctx.topic("txn-ctp-out");
        List<String> payloads = Ctx.payloads(4, "ctp");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Consumer<byte[]> in = subscribe(client, source, "transform");
             Consumer<byte[]> results = subscribe(client, sink, "results");
             Producer<byte[]> out = producer(client, sink)) {
            produce(client, source, payloads);
            transform(client, in, out, 2, true);
            transform(client, in, out, 2, false);   // aborted: nothing produced, the two come back
            transform(client, in, out, 2, true);
            List<String> expected = new ArrayList<>();
            payloads.forEach(p -> expected.add(p.toUpperCase()));
            expectEqual("produced by the committed transactions", expected, sorted(Ctx.receive(results, 4, true)));
            Ctx.expectQuiet(results);
            Ctx.expectQuiet(in);
        }
    }
}
