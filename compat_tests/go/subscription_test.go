package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// produceKeyed sends contents unbatched; message i has key "key-(i%5)" when keyed.
func produceKeyed(t *testing.T, c pulsar.Client, topic string, contents []string, keyed bool) {
	t.Helper()
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for i, s := range contents {
		msg := &pulsar.ProducerMessage{Payload: []byte(s)}
		if keyed {
			msg.Key = fmt.Sprintf("key-%d", i%5)
		}
		result(p.Send(context.Background(), msg)).must(t)
	}
}

// drain receives from several consumers until total messages arrived; returns payload -> consumer index.
func drain(t *testing.T, consumers []pulsar.Consumer, total int) ([]string, []int, []pulsar.Message) {
	t.Helper()
	var got []string
	var owners []int
	var messages []pulsar.Message
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < total && time.Now().Before(deadline) {
		for i, cons := range consumers {
			if m := tryReceive(cons, 200*time.Millisecond); m != nil {
				got = append(got, string(m.Payload()))
				owners = append(owners, i)
				messages = append(messages, m)
				noErr(t, cons.Ack(m))
			}
		}
	}
	if len(got) < total {
		t.Fatalf("only %d of %d messages arrived: %v", len(got), total, got)
	}
	return got, owners, messages
}

func TestSubscriptionExclusive(t *testing.T) {
	c := client(t)
	topic := topicName("exclusive")
	sent := payloads(10, "ex")
	first := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Exclusive})
	_, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Exclusive})
	if err == nil || !contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("a second consumer on an Exclusive subscription: expected ConsumerBusy, got %v", err)
	}
	produceKeyed(t, c, topic, sent, false)
	expectEqual(t, "all to the one consumer", sent, texts(receive(t, first, len(sent), true)))
	expectQuiet(t, first)
}

func TestSubscriptionShared(t *testing.T) {
	c := client(t)
	topic := topicName("shared")
	sent := payloads(40, "sh")
	a := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Shared, ReceiverQueueSize: 5})
	b := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Shared, ReceiverQueueSize: 5})
	produceKeyed(t, c, topic, sent, false)
	got, owners, _ := drain(t, []pulsar.Consumer{a, b}, len(sent))
	expectEqual(t, "each message once", sorted(sent), sorted(got))
	used := map[int]bool{}
	for _, o := range owners {
		used[o] = true
	}
	expectEqual(t, "consumers that got messages", 2, len(used))
	expectQuiet(t, a)
	expectQuiet(t, b)
}

func TestSubscriptionFailover(t *testing.T) {
	c := client(t)
	topic := topicName("failover")
	sent := payloads(10, "fo")
	a := result(c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Failover, Name: "a"})).must(t)
	b := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Failover, Name: "b"})
	produceKeyed(t, c, topic, sent[:5], false)
	active, standby := a, b
	first := tryReceive(a, 2*time.Second)
	if first == nil {
		active, standby = b, a
	}
	var got []string
	if first != nil {
		got = append(got, string(first.Payload()))
		noErr(t, a.Ack(first))
	}
	got = append(got, texts(receive(t, active, 5-len(got), true))...)
	expectEqual(t, "first half to the active consumer", sent[:5], got)
	expectQuiet(t, standby)
	active.Close()
	produceKeyed(t, c, topic, sent[5:], false)
	expectEqual(t, "second half to the standby", sent[5:], texts(receive(t, standby, 5, true)))
	expectQuiet(t, standby)
	if active != a {
		a.Close()
	}
}

func TestSubscriptionKeyShared(t *testing.T) {
	c := client(t)
	topic := topicName("keyshared")
	sent := payloads(50, "ks")
	a := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.KeyShared})
	b := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.KeyShared})
	produceKeyed(t, c, topic, sent, true)
	_, owners, messages := drain(t, []pulsar.Consumer{a, b}, len(sent))
	ownerOfKey := map[string]int{}
	perKey := map[string][]string{}
	for i, m := range messages {
		if o, seen := ownerOfKey[m.Key()]; seen && o != owners[i] {
			t.Fatalf("key %s went to two consumers", m.Key())
		}
		ownerOfKey[m.Key()] = owners[i]
		perKey[m.Key()] = append(perKey[m.Key()], string(m.Payload()))
	}
	expectKeyOrder(t, sent, perKey, 5)
	expectQuiet(t, a)
	expectQuiet(t, b)
}

func TestAckIndividual(t *testing.T) {
	c := client(t)
	topic := topicName("ackind")
	sent := payloads(10, "ai")
	produceKeyed(t, c, topic, sent, false)
	var unacked []string
	first := result(c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})).must(t)
	for i, m := range receive(t, first, 10, false) {
		if i%3 == 0 {
			unacked = append(unacked, string(m.Payload()))
		} else {
			noErr(t, first.Ack(m))
		}
	}
	first.Close()
	again := consumer(t, c, pulsar.ConsumerOptions{Topic: topic})
	expectEqual(t, "only the unacked come back", unacked, texts(receive(t, again, len(unacked), true)))
	expectQuiet(t, again)
}

func TestAckCumulative(t *testing.T) {
	c := client(t)
	topic := topicName("ackcum")
	sent := payloads(10, "ac")
	produceKeyed(t, c, topic, sent, false)
	first := result(c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Failover,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})).must(t)
	got := receive(t, first, 10, false)
	noErr(t, first.AckCumulative(got[5]))
	first.Close()
	again := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Failover})
	expectEqual(t, "after the cumulative ack", sent[6:], texts(receive(t, again, 4, true)))
	expectQuiet(t, again)
}

func TestNegativeAckRedelivery(t *testing.T) {
	c := client(t)
	topic := topicName("nack")
	sent := payloads(3, "na")
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond})
	produceKeyed(t, c, topic, sent, false)
	for round := 0; round < 3; round++ {
		got := receive(t, cons, 3, false)
		expectEqual(t, fmt.Sprintf("round %d contents", round), sorted(sent), sorted(texts(got)))
		for _, m := range got {
			expectEqual(t, "redelivery count of "+string(m.Payload()), uint32(round), m.RedeliveryCount())
			if round < 2 {
				cons.Nack(m)
			} else {
				noErr(t, cons.Ack(m))
			}
		}
	}
	expectQuiet(t, cons)
}

func TestDeadLetterQueue(t *testing.T) {
	c := client(t)
	topic := topicName("dlq")
	dlq := topic + "-my-dlq"
	dead := consumer(t, c, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "dlq-reader"})
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, Type: pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond,
		DLQ:                 &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: dlq}})
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("poison"), Key: "poison-key",
		Properties: map[string]string{"origin": "go"}})).must(t)
	result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("fine")})).must(t)
	poison := 0
	for i := 0; i < 4; i++ {
		m := receive(t, cons, 1, false)[0]
		if string(m.Payload()) == "fine" {
			noErr(t, cons.Ack(m))
			continue
		}
		expectEqual(t, "redelivery count", uint32(poison), m.RedeliveryCount())
		poison++
		cons.Nack(m)
	}
	expectEqual(t, "poison deliveries before the DLQ", 3, poison)
	moved := receive(t, dead, 1, true)[0]
	expectEqual(t, "dead letter payload", "poison", string(moved.Payload()))
	expectEqual(t, "dead letter key", "poison-key", moved.Key())
	expectEqual(t, "dead letter property", "go", moved.Properties()["origin"])
	expectQuiet(t, cons)
	expectQuiet(t, dead)
}
