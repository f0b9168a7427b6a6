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
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

/** Readers, seeking by message id and by publish time, and the last message id. */
public final class ReaderSeekScenarios {
    private ReaderSeekScenarios() {}

    static List<MessageId> produce(Ctx ctx, String topic, List<String> contents, boolean batched) throws Exception {
        List<MessageId> ids = new ArrayList<>();
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(topic).enableBatching(batched)
                .batchingMaxPublishDelay(20, TimeUnit.MILLISECONDS).create()) {
            var futures = contents.stream().map(s -> producer.sendAsync(bytes(s))).toList();
            producer.flush();
            for (var f : futures) {
                ids.add(f.get(10, TimeUnit.SECONDS));
            }
        }
        return ids;
    }

    static List<String> readAll(Reader<byte[]> reader, int n) throws Exception {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Message<byte[]> m = reader.readNext(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(m != null, "reader message " + i + " missing after " + out);
            out.add(text(m));
        }
        return out;
    }

    @Scenario
    public static void reader(Ctx ctx) throws Exception {
        String topic = Ctx.topic("reader");
        List<String> sent = payloads(10, "rd");
        List<MessageId> ids = produce(ctx, topic, sent, false);
        try (Reader<byte[]> r = ctx.client.newReader().topic(topic).startMessageId(MessageId.earliest).create()) {
            expectEqual("from earliest", sent, readAll(r, 10));
            check(!r.hasMessageAvailable(), "nothing more after the last message");
        }
        try (Reader<byte[]> r = ctx.client.newReader().topic(topic).startMessageId(ids.get(4)).create()) {
            expectEqual("after id 4 (exclusive)", sent.subList(5, 10), readAll(r, 5));
        }
        try (Reader<byte[]> r = ctx.client.newReader().topic(topic).startMessageId(ids.get(4))
                .startMessageIdInclusive().create()) {
            expectEqual("from id 4 (inclusive)", sent.subList(4, 10), readAll(r, 6));
        }
        try (Reader<byte[]> r = ctx.client.newReader().topic(topic).startMessageId(MessageId.latest).create()) {
            check(!r.hasMessageAvailable(), "a reader at latest has nothing yet");
            produce(ctx, topic, List.of("new"), false);
            expectEqual("only the new message", List.of("new"), readAll(r, 1));
        }
    }

    @Scenario
    public static void readerBatched(Ctx ctx) throws Exception {
        String topic = Ctx.topic("readerbatch");
        List<String> sent = payloads(20, "rb");
        List<MessageId> ids = produce(ctx, topic, sent, true);
        try (Reader<byte[]> r = ctx.client.newReader().topic(topic).startMessageId(ids.get(7))
                .startMessageIdInclusive().create()) {
            expectEqual("from batch message 7 (inclusive)", sent.subList(7, 20), readAll(r, 13));
        }
    }

    static Consumer<byte[]> subscribe(Ctx ctx, String topic) throws Exception {
        return ctx.client.newConsumer().topic(topic).subscriptionName("seeker")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
    }

    @Scenario
    public static void seekById(Ctx ctx) throws Exception {
        String topic = Ctx.topic("seekid");
        List<String> sent = payloads(10, "si");
        List<MessageId> ids = produce(ctx, topic, sent, false);
        try (Consumer<byte[]> c = subscribe(ctx, topic)) {
            receive(c, 10, true);
            c.seek(ids.get(3));
            // The broker redelivers from id 3 itself; the Java consumer drops the seek id and
            // what precedes it (its seek is exclusive unless startMessageIdInclusive is set).
            expectEqual("after seek to id 3", sent.subList(4, 10), texts(receive(c, 6, true)));
            expectQuiet(c);
            c.seek(MessageId.earliest);
            expectEqual("after seek to earliest", sent, texts(receive(c, 10, true)));
            expectQuiet(c);
        }
    }

    @Scenario
    public static void seekByTime(Ctx ctx) throws Exception {
        String topic = Ctx.topic("seektime");
        List<String> sent = payloads(10, "st");
        produce(ctx, topic, sent.subList(0, 5), false);
        Thread.sleep(50);
        long middle = System.currentTimeMillis();
        Thread.sleep(50);
        produce(ctx, topic, sent.subList(5, 10), false);
        try (Consumer<byte[]> c = subscribe(ctx, topic)) {
            List<Message<byte[]>> all = receive(c, 10, true);
            check(all.get(5).getPublishTime() > middle, "publish times straddle the seek time");
            c.seek(middle);
            expectEqual("after seek by time", sent.subList(5, 10), texts(receive(c, 5, true)));
            expectQuiet(c);
        }
    }

    @Scenario
    public static void getLastMessageId(Ctx ctx) throws Exception {
        String topic = Ctx.topic("lastid");
        try (Consumer<byte[]> c = subscribe(ctx, topic)) {
            expectEqual("last id of an empty topic", -1L, ((org.apache.pulsar.client.impl.MessageIdImpl) c.getLastMessageId()).getEntryId());
            List<MessageId> plain = produce(ctx, topic, payloads(3, "plain"), false);
            expectEqual("last id after plain sends", plain.get(2), c.getLastMessageId());
            List<MessageId> batched = produce(ctx, topic, payloads(5, "batch"), true);
            expectEqual("last id after a batch", batched.get(4), c.getLastMessageId());
        }
    }
}
