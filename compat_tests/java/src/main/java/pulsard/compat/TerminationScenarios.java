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
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

/** Topic termination through the admin REST API, as the Java client sees it. */
public final class TerminationScenarios {
    private TerminationScenarios() {}

    static final long END_WAIT_MS = 5000;

    /** POST .../terminate on the broker's web port (PULSAR_WEB_URL); returns the JSON answer. */
    static String terminate(String topic) throws Exception {
        String webUrl = System.getenv("PULSAR_WEB_URL");
        check(webUrl != null, "PULSAR_WEB_URL is not set");
        String path = "/admin/v2/" + topic.replace("://", "/") + "/terminate";
        HttpRequest request = HttpRequest.newBuilder(URI.create(webUrl + path))
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> response = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
        expectEqual("terminate status", 200, response.statusCode());
        return response.body().replace(" ", "");
    }

    static void waitFor(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + END_WAIT_MS;
        while (!condition.getAsBoolean()) {
            check(System.currentTimeMillis() < deadline, what + " within " + END_WAIT_MS + " ms");
            Thread.sleep(50);
        }
    }

    static Consumer<byte[]> subscribe(Ctx ctx, String topic, String name, SubscriptionInitialPosition from)
            throws PulsarClientException {
        return ctx.client.newConsumer().topic(topic).subscriptionName(name).subscriptionInitialPosition(from)
                .subscribe();
    }

    @Scenario
    public static void terminatedTopic(Ctx ctx) throws Exception {
        String topic = Ctx.topic("terminate");
        List<String> sent = payloads(5, "tm");
        Consumer<byte[]> drained = subscribe(ctx, topic, "drained", SubscriptionInitialPosition.Earliest);
        Consumer<byte[]> lagging = subscribe(ctx, topic, "lagging", SubscriptionInitialPosition.Earliest);
        Producer<byte[]> producer = ctx.client.newProducer().topic(topic).enableBatching(false).create();
        MessageId last = null;
        for (String s : sent) {
            last = producer.send(bytes(s));
        }
        MessageIdAdv end = (MessageIdAdv) last;
        expectEqual("terminate answer",
                "{\"ledgerId\":" + end.getLedgerId() + ",\"entryId\":" + end.getEntryId() + ",\"partitionIndex\":-1}",
                terminate(topic));

        try {
            producer.send(bytes("after the end"));
            throw new AssertionError("a send after termination succeeded");
        } catch (PulsarClientException.TopicTerminatedException expected) {
            // the connected producer was closed by the broker and cannot come back
        }
        try {
            ctx.client.newProducer().topic(topic).create();
            throw new AssertionError("a producer was created on a terminated topic");
        } catch (PulsarClientException.TopicTerminatedException expected) {
            // new producers are refused for good
        }

        expectEqual("drained consumer", sent, texts(receive(drained, 5, true)));
        waitFor("the drained consumer reaches the end of the topic", drained::hasReachedEndOfTopic);
        expectQuiet(drained);

        var held = receive(lagging, 5, false);
        expectEqual("lagging consumer", sent, texts(held));
        Thread.sleep(Ctx.QUIET_MS);
        check(!lagging.hasReachedEndOfTopic(), "the end is not reached while messages are unacknowledged");
        for (var msg : held) {
            lagging.acknowledge(msg);
        }
        waitFor("the lagging consumer reaches the end once it acknowledged all", lagging::hasReachedEndOfTopic);

        Consumer<byte[]> latecomer = subscribe(ctx, topic, "latecomer", SubscriptionInitialPosition.Latest);
        waitFor("a new subscription at the end reaches it at once", latecomer::hasReachedEndOfTopic);

        try (Reader<byte[]> reader = ctx.client.newReader().topic(topic).startMessageId(MessageId.earliest).create()) {
            expectEqual("reader", sent, ReaderSeekScenarios.readAll(reader, 5));
            waitFor("the reader reaches the end of the topic", reader::hasReachedEndOfTopic);
            check(!reader.hasMessageAvailable(), "a reader at the end has nothing available");
        }
        for (Consumer<byte[]> c : List.of(drained, lagging, latecomer)) {
            c.close();
        }
        producer.closeAsync().get(5, TimeUnit.SECONDS);
    }
}
