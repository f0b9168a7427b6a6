package pulsard.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.PulsarClientSharedResources;

/** What every scenario needs: clients on the two brokers, names, bounded receives, checks. */
public final class Ctx {
    static final int RECEIVE_TIMEOUT_MS = 5000;
    static final int QUIET_MS = 500;

    final String serviceUrl;
    final String partitionedServiceUrl;
    final PulsarClient client;
    final PulsarClient partitionedClient;

    Ctx(String serviceUrl, String partitionedServiceUrl) throws PulsarClientException {
        this.serviceUrl = serviceUrl;
        this.partitionedServiceUrl = partitionedServiceUrl;
        this.client = newClient(serviceUrl);
        this.partitionedClient = newClient(partitionedServiceUrl);
    }

    /**
     * The threads every client of this JVM runs on: a client with threads of its own waits out
     * Netty's 2 s shutdown quiet period in close(), scenario after scenario; one on shared
     * threads closes at once.
     */
    static final PulsarClientSharedResources SHARED_THREADS = PulsarClientSharedResources.builder().build();

    /** A client builder for this URL, on the shared threads. */
    static ClientBuilder builder(String url) {
        return PulsarClient.builder().serviceUrl(url).sharedResources(SHARED_THREADS);
    }

    static PulsarClient newClient(String url) throws PulsarClientException {
        return builder(url).operationTimeout(10, TimeUnit.SECONDS).build();
    }

    static String topic(String prefix) {
        return "persistent://public/default/java-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 12);
    }

    static List<String> payloads(int n, String tag) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(tag + "-" + i);
        }
        return out;
    }

    static String text(Message<byte[]> msg) {
        return new String(msg.getValue(), StandardCharsets.UTF_8);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Receive exactly n messages (each within the receive timeout), acking each if asked. */
    static List<Message<byte[]>> receive(Consumer<byte[]> consumer, int n, boolean ack) throws Exception {
        List<Message<byte[]>> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Message<byte[]> msg = consumer.receive(RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(msg != null, "message " + i + " of " + n + " did not arrive; got " + texts(out));
            out.add(msg);
            if (ack) {
                consumer.acknowledge(msg);
            }
        }
        return out;
    }

    /** Nothing more arrives within the quiet period. */
    static void expectQuiet(Consumer<byte[]> consumer) throws Exception {
        Message<byte[]> extra = consumer.receive(QUIET_MS, TimeUnit.MILLISECONDS);
        check(extra == null, "unexpected extra message " + (extra == null ? "" : text(extra)));
    }

    static List<String> texts(List<Message<byte[]>> messages) {
        List<String> out = new ArrayList<>();
        for (Message<byte[]> m : messages) {
            out.add(text(m));
        }
        return out;
    }

    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static void expectEqual(String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected " + expected + " but got " + actual);
        }
    }

    /** Message i was sent with key "key-(i % keys)"; each key's messages arrived in send order. */
    static void expectKeyOrder(List<String> sent, java.util.Map<String, List<String>> perKey, int keys) {
        for (int k = 0; k < keys; k++) {
            List<String> expected = new ArrayList<>();
            for (int i = k; i < sent.size(); i += keys) {
                expected.add(sent.get(i));
            }
            expectEqual("order of key-" + k, expected, perKey.get("key-" + k));
        }
    }

    void close() {
        for (AutoCloseable c : List.of(client, partitionedClient, SHARED_THREADS)) {
            try {
                c.close();
            } catch (Exception e) {
                // closing at exit: nothing left to do
            }
        }
    }
}
