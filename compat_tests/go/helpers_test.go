// Package compat drives the official Go client (github.com/apache/pulsar-client-go) against
// pulsard. compat_tests/test_go_client.py builds this package once (go test -c) and runs each
// Test function as its own pytest test, with the broker URLs in PULSAR_SERVICE_URL and
// PULSAR_PARTITIONED_SERVICE_URL, and the first broker's web port in PULSAR_WEB_URL.
package compat

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
)

const (
	receiveTimeout = 5 * time.Second        // how long one expected message may take
	quietPeriod    = 500 * time.Millisecond // listening this long for nothing concludes "no more"
)

func serviceURL(t *testing.T, variable string) string {
	url := os.Getenv(variable)
	if url == "" {
		t.Fatalf("%s is not set: run these scenarios through compat_tests/test_go_client.py", variable)
	}
	return url
}

func newClient(t *testing.T, variable string) pulsar.Client {
	logger := logrus.StandardLogger()
	logger.SetLevel(logrus.WarnLevel)
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              serviceURL(t, variable),
		OperationTimeout: 10 * time.Second,
		Logger:           log.NewLoggerWithLogrus(logger),
	})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// client is a client of the default broker, closed when the test ends.
func client(t *testing.T) pulsar.Client { return newClient(t, "PULSAR_SERVICE_URL") }

// partitionedClient is a client of the broker that creates topics with 3 partitions.
func partitionedClient(t *testing.T) pulsar.Client {
	return newClient(t, "PULSAR_PARTITIONED_SERVICE_URL")
}

func topicName(prefix string) string {
	return "persistent://public/default/go-" + prefix + "-" + uuid.NewString()[:12]
}

func payloads(n int, tag string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", tag, i)
	}
	return out
}

// outcome lets a (value, error) call be checked inline: result(f()).must(t).
type outcome[T any] struct {
	value T
	err   error
}

func result[T any](value T, err error) outcome[T] { return outcome[T]{value, err} }

func (o outcome[T]) must(t *testing.T) T {
	t.Helper()
	noErr(t, o.err)
	return o.value
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func expectEqual(t *testing.T, what string, expected, actual any) {
	t.Helper()
	if !reflect.DeepEqual(expected, actual) {
		t.Fatalf("%s: expected %v but got %v", what, expected, actual)
	}
}

func producer(t *testing.T, c pulsar.Client, options pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	p := result(c.CreateProducer(options)).must(t)
	t.Cleanup(p.Close)
	return p
}

func consumer(t *testing.T, c pulsar.Client, options pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	if options.SubscriptionName == "" {
		options.SubscriptionName = "sub"
	}
	options.SubscriptionInitialPosition = pulsar.SubscriptionPositionEarliest
	cons := result(c.Subscribe(options)).must(t)
	t.Cleanup(cons.Close)
	return cons
}

// sendAll sends every payload synchronously (unbatched producer) and returns the receipted ids.
func sendAll(t *testing.T, c pulsar.Client, topic string, contents []string) []pulsar.MessageID {
	t.Helper()
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := make([]pulsar.MessageID, len(contents))
	for i, s := range contents {
		ids[i] = result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)})).must(t)
	}
	return ids
}

// receive gets exactly n messages, each within the receive timeout, acking them if asked.
func receive(t *testing.T, cons pulsar.Consumer, n int, ack bool) []pulsar.Message {
	t.Helper()
	var out []pulsar.Message
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		msg, err := cons.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("message %d of %d did not arrive (%v); got %v", i, n, err, texts(out))
		}
		out = append(out, msg)
		if ack {
			noErr(t, cons.Ack(msg))
		}
	}
	return out
}

// tryReceive returns a message if one arrives within d, else nil.
func tryReceive(cons pulsar.Consumer, d time.Duration) pulsar.Message {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	msg, err := cons.Receive(ctx)
	if err != nil {
		return nil
	}
	return msg
}

func expectQuiet(t *testing.T, cons pulsar.Consumer) {
	t.Helper()
	if msg := tryReceive(cons, quietPeriod); msg != nil {
		t.Fatalf("unexpected extra message %q", msg.Payload())
	}
}

func texts(messages []pulsar.Message) []string {
	out := make([]string, len(messages))
	for i, m := range messages {
		out[i] = string(m.Payload())
	}
	return out
}

func sorted(values []string) []string {
	out := append([]string(nil), values...)
	sort.Strings(out)
	return out
}

// sameEntry compares ids by ledger, entry and batch index (partition too).
func sameID(a, b pulsar.MessageID) bool {
	return a.LedgerID() == b.LedgerID() && a.EntryID() == b.EntryID() &&
		a.BatchIdx() == b.BatchIdx() && a.PartitionIdx() == b.PartitionIdx()
}

// expectKeyOrder: message i was sent with key "key-(i%keys)"; each key's messages arrived in send order.
func expectKeyOrder(t *testing.T, sent []string, perKey map[string][]string, keys int) {
	t.Helper()
	for k := 0; k < keys; k++ {
		var expected []string
		for i := k; i < len(sent); i += keys {
			expected = append(expected, sent[i])
		}
		expectEqual(t, fmt.Sprintf("order of key-%d", k), expected, perKey[fmt.Sprintf("key-%d", k)])
	}
}
