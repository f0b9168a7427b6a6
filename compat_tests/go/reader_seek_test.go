package compat

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// sendBatched sends asynchronously through a batching producer and returns the ids in send order.
func sendBatched(t *testing.T, c pulsar.Client, topic string, contents []string) []pulsar.MessageID {
	t.Helper()
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: 20 * time.Millisecond})
	ids := make([]pulsar.MessageID, len(contents))
	var wg sync.WaitGroup
	wg.Add(len(contents))
	for i, s := range contents {
		i := i
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Errorf("send %d: %v", i, err)
				}
				ids[i] = id
				wg.Done()
			})
	}
	noErr(t, p.Flush())
	wg.Wait()
	return ids
}

func reader(t *testing.T, c pulsar.Client, options pulsar.ReaderOptions) pulsar.Reader {
	t.Helper()
	r := result(c.CreateReader(options)).must(t)
	t.Cleanup(r.Close)
	return r
}

func readAll(t *testing.T, r pulsar.Reader, n int) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		m, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("reader message %d missing (%v) after %v", i, err, out)
		}
		out = append(out, string(m.Payload()))
	}
	return out
}

func TestReader(t *testing.T) {
	c := client(t)
	topic := topicName("reader")
	sent := payloads(10, "rd")
	ids := sendAll(t, c, topic, sent)
	r := reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	expectEqual(t, "from earliest", sent, readAll(t, r, 10))
	if r.HasNext() {
		t.Fatal("HasNext after the last message")
	}
	r = reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[4]})
	expectEqual(t, "after id 4 (exclusive)", sent[5:], readAll(t, r, 5))
	r = reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[4], StartMessageIDInclusive: true})
	expectEqual(t, "from id 4 (inclusive)", sent[4:], readAll(t, r, 6))
	r = reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	if r.HasNext() {
		t.Fatal("a reader at latest has something before anything new is sent")
	}
	sendAll(t, c, topic, []string{"new"})
	expectEqual(t, "only the new message", []string{"new"}, readAll(t, r, 1))
}

func TestReaderBatched(t *testing.T) {
	c := client(t)
	topic := topicName("readerbatch")
	sent := payloads(20, "rb")
	ids := sendBatched(t, c, topic, sent)
	r := reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[7], StartMessageIDInclusive: true})
	expectEqual(t, "from batch message 7 (inclusive)", sent[7:], readAll(t, r, 13))
}

func TestSeekByID(t *testing.T) {
	c := client(t)
	topic := topicName("seekid")
	sent := payloads(10, "si")
	ids := sendAll(t, c, topic, sent)
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seeker"})
	receive(t, cons, 10, true)
	noErr(t, cons.Seek(ids[3]))
	// The broker redelivers from id 3 itself; the Go consumer filters the seek id and what precedes it.
	expectEqual(t, "after seek to id 3", sent[4:], texts(receive(t, cons, 6, true)))
	expectQuiet(t, cons)
	// The Go consumer refuses Seek(EarliestMessageID()) (partition -1), and keeps filtering up to
	// its last seek id across later seeks: a new consumer rewinds to time zero instead.
	cons.Close()
	cons = consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seeker"})
	noErr(t, cons.SeekByTime(time.UnixMilli(0)))
	expectEqual(t, "after seek to the beginning", sent, texts(receive(t, cons, 10, true)))
	expectQuiet(t, cons)
}

func TestSeekByTime(t *testing.T) {
	c := client(t)
	topic := topicName("seektime")
	sent := payloads(10, "st")
	sendAll(t, c, topic, sent[:5])
	time.Sleep(50 * time.Millisecond)
	middle := time.Now()
	time.Sleep(50 * time.Millisecond)
	sendAll(t, c, topic, sent[5:])
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seeker"})
	all := receive(t, cons, 10, true)
	if !all[5].PublishTime().After(middle) {
		t.Fatalf("publish times do not straddle the seek time")
	}
	noErr(t, cons.SeekByTime(middle))
	expectEqual(t, "after seek by time", sent[5:], texts(receive(t, cons, 5, true)))
	expectQuiet(t, cons)
}

func TestGetLastMessageID(t *testing.T) {
	c := client(t)
	topic := topicName("lastid")
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "seeker"})
	last := result(cons.GetLastMessageIDs()).must(t)
	expectEqual(t, "one topic", 1, len(last))
	expectEqual(t, "entry of an empty topic", int64(-1), last[0].EntryID())
	plain := sendAll(t, c, topic, payloads(3, "plain"))
	last = result(cons.GetLastMessageIDs()).must(t)
	if !sameID(plain[2], last[0]) {
		t.Fatalf("last id after plain sends: expected %v, got %v", plain[2], last[0])
	}
	batched := sendBatched(t, c, topic, payloads(5, "batch"))
	last = result(cons.GetLastMessageIDs()).must(t)
	if !sameID(batched[4], last[0]) {
		t.Fatalf("last id after a batch: expected %v, got %v", batched[4], last[0])
	}
	r := reader(t, c, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if id := result(r.GetLastMessageID()).must(t); !sameID(batched[4], id) {
		t.Fatalf("reader's last id: expected %v, got %v", batched[4], id)
	}
}
