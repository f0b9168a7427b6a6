package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.expectQuiet;
import static pulsard.compat.Ctx.payloads;
import static pulsard.compat.Ctx.receive;
import static pulsard.compat.Ctx.text;
import static pulsard.compat.Ctx.texts;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerBuilder;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/** Subscription types, individual / cumulative / negative acks, redelivery counts and the DLQ. */
public final class SubscriptionScenarios {
    private SubscriptionScenarios() {}

    static ConsumerBuilder<byte[]> consumer(Ctx ctx, String topic, SubscriptionType type) {
        return ctx.client.newConsumer().topic(topic).subscriptionName("sub").subscriptionType(type)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest);
    }

    static void produce(Ctx ctx, String topic, List<String> contents, boolean keyed) throws Exception {
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).enableBatching(false).create()) {
            for (int i = 0; i < contents.size(); i++) {
                var msg = producer.newMessage().value(bytes(contents.get(i)));
                if (keyed) {
                    msg.key("key-" + (i % 5));
                }
                msg.send();
            }
        }
    }

    @Scenario
    public static void subscriptionExclusive(Ctx ctx) throws Exception {
        String topic = Ctx.topic("exclusive");
        List<String> sent = payloads(10, "ex");
        try (Consumer<byte[]> first = consumer(ctx, topic, SubscriptionType.Exclusive).subscribe()) {
            try {
                consumer(ctx, topic, SubscriptionType.Exclusive).subscribe().close();
                throw new AssertionError("a second consumer joined an Exclusive subscription");
            } catch (PulsarClientException.ConsumerBusyException expected) {
                // the broker refused with ConsumerBusy
            }
            produce(ctx, topic, sent, false);
            expectEqual("all to the one consumer", sent, texts(receive(first, sent.size(), true)));
            expectQuiet(first);
        }
    }

    @Scenario
    public static void subscriptionShared(Ctx ctx) throws Exception {
        String topic = Ctx.topic("shared");
        List<String> sent = payloads(40, "sh");
        try (Consumer<byte[]> a = consumer(ctx, topic, SubscriptionType.Shared).receiverQueueSize(5).subscribe();
             Consumer<byte[]> b = consumer(ctx, topic, SubscriptionType.Shared).receiverQueueSize(5).subscribe()) {
            produce(ctx, topic, sent, false);
            List<String> got = new ArrayList<>();
            Set<String> perConsumer = new HashSet<>();
            while (got.size() < sent.size()) {
                boolean any = false;
                for (Consumer<byte[]> c : List.of(a, b)) {
                    Message<byte[]> m = c.receive(200, TimeUnit.MILLISECONDS);
                    if (m != null) {
                        got.add(text(m));
                        perConsumer.add(c.getConsumerName());
                        c.acknowledge(m);
                        any = true;
                    }
                }
                check(any || got.size() == sent.size(), "stalled after " + got.size() + " messages");
            }
            expectEqual("each message once", new TreeSet<>(sent), new TreeSet<>(got));
            expectEqual("delivered count", sent.size(), got.size());
            expectEqual("both consumers got messages", 2, perConsumer.size());
            expectQuiet(a);
            expectQuiet(b);
        }
    }

    @Scenario
    public static void subscriptionFailover(Ctx ctx) throws Exception {
        String topic = Ctx.topic("failover");
        List<String> sent = payloads(10, "fo");
        Consumer<byte[]> a = consumer(ctx, topic, SubscriptionType.Failover).consumerName("a").subscribe();
        try (Consumer<byte[]> b = consumer(ctx, topic, SubscriptionType.Failover).consumerName("b").subscribe()) {
            produce(ctx, topic, sent.subList(0, 5), false);
            Message<byte[]> firstA = a.receive(2000, TimeUnit.MILLISECONDS);
            Consumer<byte[]> active = firstA != null ? a : b;
            Consumer<byte[]> standby = firstA != null ? b : a;
            List<String> got = new ArrayList<>();
            if (firstA != null) {
                got.add(text(firstA));
                a.acknowledge(firstA);
            }
            got.addAll(texts(receive(active, 5 - got.size(), true)));
            expectEqual("first half to the active consumer", sent.subList(0, 5), got);
            expectQuiet(standby);
            active.close();
            produce(ctx, topic, sent.subList(5, 10), false);
            expectEqual("second half to the standby", sent.subList(5, 10), texts(receive(standby, 5, true)));
            expectQuiet(standby);
            if (active != a) {
                a.close();
            }
        }
    }

    @Scenario
    public static void subscriptionKeyShared(Ctx ctx) throws Exception {
        String topic = Ctx.topic("keyshared");
        List<String> sent = payloads(50, "ks");
        try (Consumer<byte[]> a = consumer(ctx, topic, SubscriptionType.Key_Shared).subscribe();
             Consumer<byte[]> b = consumer(ctx, topic, SubscriptionType.Key_Shared).subscribe()) {
            produce(ctx, topic, sent, true);
            Map<String, String> ownerOfKey = new HashMap<>();
            Map<String, List<String>> perKey = new HashMap<>();
            int total = 0;
            while (total < sent.size()) {
                boolean any = false;
                for (Consumer<byte[]> c : List.of(a, b)) {
                    Message<byte[]> m = c.receive(200, TimeUnit.MILLISECONDS);
                    if (m == null) {
                        continue;
                    }
                    any = true;
                    total++;
                    String owner = ownerOfKey.putIfAbsent(m.getKey(), c.getConsumerName());
                    check(owner == null || owner.equals(c.getConsumerName()), "key " + m.getKey() + " went to two consumers");
                    perKey.computeIfAbsent(m.getKey(), k -> new ArrayList<>()).add(text(m));
                    c.acknowledge(m);
                }
                check(any || total == sent.size(), "stalled after " + total + " messages");
            }
            Ctx.expectKeyOrder(sent, perKey, 5);
            expectQuiet(a);
            expectQuiet(b);
        }
    }

    @Scenario
    public static void ackIndividual(Ctx ctx) throws Exception {
        String topic = Ctx.topic("ackind");
        List<String> sent = payloads(10, "ai");
        produce(ctx, topic, sent, false);
        List<String> unacked = new ArrayList<>();
        try (Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Exclusive).subscribe()) {
            for (Message<byte[]> m : receive(c, 10, false)) {
                int i = sent.indexOf(text(m));
                if (i % 3 == 0) {
                    unacked.add(text(m));
                } else {
                    c.acknowledge(m);
                }
            }
        }
        try (Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Exclusive).subscribe()) {
            expectEqual("only the unacked come back", unacked, texts(receive(c, unacked.size(), true)));
            expectQuiet(c);
        }
    }

    @Scenario
    public static void ackCumulative(Ctx ctx) throws Exception {
        String topic = Ctx.topic("ackcum");
        List<String> sent = payloads(10, "ac");
        produce(ctx, topic, sent, false);
        try (Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Failover).subscribe()) {
            List<Message<byte[]>> got = receive(c, 10, false);
            c.acknowledgeCumulative(got.get(5));
        }
        try (Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Failover).subscribe()) {
            expectEqual("after the cumulative ack", sent.subList(6, 10), texts(receive(c, 4, true)));
            expectQuiet(c);
        }
        try (Consumer<byte[]> s = ctx.client.newConsumer().topic(topic).subscriptionName("shared")
                .subscriptionType(SubscriptionType.Shared).subscribe()) {
            produce(ctx, topic, List.of("late"), false);
            Message<byte[]> m = receive(s, 1, false).get(0);
            try {
                s.acknowledgeCumulative(m);
                throw new AssertionError("cumulative ack allowed on a Shared subscription");
            } catch (PulsarClientException.InvalidConfigurationException expected) {
                // the client refuses before the broker sees it
            }
        }
    }

    @Scenario
    public static void negativeAckRedelivery(Ctx ctx) throws Exception {
        String topic = Ctx.topic("nack");
        List<String> sent = payloads(3, "na");
        try (Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Shared)
                .negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS).subscribe()) {
            produce(ctx, topic, sent, false);
            for (int round = 0; round < 3; round++) {
                List<Message<byte[]>> got = receive(c, 3, false);
                expectEqual("round " + round + " contents", new TreeSet<>(sent), new TreeSet<>(texts(got)));
                for (Message<byte[]> m : got) {
                    expectEqual("redelivery count of " + text(m), round, m.getRedeliveryCount());
                    if (round < 2) {
                        c.negativeAcknowledge(m);
                    } else {
                        c.acknowledge(m);
                    }
                }
            }
            expectQuiet(c);
        }
    }

    @Scenario
    public static void deadLetterQueue(Ctx ctx) throws Exception {
        String topic = Ctx.topic("dlq");
        String dlq = topic + "-my-dlq";
        try (Consumer<byte[]> dead = ctx.client.newConsumer().topic(dlq).subscriptionName("dlq-reader")
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Consumer<byte[]> c = consumer(ctx, topic, SubscriptionType.Shared)
                     .negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS)
                     .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(2).deadLetterTopic(dlq).build())
                     .subscribe()) {
            try (Producer<byte[]> p = ctx.client.newProducer().topic(topic).enableBatching(false).create()) {
                p.newMessage().key("poison-key").property("origin", "java").value(bytes("poison")).send();
                p.newMessage().value(bytes("fine")).send();
            }
            int poisonDeliveries = 0;
            boolean fineSeen = false;
            for (int i = 0; i < 4; i++) {
                Message<byte[]> m = c.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(m != null, "delivery " + i + " missing (poison " + poisonDeliveries + ", fine " + fineSeen + ")");
                if (text(m).equals("fine")) {
                    fineSeen = true;
                    c.acknowledge(m);
                } else {
                    expectEqual("redelivery count", poisonDeliveries, m.getRedeliveryCount());
                    poisonDeliveries++;
                    c.negativeAcknowledge(m);
                }
            }
            expectEqual("poison deliveries before the DLQ", 3, poisonDeliveries);
            Message<byte[]> moved = receive(dead, 1, true).get(0);
            expectEqual("dead letter payload", "poison", text(moved));
            expectEqual("dead letter key", "poison-key", moved.getKey());
            expectEqual("dead letter property", "java", moved.getProperty("origin"));
            expectQuiet(c);
            expectQuiet(dead);
        }
    }
}
