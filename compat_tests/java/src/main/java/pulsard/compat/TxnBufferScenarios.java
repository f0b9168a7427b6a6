package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.expectQuiet;
import static pulsard.compat.Ctx.receive;
import static pulsard.compat.Ctx.text;
import static pulsard.compat.Ctx.texts;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * The transaction buffer as the Java client's enableTransaction(true) meets it (the first URL is
 * a broker with transactionCoordinatorEnabled=true; TXN_PARTITIONED names a topic of it with 3
 * partitions): committed messages delivered once, aborted ones never, to consumers and readers,
 * and nothing after an open transaction's first message until it ends.
 */
public final class TxnBufferScenarios {
    private TxnBufferScenarios() {}

    static Producer<byte[]> producer(PulsarClient client, String topic) throws Exception {
        return client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS).create();
    }

    static Consumer<byte[]> consumer(PulsarClient client, String topic) throws Exception {
        return client.newConsumer().topic(topic).subscriptionName("sub")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    static List<String> sorted(List<String> values) {
        List<String> out = new ArrayList<>(values);
        Collections.sort(out);
        return out;
    }

    @TxnBufferScenario
    public static void txnCommitAndAbortAcrossTwoTopicsAndAPartitionedTopic(Ctx ctx) throws Exception {
        String[] topics = {Ctx.topic("txn-a"), Ctx.topic("txn-b"), System.getenv("TXN_PARTITIONED")};
        try (PulsarClient client = CoordinatorScenarios.transactional(ctx.serviceUrl)) {
            List<Consumer<byte[]>> consumers = new ArrayList<>();
            List<Producer<byte[]>> producers = new ArrayList<>();
            for (String topic : topics) {
                consumers.add(consumer(client, topic));
                producers.add(producer(client, topic));
            }
            Transaction committed = CoordinatorScenarios.begin(client);
            Transaction aborted = CoordinatorScenarios.begin(client);
            for (int i = 0; i < 3; i++) {
                for (Producer<byte[]> producer : producers) {
                    producer.newMessage(committed).value(bytes("c-" + i)).send();
                    producer.newMessage(aborted).value(bytes("x-" + i)).send();
                }
            }
            aborted.abort().get(10, TimeUnit.SECONDS);
            committed.commit().get(10, TimeUnit.SECONDS);
            for (int t = 0; t < topics.length; t++) {
                List<String> got = texts(receive(consumers.get(t), 3, true));
                expectEqual("messages of " + topics[t], List.of("c-0", "c-1", "c-2"), t < 2 ? got : sorted(got));
                expectQuiet(consumers.get(t));
            }
            for (Producer<byte[]> producer : producers) {
                producer.close();
            }
            for (Consumer<byte[]> consumer : consumers) {
                consumer.close();
            }
        }
    }

    @TxnBufferScenario
    public static void txnInterleavedOnOneTopic(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-interleaved");
        try (PulsarClient client = CoordinatorScenarios.transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = consumer(client, topic);
             Producer<byte[]> producer = producer(client, topic)) {
            producer.send(bytes("plain"));
            Transaction one = CoordinatorScenarios.begin(client);
            Transaction two = CoordinatorScenarios.begin(client);
            Transaction three = CoordinatorScenarios.begin(client);
            for (int i = 0; i < 3; i++) {
                producer.newMessage(one).value(bytes("one-" + i)).send();
                producer.newMessage(two).value(bytes("two-" + i)).send();
                producer.newMessage(three).value(bytes("three-" + i)).send();
            }
            three.commit().get(10, TimeUnit.SECONDS);
            two.abort().get(10, TimeUnit.SECONDS);
            expectEqual("before the oldest transaction ends", List.of("plain"), texts(receive(consumer, 1, true)));
            expectQuiet(consumer);
            one.commit().get(10, TimeUnit.SECONDS);
            expectEqual("after it commits", List.of("one-0", "three-0", "one-1", "three-1", "one-2", "three-2"),
                    texts(receive(consumer, 6, true)));
            expectQuiet(consumer);
        }
    }

    @TxnBufferScenario
    public static void txnOpenHoldsLaterPlainMessages(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-held");
        try (PulsarClient client = CoordinatorScenarios.transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = consumer(client, topic);
             Producer<byte[]> producer = producer(client, topic)) {
            producer.send(bytes("p0"));
            Transaction txn = CoordinatorScenarios.begin(client);
            producer.newMessage(txn).value(bytes("t0")).send();
            producer.send(bytes("p1"));
            expectEqual("before the commit", List.of("p0"), texts(receive(consumer, 1, true)));
            expectQuiet(consumer);
            txn.commit().get(10, TimeUnit.SECONDS);
            expectEqual("after it", List.of("t0", "p1"), texts(receive(consumer, 2, true)));
        }
    }

    @TxnBufferScenario
    public static void txnReaderSeesCommittedOnly(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-reader");
        try (PulsarClient client = CoordinatorScenarios.transactional(ctx.serviceUrl);
             Producer<byte[]> producer = producer(client, topic)) {
            Transaction committed = CoordinatorScenarios.begin(client);
            Transaction aborted = CoordinatorScenarios.begin(client);
            for (int i = 0; i < 3; i++) {
                producer.newMessage(committed).value(bytes("c-" + i)).send();
                producer.newMessage(aborted).value(bytes("x-" + i)).send();
            }
            aborted.abort().get(10, TimeUnit.SECONDS);
            committed.commit().get(10, TimeUnit.SECONDS);
            try (Reader<byte[]> reader = client.newReader().topic(topic).startMessageId(MessageId.earliest).create()) {
                List<String> got = new ArrayList<>();
                while (reader.hasMessageAvailable()) {   // GET_LAST_MESSAGE_ID: the last committed one
                    Message<byte[]> message = reader.readNext(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                    check(message != null, "hasMessageAvailable, yet nothing came after " + got);
                    got.add(text(message));
                }
                expectEqual("read", List.of("c-0", "c-1", "c-2"), got);
                producer.send(bytes("after"));
                check(reader.hasMessageAvailable(), "the plain message after them is not available");
                expectEqual("then", "after", text(reader.readNext(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS)));
            }
        }
    }
}
