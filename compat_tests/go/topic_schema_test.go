package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func contains(s, part string) bool { return strings.Contains(s, part) }

func TestPartitionedTopic(t *testing.T) {
	c := partitionedClient(t)
	topic := topicName("partitioned")
	sent := payloads(30, "pt")
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Failover})
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	expectEqual(t, "partitions", 3, len(result(c.TopicPartitions(topic)).must(t)))
	partitionOfKey := map[string]int32{}
	for i, s := range sent {
		key := fmt.Sprintf("key-%d", i%6)
		id := result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s), Key: key})).must(t)
		if before, seen := partitionOfKey[key]; seen && before != id.PartitionIdx() {
			t.Fatalf("key %s went to partitions %d and %d", key, before, id.PartitionIdx())
		}
		partitionOfKey[key] = id.PartitionIdx()
	}
	used := map[int32]bool{}
	for _, partition := range partitionOfKey {
		used[partition] = true
	}
	if len(used) < 2 {
		t.Fatalf("keys did not spread over partitions: %v", partitionOfKey)
	}
	perKey := map[string][]string{}
	for _, m := range receive(t, cons, len(sent), true) {
		perKey[m.Key()] = append(perKey[m.Key()], string(m.Payload()))
	}
	expectKeyOrder(t, sent, perKey, 6)
	expectQuiet(t, cons)
}

func TestRegexSubscription(t *testing.T) {
	c := client(t)
	prefix := topicName("regex")
	for _, suffix := range []string{"-a", "-b"} {
		producer(t, c, pulsar.ProducerOptions{Topic: prefix + suffix}).Close()
	}
	cons := consumer(t, c, pulsar.ConsumerOptions{TopicsPattern: prefix + "-.*", AutoDiscoveryPeriod: time.Second})
	var expected []string
	for _, suffix := range []string{"-a", "-b", "-c"} {
		sendAll(t, c, prefix+suffix, []string{prefix + suffix})
		expected = append(expected, prefix+suffix)
	}
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < len(expected) && time.Now().Before(deadline) {
		if m := tryReceive(cons, 500*time.Millisecond); m != nil {
			got = append(got, string(m.Payload()))
			noErr(t, cons.Ack(m))
		}
	}
	expectEqual(t, "one message from each matching topic", sorted(expected), sorted(got))
	expectQuiet(t, cons)
}

// Reading is the JSON / Avro record of the schema scenarios.
type Reading struct {
	Sensor string  `json:"sensor" avro:"sensor"`
	Value  float64 `json:"value" avro:"value"`
	At     int64   `json:"at" avro:"at"`
}

const readingSchema = `{"type":"record","name":"Reading","namespace":"compat",
"fields":[{"name":"sensor","type":"string"},{"name":"value","type":"double"},{"name":"at","type":"long"}]}`

// decodeInto decodes a message's value into a fresh T (JSON and Avro records).
func decodeInto[T any](m pulsar.Message) (T, error) {
	var v T
	err := m.GetSchemaValue(&v)
	return v, err
}

// decodeString: the Go client's StringSchema decodes into a **string.
func decodeString(m pulsar.Message) (string, error) {
	var s *string
	if err := m.GetSchemaValue(&s); err != nil || s == nil {
		return "", fmt.Errorf("string value not decoded: %v", err)
	}
	return *s, nil
}

// schemaRoundTrip produces values with the schema; the consumer decodes the same values, in order.
func schemaRoundTrip[T any](t *testing.T, tag string, schema pulsar.Schema, values []T,
	decode func(pulsar.Message) (T, error)) {
	c := client(t)
	topic := topicName(tag)
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, Schema: schema})
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Schema: schema})
	for _, v := range values {
		result(p.Send(context.Background(), &pulsar.ProducerMessage{Value: v})).must(t)
	}
	var got []T
	for _, m := range receive(t, cons, len(values), true) {
		got = append(got, result(decode(m)).must(t))
	}
	expectEqual(t, tag+" values", values, got)
}

func TestSchemaString(t *testing.T) {
	schemaRoundTrip(t, "string", pulsar.NewStringSchema(nil), []string{"zero", "één", "二"}, decodeString)
}

// TestSchemaBytes: the producer asks GET_OR_CREATE_SCHEMA for bytes and stamps the answer on each
// message; the consumer looks that version up with GET_SCHEMA to decode.
func TestSchemaBytes(t *testing.T) {
	schemaRoundTrip(t, "bytes", pulsar.NewBytesSchema(nil), [][]byte{[]byte("raw"), {0, 255}}, decodeInto[[]byte])
}

func TestSchemaJSON(t *testing.T) {
	schemaRoundTrip(t, "json", pulsar.NewJSONSchema(readingSchema, nil),
		[]Reading{{"a", 1.5, 1}, {"b", -2, 2}}, decodeInto[Reading])
}

func TestSchemaAvro(t *testing.T) {
	schemaRoundTrip(t, "avro", pulsar.NewAvroSchema(readingSchema, nil),
		[]Reading{{"a", 1.5, 1}, {"b", -2, 2}}, decodeInto[Reading])
	c := client(t)
	topic := topicName("avro-clash")
	producer(t, c, pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(readingSchema, nil)}).Close()
	_, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil)})
	if err == nil || !contains(err.Error(), "IncompatibleSchema") {
		t.Fatalf("a string producer on an Avro topic: expected IncompatibleSchema, got %v", err)
	}
}

func accessProducer(c pulsar.Client, topic string, mode pulsar.ProducerAccessMode) (pulsar.Producer, error) {
	return c.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: mode, SendTimeout: 5 * time.Second})
}

func TestAccessModeExclusive(t *testing.T) {
	c := client(t)
	topic := topicName("exclusive-producer")
	first := result(accessProducer(c, topic, pulsar.ProducerAccessModeExclusive)).must(t)
	for _, other := range []pulsar.ProducerAccessMode{pulsar.ProducerAccessModeShared, pulsar.ProducerAccessModeExclusive} {
		if p, err := accessProducer(c, topic, other); err == nil {
			p.Close()
			t.Fatalf("access mode %d admitted next to an Exclusive producer", other)
		} else if !contains(err.Error(), "ProducerFenced") && !contains(err.Error(), "ProducerBusy") {
			t.Fatalf("refused with an unexpected error: %v", err)
		}
	}
	result(first.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("still mine")})).must(t)
	first.Close()
	result(accessProducer(c, topic, pulsar.ProducerAccessModeExclusive)).must(t).Close()
}

func TestAccessModeWaitForExclusive(t *testing.T) {
	c := client(t)
	topic := topicName("wait-producer")
	first := result(accessProducer(c, topic, pulsar.ProducerAccessModeExclusive)).must(t)
	type created struct {
		p   pulsar.Producer
		err error
	}
	waiting := make(chan created, 1)
	go func() {
		p, err := accessProducer(c, topic, pulsar.ProducerAccessModeWaitForExclusive)
		waiting <- created{p, err}
	}()
	select {
	case got := <-waiting:
		t.Fatalf("WaitForExclusive returned while another producer held the topic: %v", got.err)
	case <-time.After(500 * time.Millisecond):
	}
	first.Close()
	select {
	case got := <-waiting:
		second := result(got.p, got.err).must(t)
		result(second.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("now mine")})).must(t)
		second.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForExclusive producer not created after the holder closed")
	}
}
