package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.expectQuiet;
import static pulsard.compat.Ctx.payloads;
import static pulsard.compat.Ctx.receive;
import static pulsard.compat.Ctx.text;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.ProducerAccessMode;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.impl.MessageIdImpl;

/** Partitioned topics, regex subscriptions, schemas and producer access modes. */
public final class TopicSchemaScenarios {
    private TopicSchemaScenarios() {}

    @Scenario
    public static void partitionedTopic(Ctx ctx) throws Exception {
        String topic = Ctx.topic("partitioned");
        List<String> sent = payloads(30, "pt");
        try (Consumer<byte[]> c = ctx.partitionedClient.newConsumer().topic(topic).subscriptionName("s")
                     .subscriptionType(SubscriptionType.Failover)
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<byte[]> p = ctx.partitionedClient.newProducer().topic(topic).enableBatching(false).create()) {
            expectEqual("partitions", 3, ctx.partitionedClient.getPartitionsForTopic(topic).get().size());
            Map<String, Integer> partitionOfKey = new HashMap<>();
            for (int i = 0; i < sent.size(); i++) {
                String key = "key-" + (i % 6);
                MessageId id = p.newMessage().key(key).value(bytes(sent.get(i))).send();
                int partition = ((MessageIdImpl) id).getPartitionIndex();
                Integer before = partitionOfKey.putIfAbsent(key, partition);
                check(before == null || before == partition, "one key, one partition: " + key);
            }
            check(new TreeSet<>(partitionOfKey.values()).size() > 1, "keys spread over partitions");
            Map<String, List<String>> perKey = new HashMap<>();
            for (Message<byte[]> m : receive(c, sent.size(), true)) {
                perKey.computeIfAbsent(m.getKey(), k -> new ArrayList<>()).add(text(m));
            }
            Ctx.expectKeyOrder(sent, perKey, 6);
            expectQuiet(c);
        }
    }

    @Scenario
    public static void regexSubscription(Ctx ctx) throws Exception {
        String prefix = Ctx.topic("regex");
        List<String> topics = List.of(prefix + "-a", prefix + "-b");
        for (String t : topics) {
            ctx.client.newProducer().topic(t).create().close();
        }
        try (Consumer<byte[]> c = ctx.client.newConsumer().topicsPattern(Pattern.compile(prefix + "-.*"))
                .patternAutoDiscoveryPeriod(1, TimeUnit.SECONDS).subscriptionName("s")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            List<String> expected = new ArrayList<>();
            for (String t : topics) {
                try (Producer<byte[]> p = ctx.client.newProducer().topic(t).create()) {
                    p.send(bytes(t));
                }
                expected.add(t);
            }
            String late = prefix + "-c";
            try (Producer<byte[]> p = ctx.client.newProducer().topic(late).create()) {
                p.send(bytes(late));
            }
            expected.add(late);
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 15000;
            while (got.size() < expected.size() && System.currentTimeMillis() < deadline) {
                Message<byte[]> m = c.receive(500, TimeUnit.MILLISECONDS);
                if (m != null) {
                    got.add(text(m));
                    c.acknowledge(m);
                }
            }
            expectEqual("one message from each matching topic", new TreeSet<>(expected), new TreeSet<>(got));
            expectEqual("count", expected.size(), got.size());
            expectQuiet(c);
        }
    }

    /** A JSON / Avro record: public fields and a no-argument constructor. */
    public static class Reading {
        public String sensor;
        public double value;
        public long at;

        public Reading() {}

        Reading(String sensor, double value, long at) {
            this.sensor = sensor;
            this.value = value;
            this.at = at;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Reading r && r.sensor.equals(sensor) && r.value == value && r.at == at;
        }

        @Override
        public int hashCode() {
            return Objects.hash(sensor, value, at);
        }

        @Override
        public String toString() {
            return sensor + "=" + value + "@" + at;
        }
    }

    static <T> void schemaRoundTrip(Ctx ctx, String tag, Schema<T> schema, List<T> values) throws Exception {
        String topic = Ctx.topic(tag);
        try (Producer<T> p = ctx.client.newProducer(schema).topic(topic).create();
             Consumer<T> c = ctx.client.newConsumer(schema).topic(topic).subscriptionName("s")
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            for (T v : values) {
                p.send(v);
            }
            List<T> got = new ArrayList<>();
            for (int i = 0; i < values.size(); i++) {
                Message<T> m = c.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(m != null, "schema message " + i + " missing");
                got.add(m.getValue());
                c.acknowledge(m);
            }
            expectEqual(tag + " values", values, got);
        }
    }

    @Scenario
    public static void schemaString(Ctx ctx) throws Exception {
        schemaRoundTrip(ctx, "string", Schema.STRING, List.of("zero", "één", "二"));
    }

    @Scenario
    public static void schemaJson(Ctx ctx) throws Exception {
        schemaRoundTrip(ctx, "json", Schema.JSON(Reading.class),
                List.of(new Reading("a", 1.5, 1L), new Reading("b", -2.0, 2L)));
    }

    @Scenario
    public static void schemaAvro(Ctx ctx) throws Exception {
        schemaRoundTrip(ctx, "avro", Schema.AVRO(Reading.class),
                List.of(new Reading("a", 1.5, 1L), new Reading("b", -2.0, 2L)));
        String topic = Ctx.topic("avro-clash");
        ctx.client.newProducer(Schema.AVRO(Reading.class)).topic(topic).create().close();
        try {
            ctx.client.newProducer(Schema.JSON(Reading.class)).topic(topic).create().close();
            throw new AssertionError("a JSON producer joined a topic whose schema is Avro");
        } catch (PulsarClientException.IncompatibleSchemaException expected) {
            // refused with IncompatibleSchema
        }
    }

    static Producer<byte[]> producer(Ctx ctx, String topic, ProducerAccessMode mode) throws Exception {
        return ctx.client.newProducer().topic(topic).accessMode(mode).sendTimeout(5, TimeUnit.SECONDS).create();
    }

    @Scenario
    public static void accessModeExclusive(Ctx ctx) throws Exception {
        String topic = Ctx.topic("exclusive-producer");
        try (Producer<byte[]> first = producer(ctx, topic, ProducerAccessMode.Exclusive)) {
            for (ProducerAccessMode other : List.of(ProducerAccessMode.Shared, ProducerAccessMode.Exclusive)) {
                try {
                    producer(ctx, topic, other).close();
                    throw new AssertionError(other + " producer admitted next to an Exclusive one");
                } catch (PulsarClientException.ProducerFencedException | PulsarClientException.ProducerBusyException e) {
                    // refused
                }
            }
            first.send(bytes("still mine"));
        }
        producer(ctx, topic, ProducerAccessMode.Exclusive).close();   // free again once closed
    }

    @Scenario
    public static void accessModeWaitForExclusive(Ctx ctx) throws Exception {
        String topic = Ctx.topic("wait-producer");
        Producer<byte[]> first = producer(ctx, topic, ProducerAccessMode.Exclusive);
        CompletableFuture<Producer<byte[]>> waiting = ctx.client.newProducer().topic(topic)
                .accessMode(ProducerAccessMode.WaitForExclusive).createAsync();
        Thread.sleep(500);
        check(!waiting.isDone(), "WaitForExclusive waits while another producer holds the topic");
        first.close();
        try (Producer<byte[]> second = waiting.get(10, TimeUnit.SECONDS)) {
            second.send(bytes("now mine"));
        }
    }

    @Scenario
    public static void accessModeExclusiveWithFencing(Ctx ctx) throws Exception {
        String topic = Ctx.topic("fencing-producer");
        Producer<byte[]> first = producer(ctx, topic, ProducerAccessMode.Shared);
        try (Producer<byte[]> fencer = producer(ctx, topic, ProducerAccessMode.ExclusiveWithFencing)) {
            fencer.send(bytes("fenced the others"));
            try {
                first.send(bytes("from the fenced one"));
                throw new AssertionError("a fenced producer could still send");
            } catch (PulsarClientException e) {
                // fenced
            }
        } finally {
            first.closeAsync();
        }
    }
}
