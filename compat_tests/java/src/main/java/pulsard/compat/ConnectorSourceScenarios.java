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
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.payloads;

import java.util.ArrayList;
import java.util.List;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;

/** The connector's batch source (PulsarProvider.createRelation -> PulsarRelation -> PulsarSourceRDD4Batch):
 *  offsets resolved per partition, then each partition's range read by an inclusive reader. */
public final class ConnectorSourceScenarios {
    private ConnectorSourceScenarios() {}

    /** The range [start, end] of one topic partition as the batch query reads it. */
    static List<Message<String>> batchRead(PulsarClient client, String tp, String prefix, MessageId start, MessageId end)
            throws Exception {
        return readRange(client, Schema.STRING, tp, prefix, start, true, end);
    }

    /** endingOffsets "latest": getLastMessageId on the driver's cached consumer of the partition. */
    static MessageId latestOf(PulsarClient client, String tp, String prefix) throws Exception {
        try (Consumer<GenericRecord> cached = cachedConsumer(client, tp, subscription(prefix, tp))) {
            return latestOffset(cached);
        }
    }

    @ConnectorScenario
    public static void connectorBatchRangeUnbatched(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-batch");
        List<String> sent = payloads(10, "u");
        List<MessageId> sentIds = produce(ctx.client, topic, sent, 0);
        String prefix = prefix(true);
        expectEqual("partitions of a non-partitioned topic", List.of(topic), partitions(ctx.client, topic));
        MessageId end = latestOf(ctx.client, topic, prefix);
        expectEqual("latest offset = last receipt", describe(sentIds.get(9)), describe(end));

        List<Message<String>> all = batchRead(ctx.client, topic, prefix, MessageId.earliest, end);
        expectEqual("earliest..latest", sent, values(all));
        expectEqual("ids earliest..latest", describeAll(sentIds), describeAll(ids(all)));

        MessageId start = userProvidedStart(ctx.client, topic, prefix, null, sentIds.get(3));
        expectEqual("startingOffsets {topic: id 3}", describe(sentIds.get(3)), describe(start));
        MessageId until = userProvidedStart(ctx.client, topic, prefix, null, sentIds.get(6));
        expectEqual("[3, latest]", sent.subList(3, 10), values(batchRead(ctx.client, topic, prefix, start, end)));
        expectEqual("[3, 6]", sent.subList(3, 7), values(batchRead(ctx.client, topic, prefix, start, until)));
        expectEqual("(3, latest] as a streaming batch reads it", sent.subList(4, 10),
                values(readRange(ctx.client, Schema.STRING, topic, prefix, sentIds.get(3), false, end)));
    }

    @ConnectorScenario
    public static void connectorBatchRangeBatched(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-batched");
        List<String> sent = payloads(12, "b");
        List<MessageId> sentIds = produce(ctx.client, topic, sent, 4);
        String prefix = prefix(true);
        MessageId end = latestOf(ctx.client, topic, prefix);
        expectEqual("latest offset = last batch index of the last entry", describe(sentIds.get(11)), describe(end));
        expectEqual("batch index of the last message", 3, ((MessageIdAdv) end).getBatchIndex());

        List<Message<String>> all = batchRead(ctx.client, topic, prefix, MessageId.earliest, end);
        expectEqual("earliest..latest", sent, values(all));
        expectEqual("ids with batch indexes", describeAll(sentIds), describeAll(ids(all)));

        // A user-provided start inside a batch resolves to its entry: the whole entry is read.
        MessageId start = userProvidedStart(ctx.client, topic, prefix, null, sentIds.get(5));
        expectEqual("start rounded to the entry", describe(ConnectorCalls.entryId(sentIds.get(5))), describe(start));
        expectEqual("[entry of 5, latest]", sent.subList(4, 12), values(batchRead(ctx.client, topic, prefix, start, end)));
        // Exclusive starts at a batch index (streaming): the reader starts inside the batch.
        expectEqual("(5, latest]", sent.subList(6, 12),
                values(readRange(ctx.client, Schema.STRING, topic, prefix, sentIds.get(5), false, end)));
        expectEqual("(7, latest]", sent.subList(8, 12),
                values(readRange(ctx.client, Schema.STRING, topic, prefix, sentIds.get(7), false, end)));
        expectEqual("(latest, latest]", List.of(),
                values(readRange(ctx.client, Schema.STRING, topic, prefix, sentIds.get(11), false, end)));
    }

    @ConnectorScenario
    public static void connectorBatchRangePartitioned(Ctx ctx) throws Exception {
        PulsarClient client = ctx.partitionedClient;
        String topic = Ctx.topic("conn-part");
        List<String> sent = payloads(12, "p");
        List<MessageId> sentIds = produce(client, topic, sent, 0);
        List<String> batched = payloads(6, "pb");
        List<MessageId> batchedIds = produce(client, topic + "-partition-2", batched, 3);
        String prefix = prefix(true);
        List<String> tps = partitions(client, topic);
        expectEqual("partitions", List.of(topic + "-partition-0", topic + "-partition-1", topic + "-partition-2"), tps);
        for (int p = 0; p < 3; p++) {
            List<String> expected = new ArrayList<>();
            List<String> expectedIds = new ArrayList<>();
            for (int i = 0; i < sent.size(); i++) {
                if (((MessageIdAdv) sentIds.get(i)).getPartitionIndex() == p) {
                    expected.add(sent.get(i));
                    expectedIds.add(describe(sentIds.get(i)));
                }
            }
            if (p == 2) {   // sent to the partition by name: receipts say -1, the broker says 2
                expected.addAll(batched);
                for (MessageId id : batchedIds) {
                    expectedIds.add(describe(id).replace(":-1:", ":2:"));
                }
            }
            MessageId end = latestOf(client, tps.get(p), prefix);
            expectEqual("latest offset of partition " + p, expectedIds.get(expectedIds.size() - 1), describe(end));
            List<Message<String>> read = batchRead(client, tps.get(p), prefix, MessageId.earliest, end);
            expectEqual("partition " + p, expected, values(read));
            expectEqual("ids of partition " + p, expectedIds, describeAll(ids(read)));
        }
    }

    @ConnectorScenario
    public static void connectorBatchRangeByPublishTime(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-time");
        List<String> before = payloads(5, "early");
        List<String> after = payloads(6, "late");
        produce(ctx.client, topic, before, 0);
        Thread.sleep(200);
        long startingTime = System.currentTimeMillis();
        Thread.sleep(200);
        List<MessageId> afterIds = produce(ctx.client, topic, after, 3);
        String prefix = prefix(true);
        MessageId start = userProvidedStart(ctx.client, topic, prefix, startingTime, null);
        expectEqual("startingTime resolves to the first entry published after it",
                describe(ConnectorCalls.entryId(afterIds.get(0))), describe(start));
        MessageId end = latestOf(ctx.client, topic, prefix);
        expectEqual("[startingTime, latest]", after, values(batchRead(ctx.client, topic, prefix, start, end)));
        MessageId endAtTime = userProvidedStart(ctx.client, topic, prefix, startingTime, null);
        MessageId first = userProvidedStart(ctx.client, topic, prefix, 1L, null);
        List<String> early = values(batchRead(ctx.client, topic, prefix, first, endAtTime));
        expectEqual("[time 1, endingTime] ends with the entry at endingTime", List.of(
                "early-0", "early-1", "early-2", "early-3", "early-4", "late-0", "late-1", "late-2"), early);
    }
}
