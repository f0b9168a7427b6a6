package pulsard;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.impl.MessageIdImpl;
import org.apache.pulsar.common.policies.data.ManagedLedgerInternalStats.LedgerInfo;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;

/**
 * The Spark connector's PulsarAdmin calls, replayed with the official admin client on a broker
 * whose ledgers roll over every 4 entries: PulsarAdmissionControlHelper's use of internalStats
 * for maxBytesPerTrigger, and the driver subscriptions (named "<prefix>-<topic>") that
 * removeCursor unsubscribes. Prints RESULT/DETAIL lines like compat_tests/java's Main.
 * Usage: ConnectorAdmission WEB_URL SERVICE_URL
 */
public final class ConnectorAdmission {
    static final int ENTRIES_PER_LEDGER = 4;
    static final int PAYLOAD_BYTES = 200;

    private ConnectorAdmission() {}

    public static void main(String[] args) throws Exception {
        try (PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(args[0]).build();
             PulsarClient client = PulsarClient.builder().serviceUrl(args[1])
                     .operationTimeout(10, TimeUnit.SECONDS).build()) {
            List<Method> scenarios = new ArrayList<>();
            for (Method m : ConnectorAdmission.class.getDeclaredMethods()) {
                if (m.isAnnotationPresent(ConnectorScenario.class)) {
                    scenarios.add(m);
                }
            }
            scenarios.sort(Comparator.comparing(Method::getName));
            for (Method m : scenarios) {
                String failure = null;
                try {
                    m.invoke(null, admin, client);
                } catch (InvocationTargetException e) {
                    failure = String.valueOf(e.getCause());
                }
                System.out.println("RESULT " + m.getName() + " " + (failure == null ? "PASS" : "FAIL"));
                if (failure != null) {
                    System.out.println("DETAIL " + m.getName() + " " + failure.replace("\n", " | "));
                }
            }
        }
        System.exit(0);
    }

    static void expectEqual(String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected " + expected + " but got " + actual);
        }
    }

    static String topic(String tag) {
        return "persistent://public/default/conn-admin-" + tag + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** n unbatched messages of PAYLOAD_BYTES each (same size, so entries are alike). */
    static List<MessageId> produce(PulsarClient client, String topic, int first, int n) throws Exception {
        List<MessageId> ids = new ArrayList<>();
        try (Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false).create()) {
            for (int i = first; i < first + n; i++) {
                byte[] payload = new byte[PAYLOAD_BYTES];
                Arrays.fill(payload, (byte) 'x');
                byte[] label = String.format("m%03d", i).getBytes(StandardCharsets.UTF_8);
                System.arraycopy(label, 0, payload, 0, label.length);
                ids.add(producer.send(payload));
            }
        }
        return ids;
    }

    static String label(Message<byte[]> m) {
        return new String(m.getData(), 0, 4, StandardCharsets.UTF_8);
    }

    /** PulsarAdmissionControlHelper.latestOffsetForTopicPartition, step for step. */
    static MessageId latestOffsetWithin(PulsarAdmin admin, String topicPartition, MessageIdImpl start, long readLimit)
            throws Exception {
        PersistentTopicInternalStats stats = admin.topics().getInternalStats(topicPartition);
        List<LedgerInfo> ledgers = new ArrayList<>();
        for (LedgerInfo info : stats.ledgers) {
            if (info.ledgerId >= start.getLedgerId()) {
                ledgers.add(info);
            }
        }
        ledgers.sort(Comparator.comparingLong(info -> info.ledgerId));
        if (!ledgers.isEmpty()) {
            ledgers.get(ledgers.size() - 1).size = stats.currentLedgerSize;
            ledgers.get(ledgers.size() - 1).entries = stats.currentLedgerEntries;
        }
        int partition = topicPartition.contains("-partition-")
                ? Integer.parseInt(topicPartition.split("-partition-")[1]) : -1;
        MessageId result = start;
        long left = readLimit;
        for (LedgerInfo ledger : ledgers) {
            if (ledger.entries == 0) {
                continue;
            }
            if (left == 0) {
                return result;
            }
            long average = ledger.size / ledger.entries;
            long bytesLeft = ledger.ledgerId == start.getLedgerId()
                    ? average * (ledger.entries - start.getEntryId() - 1) : ledger.size;
            if (left > bytesLeft) {
                left -= bytesLeft;
                result = new MessageIdImpl(ledger.ledgerId, ledger.entries - 1, partition);
            } else {
                long entriesToRead = Math.max(1, left / average);
                long lastEntry = ledger.ledgerId != start.getLedgerId()
                        ? entriesToRead - 1 : start.getEntryId() + entriesToRead;
                result = new MessageIdImpl(ledger.ledgerId, Math.min(ledger.entries - 1, lastEntry), partition);
                left = 0;
            }
        }
        return result;
    }

    /** Labels of the messages after `start` up to and including the entry `end`. */
    static List<String> readAfter(PulsarClient client, String topic, MessageId start, MessageId end) throws Exception {
        List<String> out = new ArrayList<>();
        try (Reader<byte[]> reader = client.newReader().topic(topic).startMessageId(start).create()) {
            while (true) {
                Message<byte[]> m = reader.readNext(5, TimeUnit.SECONDS);
                if (m == null) {
                    throw new AssertionError("range ended early after " + out);
                }
                out.add(label(m));
                if (m.getMessageId().equals(end)) {
                    return out;
                }
            }
        }
    }

    static long average(LedgerInfo ledger) {
        return ledger.size / ledger.entries;
    }

    @ConnectorScenario
    public static void connectorInternalStatsAcrossRollover(PulsarAdmin admin, PulsarClient client) throws Exception {
        String topic = topic("stats");
        Consumer<GenericRecord> driver = driverSubscription(client, topic);
        List<MessageId> ids = produce(client, topic, 0, 10);
        PersistentTopicInternalStats stats = admin.topics().getInternalStats(topic);
        expectEqual("numberOfEntries", 10L, stats.numberOfEntries);
        MessageIdImpl last = (MessageIdImpl) ids.get(9);
        expectEqual("lastConfirmedEntry", last.getLedgerId() + ":" + last.getEntryId(), stats.lastConfirmedEntry);
        List<Long> ledgerOfMessage = new ArrayList<>();
        for (MessageId id : ids) {
            ledgerOfMessage.add(((MessageIdImpl) id).getLedgerId());
        }
        List<Long> ledgerIds = new ArrayList<>();
        long entries = 0;
        long size = 0;
        for (LedgerInfo info : stats.ledgers) {
            ledgerIds.add(info.ledgerId);
            boolean current = info == stats.ledgers.get(stats.ledgers.size() - 1);
            long infoEntries = current ? stats.currentLedgerEntries : info.entries;
            long infoSize = current ? stats.currentLedgerSize : info.size;
            expectEqual("entries of ledger " + info.ledgerId,
                    ledgerOfMessage.stream().filter(l -> l == info.ledgerId).count(), infoEntries);
            if (infoEntries > 0 && infoSize / infoEntries < PAYLOAD_BYTES) {
                throw new AssertionError("ledger " + info.ledgerId + " size " + infoSize + " for " + infoEntries + " entries");
            }
            entries += infoEntries;
            size += infoSize;
        }
        expectEqual("ledgers cover the messages", new ArrayList<>(new java.util.TreeSet<>(ledgerOfMessage)),
                ledgerIds.subList(0, 3));
        expectEqual("entries over the ledgers", 10L, entries);
        expectEqual("sizes over the ledgers", stats.totalSize, size);
        driver.unsubscribe();
        driver.close();
    }

    @ConnectorScenario
    public static void connectorMaxBytesPerTriggerRounds(PulsarAdmin admin, PulsarClient client) throws Exception {
        String topic = topic("maxbytes");
        Consumer<GenericRecord> driver = driverSubscription(client, topic);
        List<MessageId> ids = produce(client, topic, 0, 10);
        List<LedgerInfo> ledgers = admin.topics().getInternalStats(topic).ledgers;
        LedgerInfo first = ledgers.get(0);
        long second = average(ledgers.get(1));
        MessageIdImpl earliest = (MessageIdImpl) MessageId.earliest;
        // Round 1 from earliest: a whole first ledger, then two and a half entries' worth.
        MessageId end1 = latestOffsetWithin(admin, topic, earliest, first.size + second * 5 / 2);
        expectEqual("round 1 end", ids.get(5), end1);
        expectEqual("round 1 range", List.of("m000", "m001", "m002", "m003", "m004", "m005"),
                readAfter(client, topic, MessageId.earliest, end1));
        // Round 2 from (L2, 1): the rest of L2, then one and a half entries of the current ledger.
        PersistentTopicInternalStats now = admin.topics().getInternalStats(topic);
        long third = now.currentLedgerSize / now.currentLedgerEntries;
        MessageId end2 = latestOffsetWithin(admin, topic, (MessageIdImpl) end1, second * 2 + 1 + third * 3 / 2);
        expectEqual("round 2 end", ids.get(8), end2);
        expectEqual("round 2 range", List.of("m006", "m007", "m008"), readAfter(client, topic, end1, end2));
        MessageId end3 = latestOffsetWithin(admin, topic, (MessageIdImpl) end2, Long.MAX_VALUE / 4);
        expectEqual("round 3 end", ids.get(9), end3);
        expectEqual("round 3 range", List.of("m009"), readAfter(client, topic, end2, end3));
        driver.unsubscribe();
        driver.close();
    }

    @ConnectorScenario
    public static void connectorMaxBytesOnPartition(PulsarAdmin admin, PulsarClient client) throws Exception {
        String topic = topic("maxbytes-part");
        admin.topics().createPartitionedTopic(topic, 2);
        String partition = topic + "-partition-1";
        Consumer<GenericRecord> driver = driverSubscription(client, partition);
        List<MessageId> ids = produce(client, partition, 0, 6);
        MessageIdImpl sixth = (MessageIdImpl) ids.get(5);
        MessageId end = latestOffsetWithin(admin, partition, (MessageIdImpl) MessageId.earliest, Long.MAX_VALUE / 4);
        expectEqual("end of partition 1", new MessageIdImpl(sixth.getLedgerId(), sixth.getEntryId(), 1), end);
        expectEqual("empty partition 0 stays at earliest", MessageId.earliest,
                latestOffsetWithin(admin, topic + "-partition-0", (MessageIdImpl) MessageId.earliest, 1000));
        driver.unsubscribe();
        driver.close();
    }

    static Consumer<GenericRecord> cached(PulsarClient client, String topic, String subscription) throws Exception {
        return client.newConsumer(Schema.AUTO_CONSUME()).topic(topic).subscriptionName(subscription)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    /** The query's driver subscription "<prefix>-<topic>", made before the data: without any
     *  subscription (and no retention) the broker deletes each ledger once it is closed. */
    static Consumer<GenericRecord> driverSubscription(PulsarClient client, String topic) throws Exception {
        return cached(client, topic, "spark-pulsar-" + UUID.randomUUID() + "-" + topic);
    }

    @ConnectorScenario
    public static void connectorSubscriptionsCommitAndCleanup(PulsarAdmin admin, PulsarClient client) throws Exception {
        String topic = topic("subs");
        String subscription = "spark-pulsar-" + UUID.randomUUID() + "-" + topic;
        Consumer<GenericRecord> consumer = cached(client, topic, subscription);
        List<MessageId> ids = produce(client, topic, 0, 5);
        expectEqual("driver subscription listed", List.of(subscription), admin.topics().getSubscriptions(topic));
        consumer.seek(ids.get(2));                                   // commitCursorToOffset
        MessageIdImpl target = (MessageIdImpl) ids.get(2);
        PersistentTopicInternalStats stats = admin.topics().getInternalStats(topic);
        expectEqual("cursor of the driver subscription", List.of(subscription), new ArrayList<>(stats.cursors.keySet()));
        expectEqual("mark-delete after the commit", target.getLedgerId() + ":" + (target.getEntryId() - 1),
                stats.cursors.get(subscription).markDeletePosition);
        expectEqual("backlog after the commit", 3L,
                admin.topics().getStats(topic).getSubscriptions().get(subscription).getMsgBacklog());
        consumer.unsubscribe();                                      // removeCursor
        consumer.close();
        expectEqual("subscriptions after removeCursor", List.of(), admin.topics().getSubscriptions(topic));
    }

    @ConnectorScenario
    public static void connectorSubscriptionsOfPartitionedTopic(PulsarAdmin admin, PulsarClient client) throws Exception {
        String topic = topic("subs-part");
        admin.topics().createPartitionedTopic(topic, 2);
        String prefix = "spark-pulsar-" + UUID.randomUUID();
        List<Consumer<GenericRecord>> perPartition = new ArrayList<>();
        for (int p = 0; p < 2; p++) {
            String tp = topic + "-partition-" + p;
            perPartition.add(cached(client, tp, prefix + "-" + tp));
            expectEqual("subscription of " + tp, List.of(prefix + "-" + tp), admin.topics().getSubscriptions(tp));
        }
        // removeCursor unsubscribes "<prefix>-<topic>" (the configured topic), not the partitions' ones.
        Consumer<GenericRecord> parent = cached(client, topic, prefix + "-" + topic);
        parent.unsubscribe();
        parent.close();
        for (int p = 0; p < 2; p++) {
            String tp = topic + "-partition-" + p;
            expectEqual("left on " + tp, List.of(prefix + "-" + tp), admin.topics().getSubscriptions(tp));
            perPartition.get(p).close();
        }
    }
}
