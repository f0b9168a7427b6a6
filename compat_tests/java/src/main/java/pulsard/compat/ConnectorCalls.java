package pulsard.compat;

import static pulsard.compat.Ctx.check;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.impl.MessageIdImpl;

/**
 * The Spark connector's (streamnative/pulsar-spark) sequences of client calls, written anew from
 * reading its sources, so the scenarios replay exactly what it asks of a broker. Each method
 * names the connector code it mirrors; failures the connector reports as data loss throw here.
 */
final class ConnectorCalls {
    /** The connector's pollTimeoutMs for reader.readNext (bounded here, 120 s by default there). */
    static final int POLL_TIMEOUT_MS = 5000;

    private ConnectorCalls() {}

    /** PulsarProvider.getSubscriptionPrefix: "spark-pulsar-<uuid>" ("spark-pulsar-batch-<uuid>" for batch). */
    static String prefix(boolean batch) {
        return (batch ? "spark-pulsar-batch-" : "spark-pulsar-") + UUID.randomUUID();
    }

    /** PulsarHelper.extractSubscription without a predefined one: "<prefix>-<topic partition>",
     *  so the durable subscription's name contains "://" and "/". */
    static String subscription(String prefix, String topicPartition) {
        return prefix + "-" + topicPartition;
    }

    /** CachedConsumer's loader: a durable AUTO_CONSUME consumer starting at earliest. */
    static Consumer<GenericRecord> cachedConsumer(PulsarClient client, String topic, String subscription)
            throws Exception {
        return client.newConsumer(Schema.AUTO_CONSUME()).topic(topic).subscriptionName(subscription)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    /** PulsarHelper.fetchLatestOffsetForTopic: getLastMessageId, then seekableLatestMid. */
    static MessageId latestOffset(Consumer<?> cached) throws Exception {
        MessageId last = cached.getLastMessageId();
        return exists(last) ? last : MessageId.earliest;
    }

    /** PulsarSourceUtils.messageExists. */
    static boolean exists(MessageId id) {
        MessageIdAdv adv = (MessageIdAdv) id;
        return adv.getLedgerId() != -1 && adv.getEntryId() != -1;
    }

    /** PulsarSourceUtils.mid2Impl: the entry's id without a batch index. */
    static MessageId entryId(MessageId id) {
        MessageIdAdv adv = (MessageIdAdv) id;
        return new MessageIdImpl(adv.getLedgerId(), adv.getEntryId(), adv.getPartitionIndex());
    }

    /** PulsarHelper.getTopicPartitions for one topic. */
    static List<String> partitions(PulsarClient client, String topic) throws Exception {
        return client.getPartitionsForTopic(topic).get(10, TimeUnit.SECONDS);
    }

    /** PulsarHelper.getUserProvidedMessageId: an inclusive reader at the offset (or earliest and a
     *  seek by time), its first message's entry id is where the query starts; earliest if none. */
    static MessageId userProvidedStart(PulsarClient client, String topic, String prefix, Long time, MessageId offset)
            throws Exception {
        try (Reader<byte[]> reader = client.newReader().subscriptionRolePrefix(prefix).topic(topic)
                .startMessageId(offset == null ? MessageId.earliest : offset).startMessageIdInclusive().create()) {
            if (time != null) {
                reader.seek(time);
            }
            Message<byte[]> first = reader.readNext(POLL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            return first == null ? MessageId.earliest : entryId(first.getMessageId());
        }
    }

    /**
     * PulsarSourceRDDBase.computeInner: read (start, end] -- or [start, end] when the start is
     * user provided or earliest -- with an inclusive reader, up to the last message of end's entry,
     * checking what failOnDataLoss checks (the first message is the start, no id is skipped).
     */
    static <T> List<Message<T>> readRange(PulsarClient client, Schema<T> schema, String topic, String prefix,
            MessageId start, boolean userProvided, MessageId end) throws Exception {
        List<Message<T>> out = new ArrayList<>();
        if (start.equals(end) || !exists(end)) {
            return out;
        }
        if (userProvided && exists(start)) {
            start = entryId(start);   // UserProvidedMessageId keeps ledger, entry and partition only
        }
        try (Reader<T> reader = client.newReader(schema).subscriptionRolePrefix(prefix).topic(topic)
                .startMessageId(start).startMessageIdInclusive().create()) {
            Message<T> previous = null;
            if (!userProvided && !start.equals(MessageId.earliest)) {
                previous = next(reader, "cannot read data at " + start + " from topic " + topic);
                check(roughlyEqual(previous.getMessageId(), start), "Potential Data Loss: intended to start at "
                        + start + ", actually we get " + previous.getMessageId());
                if (sameEntry(previous.getMessageId(), end)) {
                    return out;
                }
            }
            while (true) {
                Message<T> current = next(reader, "we didn't get enough messages as promised from " + topic);
                if (previous != null) {
                    checkContiguous(current.getMessageId(), previous.getMessageId());
                }
                out.add(current);
                previous = current;
                if (sameEntry(current.getMessageId(), end) && isLastOfEntry(current.getMessageId())) {
                    return out;
                }
            }
        }
    }

    private static <T> Message<T> next(Reader<T> reader, String missing) throws Exception {
        Message<T> msg = reader.readNext(POLL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        check(msg != null, missing);
        return msg;
    }

    /** PulsarSourceUtils.messageIdRoughEquals: batch indexes compared only when both have one. */
    static boolean roughlyEqual(MessageId a, MessageId b) {
        MessageIdAdv l = (MessageIdAdv) a;
        MessageIdAdv r = (MessageIdAdv) b;
        boolean bothBatched = l.getBatchIndex() >= 0 && r.getBatchIndex() >= 0;
        return sameEntry(a, b) && l.getPartitionIndex() == r.getPartitionIndex()
                && (!bothBatched || l.getBatchIndex() == r.getBatchIndex());
    }

    /** PulsarSourceUtils.enteredEnd. */
    static boolean sameEntry(MessageId a, MessageId b) {
        MessageIdAdv l = (MessageIdAdv) a;
        MessageIdAdv r = (MessageIdAdv) b;
        return l.getLedgerId() == r.getLedgerId() && l.getEntryId() == r.getEntryId();
    }

    /** PulsarSourceUtils.isLastMessage. */
    static boolean isLastOfEntry(MessageId id) {
        MessageIdAdv adv = (MessageIdAdv) id;
        return adv.getBatchIndex() < 0 || adv.getBatchIndex() == adv.getBatchSize() - 1;
    }

    /** computeInner's detectDataLoss: inside a ledger, ids advance by one batch index or one entry. */
    static void checkContiguous(MessageId current, MessageId previous) {
        MessageIdAdv c = (MessageIdAdv) current;
        MessageIdAdv p = (MessageIdAdv) previous;
        if (c.getLedgerId() != p.getLedgerId()) {
            return;
        }
        boolean ok;
        if (c.getEntryId() == p.getEntryId()) {
            ok = c.getBatchIndex() == p.getBatchIndex() + 1;
        } else {
            ok = c.getEntryId() == p.getEntryId() + 1 && c.getBatchIndex() <= 0 && isLastOfEntry(previous);
        }
        check(ok, "Unexpected message skipping: previous " + previous + ", current " + current);
    }

    /** Send contents through a producer that cuts batches of exactly batchSize (0: no batching). */
    static List<MessageId> produce(PulsarClient client, String topic, List<String> contents, int batchSize)
            throws Exception {
        var builder = client.newProducer(Schema.STRING).topic(topic).enableBatching(batchSize > 0);
        if (batchSize > 0) {
            builder.batchingMaxMessages(batchSize).batchingMaxPublishDelay(1, TimeUnit.HOURS);
        }
        List<MessageId> ids = new ArrayList<>();
        try (Producer<String> producer = builder.create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>();
            for (String content : contents) {
                sent.add(producer.sendAsync(content));
            }
            producer.flush();
            for (CompletableFuture<MessageId> f : sent) {
                ids.add(f.get(10, TimeUnit.SECONDS));
            }
        }
        return ids;
    }

    static <T> List<T> values(List<Message<T>> messages) {
        List<T> out = new ArrayList<>();
        for (Message<T> m : messages) {
            out.add(m.getValue());
        }
        return out;
    }

    static <T> List<MessageId> ids(List<Message<T>> messages) {
        List<MessageId> out = new ArrayList<>();
        for (Message<T> m : messages) {
            out.add(m.getMessageId());
        }
        return out;
    }

    /** (ledger, entry, partition, batch index) of an id, for exact comparisons in messages. */
    static String describe(MessageId id) {
        MessageIdAdv adv = (MessageIdAdv) id;
        return adv.getLedgerId() + ":" + adv.getEntryId() + ":" + adv.getPartitionIndex() + ":" + adv.getBatchIndex();
    }

    static List<String> describeAll(List<MessageId> ids) {
        List<String> out = new ArrayList<>();
        for (MessageId id : ids) {
            out.add(describe(id));
        }
        return out;
    }
}
