package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.expectQuiet;
import static pulsard.compat.Ctx.payloads;
import static pulsard.compat.Ctx.receive;
import static pulsard.compat.Ctx.texts;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

/** Connecting, sync and async producing, batching and every compression codec; transactions. */
public final class ProduceScenarios {
    private ProduceScenarios() {}

    static Consumer<byte[]> subscribeEarliest(PulsarClient client, String topic, String sub) throws Exception {
        return client.newConsumer().topic(topic).subscriptionName(sub)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    @Scenario
    public static void connect(Ctx ctx) throws Exception {
        String topic = Ctx.topic("connect");
        expectEqual("partitions of a new topic", List.of(topic), ctx.client.getPartitionsForTopic(topic).get());
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).create()) {
            check(!producer.getProducerName().isEmpty(), "the broker named the producer");
            expectEqual("last sequence id of a new producer", -1L, producer.getLastSequenceId());
        }
    }

    @Scenario
    public static void produceSync(Ctx ctx) throws Exception {
        String topic = Ctx.topic("sync");
        List<String> sent = payloads(10, "sync");
        List<MessageId> ids = new ArrayList<>();
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).enableBatching(false).create();
             Consumer<byte[]> consumer = subscribeEarliest(ctx.client, topic, "s")) {
            for (String s : sent) {
                ids.add(producer.newMessage().key("k-" + s).property("p", s).value(bytes(s)).send());
            }
            List<Message<byte[]>> got = receive(consumer, sent.size(), true);
            expectEqual("payloads in order", sent, texts(got));
            for (int i = 0; i < got.size(); i++) {
                expectEqual("id of message " + i, ids.get(i), got.get(i).getMessageId());
                expectEqual("key of message " + i, "k-" + sent.get(i), got.get(i).getKey());
                expectEqual("property of message " + i, sent.get(i), got.get(i).getProperty("p"));
            }
            expectQuiet(consumer);
        }
    }

    @Scenario
    public static void produceAsyncBatched(Ctx ctx) throws Exception {
        roundTrip(ctx, "async", CompressionType.NONE, 100);
    }

    @Scenario
    public static void compressionLz4(Ctx ctx) throws Exception {
        roundTrip(ctx, "lz4", CompressionType.LZ4, 50);
    }

    @Scenario
    public static void compressionZlib(Ctx ctx) throws Exception {
        roundTrip(ctx, "zlib", CompressionType.ZLIB, 50);
    }

    @Scenario
    public static void compressionZstd(Ctx ctx) throws Exception {
        roundTrip(ctx, "zstd", CompressionType.ZSTD, 50);
    }

    @Scenario
    public static void compressionSnappy(Ctx ctx) throws Exception {
        roundTrip(ctx, "snappy", CompressionType.SNAPPY, 50);
    }

    /** Async sends in batches with the codec; the consumer gets every message once, in order. */
    static void roundTrip(Ctx ctx, String tag, CompressionType codec, int count) throws Exception {
        String topic = Ctx.topic(tag);
        List<String> sent = payloads(count, tag + "-payload-that-compresses-well-" + "x".repeat(64));
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).compressionType(codec)
                     .enableBatching(true).batchingMaxMessages(10)
                     .batchingMaxPublishDelay(50, TimeUnit.MILLISECONDS).create();
             Consumer<byte[]> consumer = subscribeEarliest(ctx.client, topic, "s")) {
            List<CompletableFuture<MessageId>> futures = new ArrayList<>();
            for (String s : sent) {
                futures.add(producer.sendAsync(bytes(s)));
            }
            producer.flush();
            List<MessageId> ids = new ArrayList<>();
            for (CompletableFuture<MessageId> f : futures) {
                ids.add(f.get(10, TimeUnit.SECONDS));
            }
            List<Message<byte[]>> got = receive(consumer, count, true);
            expectEqual("payloads in order", sent, texts(got));
            for (int i = 0; i < count; i++) {
                expectEqual("id of message " + i, ids.get(i), got.get(i).getMessageId());
            }
            check(ids.get(0).toString().split(":").length >= 4 && !ids.get(0).equals(ids.get(count - 1)),
                  "batched ids carry a batch index: " + ids.get(0));
            expectQuiet(consumer);
        }
    }

    /** Like Pulsar without a coordinator: the assign topic has no partitions, the client says so at build(). */
    @Scenario
    public static void transactionsRefused(Ctx ctx) throws Exception {
        for (String url : List.of(ctx.serviceUrl, ctx.partitionedServiceUrl)) {
            try (PulsarClient txnClient = Ctx.builder(url).operationTimeout(5, TimeUnit.SECONDS)
                    .enableTransaction(true).build()) {
                throw new AssertionError("a transactional client started on " + url);
            } catch (PulsarClientException e) {
                check(String.valueOf(e).contains("doesn't enable the transaction coordinator"),
                      url + " refused with: " + e);
            }
        }
        connect(ctx);   // the broker still serves
    }
}
