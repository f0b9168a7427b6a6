package pulsard.compat;

import static pulsard.compat.ConnectorCalls.cachedConsumer;
import static pulsard.compat.ConnectorCalls.latestOffset;
import static pulsard.compat.ConnectorCalls.partitions;
import static pulsard.compat.ConnectorCalls.prefix;
import static pulsard.compat.ConnectorCalls.produce;
import static pulsard.compat.ConnectorCalls.readRange;
import static pulsard.compat.ConnectorCalls.subscription;
import static pulsard.compat.ConnectorCalls.values;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.payloads;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.client.api.schema.GenericSchema;
import org.apache.pulsar.client.impl.PulsarClientImpl;
import org.apache.pulsar.common.api.proto.CommandGetTopicsOfNamespace;
import org.apache.pulsar.common.naming.TopicName;
import org.apache.pulsar.common.schema.SchemaInfo;
import org.apache.pulsar.common.schema.SchemaType;

/** The connector's topic discovery (topic / topicsPattern), schema handling (getSchema, readers
 *  with the topic's schema, AUTO_CONSUME) and sink producer (PulsarSinks / PulsarWriteTask). */
public final class ConnectorTopicSchemaScenarios {
    static final String READING_V1 = "{\"type\":\"record\",\"name\":\"Reading\",\"fields\":["
            + "{\"name\":\"sensor\",\"type\":\"string\"},{\"name\":\"value\",\"type\":\"int\"}]}";
    static final String READING_V2 = "{\"type\":\"record\",\"name\":\"Reading\",\"fields\":["
            + "{\"name\":\"sensor\",\"type\":\"string\"},{\"name\":\"value\",\"type\":\"int\"},"
            + "{\"name\":\"unit\",\"type\":[\"null\",\"string\"],\"default\":null}]}";
    static final long EVENT_TIME_BASE = 1_700_000_000_000L;

    private ConnectorTopicSchemaScenarios() {}

    /** PulsarHelper.getTopics(topicsPattern): GET_TOPICS_OF_NAMESPACE (mode ALL, the pattern, no
     *  hash), then the connector's own filter on names without their domain, partitions folded. */
    static TreeSet<String> topicsMatching(PulsarClient client, String pattern) throws Exception {
        TopicName dest = TopicName.get(pattern);
        List<String> all = ((PulsarClientImpl) client).getLookup().getTopicsUnderNamespace(
                dest.getNamespaceObject(), CommandGetTopicsOfNamespace.Mode.ALL, pattern, "")
                .get(10, TimeUnit.SECONDS).getTopics();
        Pattern shortened = Pattern.compile(pattern.split("://")[1]);
        TreeSet<String> out = new TreeSet<>();
        for (String name : all) {
            TopicName topic = TopicName.get(name);
            String folded = topic.isPartitioned() ? topic.getPartitionedTopicName() : topic.toString();
            if (shortened.matcher(folded.split("://")[1]).matches()) {
                out.add(folded);
            }
        }
        return out;
    }

    /** waitForTopicIfNeeded: partitioned metadata without auto-creation, falling back for brokers
     *  that do not announce PIP-344. */
    static int partitionedMetadata(PulsarClient client, String topic) throws Exception {
        return ((PulsarClientImpl) client).getPartitionedTopicMetadata(topic, false, true)
                .get(10, TimeUnit.SECONDS).partitions;
    }

    @ConnectorScenario
    public static void connectorTopicsPattern(Ctx ctx) throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String base = "persistent://public/default/conn-pat-" + tag + "-";
        String pattern = base + ".*";
        for (PulsarClient client : List.of(ctx.client, ctx.partitionedClient)) {
            boolean partitioned = client == ctx.partitionedClient;
            produce(client, base + "a", List.of("a"), 0);
            produce(client, base + "b", List.of("b"), 0);
            produce(client, "persistent://public/default/conn-other-" + tag, List.of("x"), 0);
            expectEqual("pattern round 1", new TreeSet<>(List.of(base + "a", base + "b")), topicsMatching(client, pattern));
            produce(client, base + "c", List.of("c"), 0);
            TreeSet<String> round2 = topicsMatching(client, pattern);
            expectEqual("pattern round 2 sees the new topic", new TreeSet<>(List.of(base + "a", base + "b", base + "c")), round2);
            for (String topic : round2) {
                List<String> expected = partitioned
                        ? List.of(topic + "-partition-0", topic + "-partition-1", topic + "-partition-2") : List.of(topic);
                expectEqual("partitions of " + topic, expected, partitions(client, topic));
                expectEqual("partitioned metadata of " + topic, partitioned ? 3 : 0, partitionedMetadata(client, topic));
            }
            List<String> multi = new ArrayList<>();
            for (String topic : round2) {
                multi.addAll(partitions(client, topic));
            }
            expectEqual("topic partitions of the query", partitioned ? 9 : 3, multi.size());
        }
    }

    /** waitForNonExistedTopic: the metadata lookup fails (so the query waits) until the topic is made,
     *  and never creates it; on both brokers (plain and partitioned auto-creation). */
    @ConnectorScenario
    public static void connectorWaitForNonExistedTopic(Ctx ctx) throws Exception {
        for (PulsarClient client : List.of(ctx.client, ctx.partitionedClient)) {
            String topic = Ctx.topic("conn-wait");
            for (int attempt = 0; attempt < 2; attempt++) {
                try {
                    partitionedMetadata(client, topic);
                    throw new AssertionError("metadata of a topic that does not exist: " + topic);
                } catch (java.util.concurrent.ExecutionException e) {
                    check(e.getCause() instanceof PulsarClientException.TopicDoesNotExistException
                            || e.getCause() instanceof PulsarClientException.NotFoundException,
                            "expected topic not found, got " + e.getCause());
                }
            }
            produce(client, topic, List.of("now"), 0);
            expectEqual("metadata once the topic exists", client == ctx.client ? 0 : 3, partitionedMetadata(client, topic));
            expectEqual("a partition of it exists", 0, partitionedMetadata(client, partitions(client, topic).get(0)));
        }
    }

    static SchemaInfo schemaInfo(SchemaType type, String definition) {
        return SchemaInfo.builder().name(type.name()).type(type)
                .schema(definition.getBytes(StandardCharsets.UTF_8)).properties(Map.of()).build();
    }

    static List<MessageId> produceRecords(PulsarClient client, String topic, SchemaInfo info, List<Object[]> rows)
            throws Exception {
        GenericSchema<GenericRecord> schema = Schema.generic(info);
        List<MessageId> ids = new ArrayList<>();
        try (Producer<GenericRecord> producer = client.newProducer(schema).topic(topic).create()) {
            for (Object[] row : rows) {
                var builder = schema.newRecordBuilder().set("sensor", row[0]).set("value", row[1]);
                if (row.length > 2) {
                    builder.set("unit", row[2]);
                }
                ids.add(producer.send(builder.build()));
            }
        }
        return ids;
    }

    /** sensor/value/unit of generic records, as text. */
    static List<String> fields(List<GenericRecord> records, boolean withUnit) {
        List<String> out = new ArrayList<>();
        for (GenericRecord r : records) {
            out.add(r.getField("sensor") + "/" + r.getField("value") + (withUnit ? "/" + r.getField("unit") : ""));
        }
        return out;
    }

    /** PulsarHelper.getPulsarSchema(topic): the latest schema; none means bytes. */
    static SchemaInfo topicSchema(PulsarClient client, String topic) throws Exception {
        Optional<SchemaInfo> found = ((PulsarClientImpl) client).getSchema(topic).get(10, TimeUnit.SECONDS);
        return found.orElse(Schema.BYTES.getSchemaInfo());
    }

    static Optional<SchemaInfo> schemaVersion(PulsarClient client, String topic, long version) throws Exception {
        byte[] encoded = ByteBuffer.allocate(8).putLong(version).array();
        return ((PulsarClientImpl) client).getLookup().getSchema(TopicName.get(topic), encoded).get(10, TimeUnit.SECONDS);
    }

    /** The connector's read of a whole topic with the reader schema it derives from the topic's. */
    static <T> List<T> readAll(PulsarClient client, Schema<T> schema, String topic) throws Exception {
        String prefix = prefix(true);
        MessageId end;
        try (Consumer<GenericRecord> cached = cachedConsumer(client, topic, subscription(prefix, topic))) {
            end = latestOffset(cached);
        }
        return values(readRange(client, schema, topic, prefix, MessageId.earliest, true, end));
    }

    @ConnectorScenario
    public static void connectorSchemaStringAndBytes(Ctx ctx) throws Exception {
        String strings = Ctx.topic("conn-schema-str");
        produce(ctx.client, strings, payloads(3, "s"), 0);
        SchemaInfo info = topicSchema(ctx.client, strings);
        expectEqual("schema type of a STRING topic", SchemaType.STRING, info.getType());
        expectEqual("STRING values", payloads(3, "s"), readAll(ctx.client, Schema.STRING, strings));

        String raw = Ctx.topic("conn-schema-bytes");
        try (Producer<byte[]> producer = ctx.client.newProducer().topic(raw).create()) {
            producer.send(new byte[] {0, 1, 2});
            producer.send(new byte[] {3});
        }
        expectEqual("a topic without schema", false,
                ((PulsarClientImpl) ctx.client).getSchema(raw).get(10, TimeUnit.SECONDS).isPresent());
        expectEqual("connector falls back to BYTES", SchemaType.BYTES, topicSchema(ctx.client, raw).getType());
        List<byte[]> read = readAll(ctx.client, Schema.BYTES, raw);
        expectEqual("bytes values", "[0, 1, 2][3]",
                java.util.Arrays.toString(read.get(0)) + java.util.Arrays.toString(read.get(1)));
        expectEqual("bytes count", 2, read.size());
    }

    @ConnectorScenario
    public static void connectorSchemaAvroVersions(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-schema-avro");
        SchemaInfo v1 = schemaInfo(SchemaType.AVRO, READING_V1);
        SchemaInfo v2 = schemaInfo(SchemaType.AVRO, READING_V2);
        produceRecords(ctx.client, topic, v1, List.of(new Object[] {"s1", 1}, new Object[] {"s2", 2}));
        produceRecords(ctx.client, topic, v2, List.of(new Object[] {"s3", 3, "C"}, new Object[] {"s4", 4, "F"}));
        SchemaInfo latest = topicSchema(ctx.client, topic);
        expectEqual("latest schema type", SchemaType.AVRO, latest.getType());
        expectEqual("latest schema", READING_V2, new String(latest.getSchema(), StandardCharsets.UTF_8));
        expectEqual("schema version 0", READING_V1,
                new String(schemaVersion(ctx.client, topic, 0).orElseThrow().getSchema(), StandardCharsets.UTF_8));
        expectEqual("schema version 1", READING_V2,
                new String(schemaVersion(ctx.client, topic, 1).orElseThrow().getSchema(), StandardCharsets.UTF_8));
        expectEqual("no schema version 2", false, schemaVersion(ctx.client, topic, 2).isPresent());
        // Reader schema = GenericSchemaImpl.of(latest): version-0 messages decode through GET_SCHEMA by version.
        expectEqual("records read with the latest schema", List.of("s1/1/null", "s2/2/null", "s3/3/C", "s4/4/F"),
                fields(readAll(ctx.client, Schema.generic(latest), topic), true));
        List<GenericRecord> auto = new ArrayList<>();
        try (Consumer<GenericRecord> consumer = cachedConsumer(ctx.client, topic, subscription(prefix(false), topic))) {
            for (int i = 0; i < 4; i++) {
                Message<GenericRecord> m = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(m != null, "AUTO_CONSUME message " + i + " missing");
                auto.add(m.getValue());
                consumer.acknowledge(m);
            }
            consumer.unsubscribe();
        }
        expectEqual("AUTO_CONSUME records", List.of("s1/1", "s2/2", "s3/3", "s4/4"), fields(auto, false));
    }

    @ConnectorScenario
    public static void connectorSchemaJson(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-schema-json");
        SchemaInfo info = schemaInfo(SchemaType.JSON, READING_V1);
        produceRecords(ctx.client, topic, info, List.of(new Object[] {"j1", 10}, new Object[] {"j2", 20}));
        SchemaInfo latest = topicSchema(ctx.client, topic);
        expectEqual("schema type", SchemaType.JSON, latest.getType());
        expectEqual("schema", READING_V1, new String(latest.getSchema(), StandardCharsets.UTF_8));
        expectEqual("records", List.of("j1/10", "j2/20"), fields(readAll(ctx.client, Schema.generic(latest), topic), false));
    }

    /** PulsarSinks.createProducer + PulsarRowWriter.sendRow + producerClose (flush, close). */
    @ConnectorScenario
    public static void connectorSinkProducer(Ctx ctx) throws Exception {
        String topic = System.getProperty("connector.sinkTopic", Ctx.topic("conn-sink"));
        List<CompletableFuture<MessageId>> sent = new ArrayList<>();
        try (Producer<String> producer = ctx.client.newProducer(Schema.STRING).topic(topic)
                .batchingMaxPublishDelay(100, TimeUnit.MILLISECONDS).batchingMaxMessages(5 * 1024 * 1024).create()) {
            for (int i = 0; i < 10; i++) {
                sent.add(producer.newMessage().value("row-" + i)
                        .keyBytes(("key-" + i).getBytes(StandardCharsets.UTF_8))
                        .eventTime(EVENT_TIME_BASE + i)
                        .properties(Map.of("row", Integer.toString(i), "source", "spark"))
                        .sendAsync());
            }
            producer.flush();
            for (CompletableFuture<MessageId> f : sent) {
                check(f.isDone() && !f.isCompletedExceptionally(), "a send is not complete after flush");
            }
        }
        try (Reader<String> reader = ctx.client.newReader(Schema.STRING).topic(topic)
                .startMessageId(MessageId.earliest).create()) {
            for (int i = 0; i < 10; i++) {
                Message<String> m = reader.readNext(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(m != null, "sink message " + i + " missing");
                expectEqual("value " + i, "row-" + i, m.getValue());
                expectEqual("key " + i, "key-" + i, new String(m.getKeyBytes(), StandardCharsets.UTF_8));
                expectEqual("event time " + i, EVENT_TIME_BASE + i, m.getEventTime());
                expectEqual("properties " + i, Map.of("row", Integer.toString(i), "source", "spark"), m.getProperties());
                expectEqual("id " + i, sent.get(i).get(), m.getMessageId());
            }
        }
    }

    /** The sink's struct rows: an Avro schema derived from the Spark struct, sent as generic records. */
    @ConnectorScenario
    public static void connectorSinkAvroRecords(Ctx ctx) throws Exception {
        String topic = Ctx.topic("conn-sink-avro");
        SchemaInfo info = schemaInfo(SchemaType.AVRO, READING_V1.replace("\"Reading\"", "\"topLevelRecord\""));
        produceRecords(ctx.client, topic, info, List.of(new Object[] {"r1", 1}, new Object[] {"r2", 2}));
        SchemaInfo latest = topicSchema(ctx.client, topic);
        expectEqual("registered schema", new String(info.getSchema(), StandardCharsets.UTF_8),
                new String(latest.getSchema(), StandardCharsets.UTF_8));
        expectEqual("records", List.of("r1/1", "r2/2"), fields(readAll(ctx.client, Schema.generic(latest), topic), false));
    }
}
