package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.expectQuiet;
import static pulsard.compat.Ctx.payloads;
import static pulsard.compat.Ctx.receive;
import static pulsard.compat.Ctx.texts;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;

/**
 * Topic limits set through the admin REST API (PULSAR_WEB_URL), as the Java client meets them:
 * the unacknowledged messages a Shared consumer may hold under the limit in force, and Pulsar's
 * refusals with their messages. Pulsar applies policies asynchronously: a change is awaited.
 */
public final class LimitScenarios {
    private LimitScenarios() {}

    static final long SETTLE_MS = 10000;
    static final int QUIET_MS = 500;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    /** A REST call that must answer 204; body is JSON or null. */
    static void admin(String method, String path, String body) throws Exception {
        String webUrl = System.getenv("PULSAR_WEB_URL");
        check(webUrl != null, "PULSAR_WEB_URL is not set");
        HttpRequest.BodyPublisher publisher = body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
        HttpRequest request = HttpRequest.newBuilder(URI.create(webUrl + path))
                .header("Content-Type", "application/json").method(method, publisher).build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        expectEqual(method + " " + path + " (" + response.body() + ")", 204, response.statusCode());
    }

    /** A namespace of the scenario's own, with these policies (path, JSON) set before any topic loads. */
    static String namespace(String... policies) throws Exception {
        String name = "public/java-limits-" + UUID.randomUUID().toString().substring(0, 8);
        admin("PUT", "/admin/v2/namespaces/" + name, null);
        for (int i = 0; i < policies.length; i += 2) {
            admin("POST", "/admin/v2/namespaces/" + name + "/" + policies[i], policies[i + 1]);
        }
        return name;
    }

    static Consumer<byte[]> shared(Ctx ctx, String topic, String subscription, int receiverQueue)
            throws PulsarClientException {
        return ctx.client.newConsumer().topic(topic).subscriptionName(subscription)
                .subscriptionType(SubscriptionType.Shared).receiverQueueSize(receiverQueue)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    /** Until a new subscription's consumer, taking one message per read, holds `expected`. */
    static void awaitLimit(Ctx ctx, String topic, int expected) throws Exception {
        long deadline = System.currentTimeMillis() + SETTLE_MS;
        while (true) {
            Consumer<byte[]> probe = shared(ctx, topic, "probe-" + UUID.randomUUID(), 1);
            int held = 0;
            while (probe.receive(QUIET_MS, TimeUnit.MILLISECONDS) != null) {
                held++;
            }
            probe.unsubscribe();
            if (held == expected) {
                return;
            }
            check(System.currentTimeMillis() < deadline, "the limit in force lets " + held + " through, not " + expected);
        }
    }

    /** A Shared consumer connected all along holds what the limit in force lets it: namespace 4,
     *  then topic 8 (reached at its next ack), then the broker's once both are removed. */
    static void unackedLimitFollowsThePolicy(Ctx ctx, String namespacePolicy, String topicPolicy) throws Exception {
        String ns = namespace();
        String topic = "persistent://" + ns + "/t";
        String topicPath = "/admin/v2/persistent/" + ns + "/t/" + topicPolicy;
        String namespacePath = "/admin/v2/namespaces/" + ns + "/" + namespacePolicy;
        List<String> sent = payloads(20, "u");
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).enableBatching(false).create()) {
            for (String s : sent) {
                producer.send(bytes(s));
            }
        }
        admin("POST", namespacePath, "4");
        awaitLimit(ctx, topic, 4);
        Consumer<byte[]> consumer = shared(ctx, topic, "main", 1);
        List<Message<byte[]>> held = receive(consumer, 4, false);
        expectEqual("held under the namespace's 4", sent.subList(0, 4), texts(held));
        expectQuiet(consumer);

        admin("POST", topicPath, "8");
        awaitLimit(ctx, topic, 8);
        consumer.acknowledge(held.remove(0));              // 3 left: below half of 8
        List<Message<byte[]>> more = receive(consumer, 5, false);
        expectEqual("held under the topic's 8", sent.subList(4, 9), texts(more));
        expectQuiet(consumer);
        held.addAll(more);

        admin("DELETE", topicPath, null);
        admin("DELETE", namespacePath, null);
        awaitLimit(ctx, topic, sent.size());
        consumer.acknowledge(held.remove(0));
        expectEqual("the rest under the broker's limit", sent.subList(9, 20), texts(receive(consumer, 11, false)));
        consumer.close();
    }

    @LimitScenario
    public static void unackedPerConsumerFollowsThePolicy(Ctx ctx) throws Exception {
        unackedLimitFollowsThePolicy(ctx, "maxUnackedMessagesPerConsumer", "maxUnackedMessagesOnConsumer");
    }

    @LimitScenario
    public static void unackedPerSubscriptionFollowsThePolicy(Ctx ctx) throws Exception {
        unackedLimitFollowsThePolicy(ctx, "maxUnackedMessagesPerSubscription", "maxUnackedMessagesOnSubscription");
    }

    interface Attempt {
        void run() throws Exception;
    }

    /** The attempt fails with this exception type, its message naming the refusal. */
    static void refused(String what, Class<? extends PulsarClientException> type, String text, Attempt attempt)
            throws Exception {
        try {
            attempt.run();
        } catch (PulsarClientException e) {
            check(type.isInstance(e), what + ": expected " + type.getSimpleName() + " but got " + e);
            check(e.getMessage().contains(text), what + ": " + e.getMessage() + " does not say " + text);
            return;
        }
        throw new AssertionError(what + " was admitted");
    }

    @LimitScenario
    public static void refusalsAsTheJavaClientSeesThem(Ctx ctx) throws Exception {
        String ns = namespace("maxProducersPerTopic", "1", "maxConsumersPerTopic", "2",
                "maxConsumersPerSubscription", "1", "maxSubscriptionsPerTopic", "2",
                "subscriptionTypesEnabled", "[\"Shared\",\"Failover\"]");
        String produced = "persistent://" + ns + "/produced";
        Producer<byte[]> producer = ctx.client.newProducer().topic(produced).create();
        refused("a second producer", PulsarClientException.ProducerBusyException.class,
                "Topic '" + produced + "' reached max producers limit",
                () -> ctx.client.newProducer().topic(produced).create());

        String consumed = "persistent://" + ns + "/consumed";
        shared(ctx, consumed, "s1", 10);
        refused("a second consumer of s1", PulsarClientException.ConsumerBusyException.class,
                "Subscription reached max consumers limit", () -> shared(ctx, consumed, "s1", 10));
        Consumer<byte[]> s2 = shared(ctx, consumed, "s2", 10);
        refused("a third consumer", PulsarClientException.ConsumerBusyException.class,
                "Topic reached max consumers limit", () -> shared(ctx, consumed, "s3", 10));
        s2.close();
        refused("a third subscription", PulsarClientException.NotAllowedException.class,
                "Exceed the maximum number of subscriptions of the topic: " + consumed,
                () -> shared(ctx, consumed, "s3", 10));
        refused("an Exclusive consumer", PulsarClientException.NotAllowedException.class,
                "Topic[{" + consumed + "}] doesn't support Exclusive sub type!",
                () -> ctx.client.newConsumer().topic(consumed).subscriptionName("s2").subscribe());
        ctx.client.newConsumer().topic(consumed).subscriptionName("s2").subscriptionType(SubscriptionType.Failover)
                .subscribe().close();

        admin("POST", "/admin/v2/" + produced.replace("://", "/") + "/maxMessageSize", "10000");
        long deadline = System.currentTimeMillis() + SETTLE_MS;
        while (true) {   // messages sent before the limit applies are stored
            try {
                producer.send(new byte[20000]);
            } catch (PulsarClientException.NotAllowedException e) {
                check(e.getMessage().contains("Exceed maximum message size"), e.getMessage());
                break;
            }
            check(System.currentTimeMillis() < deadline, "a message above the topic's maxMessageSize is still taken");
            Thread.sleep(200);
        }
        producer.send(bytes("small enough"));   // the producer carries on
        producer.close();
    }
}
