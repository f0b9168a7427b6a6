package pulsard.compat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.impl.BatchMessageIdImpl;

/**
 * The Java side of compat_tests/test_cross_client.py. Usage:
 *   CrossClient SERVICE_URL (produce TOPIC ORIGIN CODEC | consume TOPIC COUNT)...
 * produce sends the shared message set (see cross_messages in the test) in batches with CODEC;
 * consume prints each received message as one tab-separated MSG line.
 */
public final class CrossClient {
    static final int MESSAGES = 10;
    static final long EVENT_TIME_BASE = 1_700_000_000_000L;

    private CrossClient() {}

    public static void main(String[] args) throws Exception {
        try (PulsarClient client = Ctx.newClient(args[0])) {
            for (int i = 1; i < args.length; ) {
                if (args[i].equals("produce")) {
                    produce(client, args[i + 1], args[i + 2], CompressionType.valueOf(args[i + 3]));
                    i += 4;
                } else {
                    consume(client, args[i + 1], Integer.parseInt(args[i + 2]));
                    i += 3;
                }
            }
        }
        System.exit(0);
    }

    /** Message i: payload "ORIGIN-i:" + bytes {i, 0, 255, 128}; key "key-(i%3)"; two properties. */
    static void produce(PulsarClient client, String topic, String origin, CompressionType codec) throws Exception {
        try (Producer<byte[]> producer = client.newProducer().topic(topic).compressionType(codec)
                .enableBatching(true).batchingMaxMessages(4).batchingMaxPublishDelay(1, TimeUnit.SECONDS).create()) {
            List<CompletableFuture<MessageId>> sends = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                ByteArrayOutputStream payload = new ByteArrayOutputStream();
                payload.writeBytes((origin + "-" + i + ":").getBytes(StandardCharsets.UTF_8));
                payload.writeBytes(new byte[] {(byte) i, 0, (byte) 255, (byte) 128});
                sends.add(producer.newMessage().value(payload.toByteArray()).key("key-" + (i % 3))
                        .property("i", String.valueOf(i)).property("origin", origin)
                        .eventTime(EVENT_TIME_BASE + i).sendAsync());
            }
            producer.flush();
            for (CompletableFuture<MessageId> send : sends) {
                send.get(10, TimeUnit.SECONDS);
            }
        }
    }

    static void consume(PulsarClient client, String topic, int count) throws Exception {
        try (Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("cross-java")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            for (int i = 0; i < count; i++) {
                Message<byte[]> m = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (m == null) {
                    System.out.println("MISSING\t" + topic + "\t" + i);
                    break;
                }
                System.out.println(line(topic, m));
                consumer.acknowledge(m);
            }
        }
    }

    static String line(String topic, Message<byte[]> m) {
        int batchIndex = m.getMessageId() instanceof BatchMessageIdImpl b ? b.getBatchIndex() : -1;
        Map<String, String> props = new TreeMap<>(m.getProperties());
        StringBuilder joined = new StringBuilder();
        props.forEach((k, v) -> joined.append(joined.length() == 0 ? "" : ",").append(k).append('=').append(v));
        return String.join("\t", "MSG", topic, Base64.getEncoder().encodeToString(m.getValue()), m.getKey(),
                String.valueOf(m.getEventTime()), String.valueOf(batchIndex), joined);
    }
}
