package pulsard.compat;

import static pulsard.compat.ConnectorCalls.cachedConsumer;
import static pulsard.compat.ConnectorCalls.describe;
import static pulsard.compat.ConnectorCalls.describeAll;
import static pulsard.compat.ConnectorCalls.ids;
import static pulsard.compat.ConnectorCalls.latestOffset;
import static pulsard.compat.ConnectorCalls.partitions;
import static pulsard.compat.ConnectorCalls.prefix;
import static pulsard.compat.ConnectorCalls.produce;
import static pulsard.compat.ConnectorCalls.readRange;
import static pulsard.compat.ConnectorCalls.subscription;
import static pulsard.compat.ConnectorCalls.userProvidedStart;
import static pulsard.compat.ConnectorCalls.values;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.payloads;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;

/** The connector's streaming source (PulsarSource): cursor setup, latest offsets per round,
 *  micro-batch ranges, commits by seek on its durable subscriptions, and their removal at stop. */
public final class ConnectorStreamScenarios {
    private ConnectorStreamScenarios() {}

    /** One streaming query's driver: its subscription prefix and its cached consumers. */
    static final class Query {
        final PulsarClient client;
        final String prefix = prefix(false);
        final Map<String, Consumer<GenericRecord>> cached = new LinkedHashMap<>();

        Query(PulsarClient client) {
            this.client = client;
        }

        /** CachedConsumer.getOrCreate(tp, "<prefix>-<tp>"). */
        Consumer<GenericRecord> consumer(String tp) throws Exception {
            Consumer<GenericRecord> c = cached.get(tp);
            if (c == null) {
                c = cachedConsumer(client, tp, subscription(prefix, tp));
                cached.put(tp, c);
            }
            return c;
        }

        /** latestOffset with ReadAllAvailable: fetchLatestOffsetForTopic. */
        MessageId latest(String tp) throws Exception {
            return latestOffset(consumer(tp));
        }

        /** PulsarSourceRDD.compute for one partition. */
        List<Message<String>> batch(String tp, MessageId from, boolean userProvided, MessageId until) throws Exception {
            return readRange(client, Schema.STRING, tp, prefix, from, userProvided, until);
        }

        /** commitCursorToOffset: reconnect through getLastMessageId if needed, then seek. */
        void commit(String tp, MessageId end) throws Exception {
            Consumer<GenericRecord> c = consumer(tp);
            if (!c.isConnected()) {
                c.getLastMessageId();
            }
            c.seek(end);
        }

        /** stop -> removeCursor: unsubscribe "<prefix>-<topic>" for each configured topic. */
        void stop(List<String> topics) throws Exception {
            for (String topic : topics) {
                consumer(topic).unsubscribe();
            }
            for (Consumer<GenericRecord> c : cached.values()) {
                c.close();
            }
        }
    }

    @ConnectorScenario
    public static void connectorStreamRoundsAndRestart(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-stream");
        List<MessageId> preIds = produce(ctx.client, topic, payloads(3, "pre"), 0);
        Query query = new Query(ctx.client);
        query.consumer(topic).seek(MessageId.latest);            // setupCursor, startingOffsets "latest"
        MessageId initial = query.latest(topic);                  // actualOffsets: user provided
        expectEqual("initial offset", describe(preIds.get(2)), describe(initial));
        MessageId l0 = query.latest(topic);
        // UserProvidedMessageId(x) equals x (MessageIdImpl.equals): batch 0 is empty.
        expectEqual("batch 0", List.of(), values(query.batch(topic, initial, true, l0)));
        query.commit(topic, l0);

        List<String> round1 = payloads(8, "r1");
        List<MessageId> round1Ids = produce(ctx.client, topic, round1, 4);
        MessageId l1 = query.latest(topic);
        expectEqual("latest after round 1", describe(round1Ids.get(7)), describe(l1));
        List<Message<String>> read1 = query.batch(topic, l0, false, l1);
        expectEqual("round 1", round1, values(read1));
        expectEqual("round 1 ids", describeAll(round1Ids), describeAll(ids(read1)));
        query.commit(topic, l1);

        List<String> round2 = new ArrayList<>(payloads(2, "r2u"));
        List<MessageId> round2Ids = new ArrayList<>(produce(ctx.client, topic, round2, 0));
        List<String> round2b = payloads(5, "r2b");
        round2Ids.addAll(produce(ctx.client, topic, round2b, 5));
        round2.addAll(round2b);
        MessageId l2 = query.latest(topic);
        expectEqual("latest after round 2", describe(round2Ids.get(6)), describe(l2));
        expectEqual("round 2", round2, values(query.batch(topic, l1, false, l2)));
        query.commit(topic, l2);
        expectEqual("no new data: the same latest offset", describe(l2), describe(query.latest(topic)));

        // Restart from the checkpoint of round 1 (offsets JSON keeps MessageId.toByteArray()).
        MessageId checkpoint = MessageId.fromByteArray(l1.toByteArray());
        Query restarted = new Query(ctx.client);
        restarted.consumer(topic).seek(MessageId.latest);
        MessageId resumedEnd = restarted.latest(topic);
        expectEqual("latest after restart", describe(l2), describe(resumedEnd));
        expectEqual("round 2 again after restart", round2, values(restarted.batch(topic, checkpoint, false, resumedEnd)));
        restarted.commit(topic, resumedEnd);
        List<String> round3 = payloads(3, "r3");
        produce(ctx.client, topic, round3, 0);
        MessageId l3 = restarted.latest(topic);
        expectEqual("round 3", round3, values(restarted.batch(topic, resumedEnd, false, l3)));
        restarted.commit(topic, l3);
        query.stop(List.of(topic));
        restarted.stop(List.of(topic));
    }

    /** First message the durable subscription delivers after a seek (the seek position itself). */
    static String firstDelivered(Consumer<GenericRecord> consumer) throws Exception {
        Message<GenericRecord> m = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        return m == null ? "nothing" : describe(m.getMessageId());
    }

    @ConnectorScenario
    public static void connectorStreamStartingPositions(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-start");
        List<MessageId> sent = new ArrayList<>(produce(ctx.client, topic, payloads(3, "a"), 0));
        Thread.sleep(200);
        long startingTime = System.currentTimeMillis();
        Thread.sleep(200);
        sent.addAll(produce(ctx.client, topic, payloads(3, "b"), 0));
        Query query = new Query(ctx.client);
        Consumer<GenericRecord> cursor = query.consumer(topic);
        MessageId end = query.latest(topic);

        cursor.seek(MessageId.earliest);                                   // startingOffsets "earliest"
        expectEqual("durable seek to earliest", describe(sent.get(0)), firstDelivered(cursor));
        expectEqual("from earliest", List.of("a-0", "a-1", "a-2", "b-0", "b-1", "b-2"),
                values(query.batch(topic, MessageId.earliest, true, end)));

        // The broker redelivers from the seek id; the Java consumer itself drops that id.
        cursor.seek(sent.get(1));                                          // startingOffsets {topic: id}
        expectEqual("durable seek to an id", describe(sent.get(2)), firstDelivered(cursor));
        MessageId fromId = userProvidedStart(ctx.client, topic, query.prefix, null, sent.get(1));
        expectEqual("from id 1", List.of("a-1", "a-2", "b-0", "b-1", "b-2"), values(query.batch(topic, fromId, true, end)));

        cursor.seek(startingTime);                                         // startingTime
        expectEqual("durable seek by time", describe(sent.get(3)), firstDelivered(cursor));
        MessageId fromTime = userProvidedStart(ctx.client, topic, query.prefix, startingTime, null);
        expectEqual("from time", List.of("b-0", "b-1", "b-2"), values(query.batch(topic, fromTime, true, end)));

        cursor.seek(MessageId.latest);                                     // startingOffsets "latest"
        expectEqual("durable seek to latest", "nothing", firstDelivered(cursor));
        query.commit(topic, sent.get(4));
        expectEqual("commit seeks to the end offset", describe(sent.get(5)), firstDelivered(cursor));
        query.stop(List.of(topic));
    }

    @ConnectorScenario
    public static void connectorStreamPartitioned(Ctx ctx) throws Exception {
        PulsarClient client = ctx.partitionedClient;
        String topic = Ctx.topic("conn-stream-part");
        Query query = new Query(client);
        List<String> tps = partitions(client, topic);
        expectEqual("partitions", 3, tps.size());
        Map<String, MessageId> offsets = new LinkedHashMap<>();
        for (String tp : tps) {
            query.consumer(tp).seek(MessageId.earliest);
            offsets.put(tp, MessageId.earliest);
        }
        for (int round = 0; round < 3; round++) {
            List<String> sent = payloads(9, "round" + round);
            List<MessageId> sentIds = produce(client, topic, sent, round == 1 ? 3 : 0);
            for (String tp : tps) {
                int partition = tps.indexOf(tp);
                List<String> expected = new ArrayList<>();
                List<MessageId> expectedIds = new ArrayList<>();
                for (int i = 0; i < sent.size(); i++) {
                    if (((MessageIdAdv) sentIds.get(i)).getPartitionIndex() == partition) {
                        expected.add(sent.get(i));
                        expectedIds.add(sentIds.get(i));
                    }
                }
                MessageId start = offsets.get(tp);
                MessageId end = query.latest(tp);
                check(expected.isEmpty() || describe(expectedIds.get(expectedIds.size() - 1)).equals(describe(end)),
                        "latest of " + tp + " is " + describe(end) + ", receipts " + describeAll(expectedIds));
                List<Message<String>> read = query.batch(tp, start, start.equals(MessageId.earliest), end);
                expectEqual("round " + round + " of " + tp, expected, values(read));
                expectEqual("ids of round " + round + " of " + tp, describeAll(expectedIds), describeAll(ids(read)));
                if (!expected.isEmpty()) {
                    query.commit(tp, end);
                    offsets.put(tp, end);
                }
            }
        }
        query.stop(List.of(topic));
    }
}
