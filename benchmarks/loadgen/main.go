// Command loadgen drives a Pulsar broker through the official Go client and prints figures.
//
//	loadgen produce -url pulsar://127.0.0.1:6650 -topics 1 -messages 100000 [-batched] [-rate 0] [-size 100] [-pending 1000] [-windows 0]
//	loadgen consume -url pulsar://127.0.0.1:6650 -topics 1 -messages 100000 [-queue 1000]
//
// topics and connections (scale.go, connections.go) open many topics or connections at once
// for benchmarks/scale.py.
//
// All take -gc-percent (default 400, Go's GOGC): the tool shares the machine's cores with the
// broker it measures, and with Go's default of 100 its collector took a fifth of its CPU.
//
// produce sends -messages in total across -topics (one producer each, sending from its own goroutine,
// send_async with a callback);
// -rate 0 means as fast as the client's pending window allows. It prints one line
// "msgs=N seconds=S rate=R p50_ms=.. p95_ms=.. p99_ms=.. max_ms=.." (publish latency: from
// SendAsync to its receipt). -windows D (e.g. 100ms) also prints, to stderr, one line per window of
// D by send time: messages sent in it and their p50/p99/max latency, to place a tail in time.
// consume reads -messages from the earliest position of each topic (a catch-up read of a backlog)
// and prints "msgs=N seconds=S rate=R". -queue is the consumer's receiver queue (the client's
// default, 1000, holds one 1000-message batch; a broker that counts permits as entries, as Pulsar
// does by default, sends batches ahead of it anyway).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

func topicName(prefix string, i int) string {
	return fmt.Sprintf("persistent://public/default/%s-%d", prefix, i)
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000.0
}

func produce(client pulsar.Client, prefix string, topics, messages int, batched bool, rate float64, size, pending int,
	window time.Duration) error {
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	producers := make([]pulsar.Producer, topics)
	for i := range producers {
		opts := pulsar.ProducerOptions{Topic: topicName(prefix, i), DisableBatching: !batched,
			MaxPendingMessages: pending, SendTimeout: 60 * time.Second}
		if batched {
			opts.BatchingMaxMessages = 1000
			opts.BatchingMaxPublishDelay = time.Millisecond
			opts.BatchingMaxSize = 128 * 1024
		}
		p, err := client.CreateProducer(opts)
		if err != nil {
			return err
		}
		defer p.Close()
		producers[i] = p
	}
	latencies := make([]time.Duration, messages)
	sentAt := make([]time.Duration, messages) // since start, for -windows
	var failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(messages)
	ctx := context.Background()
	start := time.Now()
	// One sender per producer, as independent applications would send: a single loop over all
	// producers stalls every topic while one producer's pending queue is full.
	for t := range producers {
		go func(t int) {
			for n := t; n < messages; n += topics {
				if rate > 0 {
					due := start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				idx := n
				sent := time.Now()
				sentAt[idx] = sent.Sub(start)
				producers[t].SendAsync(ctx, &pulsar.ProducerMessage{Payload: payload},
					func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
						latencies[idx] = time.Since(sent)
						if err != nil {
							failed.Add(1)
						}
						wg.Done()
					})
			}
		}(t)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if window > 0 {
		printWindows(window, sentAt, latencies)
	}
	slices.Sort(latencies)
	fmt.Printf("msgs=%d seconds=%.3f rate=%.0f p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.2f failed=%d\n",
		messages, elapsed, float64(messages)/elapsed, percentile(latencies, 0.50),
		percentile(latencies, 0.95), percentile(latencies, 0.99), percentile(latencies, 1.0), failed.Load())
	return nil
}

// printWindows writes, per window of send time, the count and latency percentiles of its messages.
func printWindows(window time.Duration, sentAt, latencies []time.Duration) {
	var buckets [][]time.Duration
	for i, at := range sentAt {
		w := int(at / window)
		for len(buckets) <= w {
			buckets = append(buckets, nil)
		}
		buckets[w] = append(buckets[w], latencies[i])
	}
	for w, b := range buckets {
		slices.Sort(b)
		fmt.Fprintf(os.Stderr, "window_ms=%d msgs=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
			time.Duration(w)*window/time.Millisecond, len(b), percentile(b, 0.50), percentile(b, 0.99), percentile(b, 1.0))
	}
}

func consume(client pulsar.Client, prefix string, topics, messages, queue int) error {
	names := make([]string, topics)
	for i := range names {
		names[i] = topicName(prefix, i)
	}
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topics: names, SubscriptionName: "catchup",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: queue})
	if err != nil {
		return err
	}
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	for n := 0; n < messages; n++ {
		msg, err := consumer.Receive(ctx)
		if err != nil {
			return fmt.Errorf("after %d messages: %w", n, err)
		}
		consumer.AckID(msg.ID())
	}
	elapsed := time.Since(start).Seconds()
	fmt.Printf("msgs=%d seconds=%.3f rate=%.0f\n", messages, elapsed, float64(messages)/elapsed)
	return nil
}

// newClient is the official client with the load tool's settings: long operation timeout,
// warnings only.
func newClient(url string, timeout time.Duration) (pulsar.Client, error) {
	logger := logrus.New()
	logger.SetLevel(logrus.WarnLevel)
	return pulsar.NewClient(pulsar.ClientOptions{URL: url, OperationTimeout: timeout,
		ConnectionMaxIdleTime: -1, Logger: log.NewLoggerWithLogrus(logger)})
}

func main() {
	commands := map[string]func([]string) error{"produce": runLoad, "consume": runLoad,
		"topics": runTopics, "connections": runConnections}
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: loadgen produce|consume|topics|connections [flags]")
		os.Exit(2)
	}
	if err := commands[os.Args[1]](os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// runLoad is produce or consume (args[0]) with its flags.
func runLoad(args []string) error {
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	url := fs.String("url", "pulsar://127.0.0.1:6650", "service URL")
	prefix := fs.String("prefix", "load", "topic name prefix (topics are PREFIX-0 .. PREFIX-N-1)")
	topics := fs.Int("topics", 1, "number of topics")
	messages := fs.Int("messages", 100000, "messages in total")
	batched := fs.Bool("batched", false, "client-side batching (1000 messages / 1 ms / 128 KiB)")
	rate := fs.Float64("rate", 0, "messages per second in total (0: as fast as possible)")
	size := fs.Int("size", 100, "message size in bytes")
	pending := fs.Int("pending", 1000, "max pending messages per producer")
	queue := fs.Int("queue", 1000, "consumer receiver queue size (messages)")
	windows := fs.Duration("windows", 0, "produce: also print latency per window of this length to stderr (0: none)")
	gcPercent := fs.Int("gc-percent", 400, "the Go collector's target percentage (GOGC)")
	_ = fs.Parse(args[1:])
	debug.SetGCPercent(*gcPercent)

	client, err := newClient(*url, 60*time.Second)
	if err != nil {
		return err
	}
	defer client.Close()
	if args[0] == "produce" {
		return produce(client, *prefix, *topics, *messages, *batched, *rate, *size, *pending, *windows)
	}
	return consume(client, *prefix, *topics, *messages, *queue)
}
