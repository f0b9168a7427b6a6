package compat

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestConnect(t *testing.T) {
	c := client(t)
	topic := topicName("connect")
	expectEqual(t, "partitions of a new topic", []string{topic}, result(c.TopicPartitions(topic)).must(t))
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic})
	if p.Name() == "" {
		t.Fatal("the broker named no producer")
	}
	expectEqual(t, "last sequence id of a new producer", int64(-1), p.LastSequenceID())
}

func TestProduceSync(t *testing.T) {
	c := client(t)
	topic := topicName("sync")
	sent := payloads(10, "sync")
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic})
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	at := time.UnixMilli(1_700_000_000_000)
	var ids []pulsar.MessageID
	for i, s := range sent {
		ids = append(ids, result(p.Send(context.Background(), &pulsar.ProducerMessage{
			Payload: []byte(s), Key: "k-" + s, Properties: map[string]string{"p": s},
			EventTime: at.Add(time.Duration(i) * time.Second),
		})).must(t))
	}
	got := receive(t, cons, len(sent), true)
	expectEqual(t, "payloads in order", sent, texts(got))
	for i, m := range got {
		if !sameID(ids[i], m.ID()) {
			t.Fatalf("id of message %d: sent %v, received %v", i, ids[i], m.ID())
		}
		expectEqual(t, "key", "k-"+sent[i], m.Key())
		expectEqual(t, "properties", map[string]string{"p": sent[i]}, m.Properties())
		expectEqual(t, "event time", at.Add(time.Duration(i)*time.Second).UnixMilli(), m.EventTime().UnixMilli())
	}
	expectQuiet(t, cons)
}

func TestProduceAsyncBatched(t *testing.T) { roundTrip(t, "async", pulsar.NoCompression, 100) }
func TestCompressionLZ4(t *testing.T)      { roundTrip(t, "lz4", pulsar.LZ4, 50) }
func TestCompressionZLIB(t *testing.T)     { roundTrip(t, "zlib", pulsar.ZLib, 50) }
func TestCompressionZSTD(t *testing.T)     { roundTrip(t, "zstd", pulsar.ZSTD, 50) }
func TestCompressionSNAPPY(t *testing.T)   { roundTrip(t, "snappy", pulsar.SNAPPY, 50) }

// roundTrip sends asynchronously in batches with the codec; the consumer gets each message once, in order.
func roundTrip(t *testing.T, tag string, codec pulsar.CompressionType, count int) {
	c := client(t)
	topic := topicName(tag)
	sent := payloads(count, tag+"-payload-that-compresses-well-"+strings.Repeat("x", 64))
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic})
	p := producer(t, c, pulsar.ProducerOptions{
		Topic: topic, CompressionType: codec, BatchingMaxMessages: 10,
		BatchingMaxPublishDelay: 50 * time.Millisecond,
	})
	ids := make([]pulsar.MessageID, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	wg.Add(count)
	for i, s := range sent {
		i := i
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				ids[i], errs[i] = id, err
				wg.Done()
			})
	}
	noErr(t, p.Flush())
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("async sends failed: %v", err)
	}
	got := receive(t, cons, count, true)
	expectEqual(t, "payloads in order", sent, texts(got))
	for i, m := range got {
		if !sameID(ids[i], m.ID()) {
			t.Fatalf("id of message %d: sent %v, received %v", i, ids[i], m.ID())
		}
	}
	if ids[0].BatchIdx() != 0 || ids[1].BatchIdx() != 1 {
		t.Fatalf("messages were not batched: %v %v", ids[0], ids[1])
	}
	expectQuiet(t, cons)
}

// TestTransactionsRefused: like Pulsar without a coordinator (no partitions on the assign topic),
// also on the broker that auto-creates partitioned topics.
func TestTransactionsRefused(t *testing.T) {
	for _, variable := range []string{"PULSAR_SERVICE_URL", "PULSAR_PARTITIONED_SERVICE_URL"} {
		_, err := pulsar.NewClient(pulsar.ClientOptions{
			URL: serviceURL(t, variable), EnableTransaction: true, OperationTimeout: 5 * time.Second,
		})
		if !errors.Is(err, pulsar.ErrTransactionCoordinatorNotEnabled) {
			t.Fatalf("%s: expected ErrTransactionCoordinatorNotEnabled, got %v", variable, err)
		}
	}
	TestConnect(t)
}
