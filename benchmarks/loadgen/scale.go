package main

// loadgen topics: many topics, each with a durable subscription and a producer, for benchmarks/scale.py.
//
//	loadgen topics -mode create -topics N [-clients 8] [-inflight 64] [-hold]
//	loadgen topics -mode reopen -topics N [-clients 8] [-inflight 64]
//	loadgen topics -mode first -topics N [-sample 20] [-seed 1]
//
// create: on each topic PREFIX-i, subscribe (durable, Exclusive, subscription -subscription), create
// a producer and send one message "PREFIX-i", so the subscription's backlog holds it; workers
// (-inflight per client instance, -clients instances) take topics in turn. Prints one line
// "topics=N ok=.. failed=.. seconds=.. rate=.. open_p50_ms=.. open_p99_ms=.. open_max_ms=..", rate
// being topics opened (subscription + producer + the send) per second. With -hold it then waits
// for a line on stdin, closes every producer and consumer (the same workers) and the clients, and
// prints "closed seconds=..".
// reopen: subscribe again on every topic and receive its message (not acknowledged, so it stays):
// "healthy" counts topics whose message came back, "missing" those where none came within -timeout.
// first: one client, -sample random topics one after another: per topic the time from Subscribe
// (partitioned metadata, lookup, subscribe) to its return and to its first message.
//
// Background timers of the client are turned off that a broker-side idle figure would otherwise
// measure: partition discovery (a lookup per producer and consumer every minute), ack grouping.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

type topicsRun struct {
	prefix, subscription string
	queue                int
	timeout              time.Duration
}

func (r *topicsRun) consumerOptions(i int) pulsar.ConsumerOptions {
	return pulsar.ConsumerOptions{Topic: topicName(r.prefix, i), SubscriptionName: r.subscription,
		Type: pulsar.Exclusive, ReceiverQueueSize: r.queue, AutoDiscoveryPeriod: time.Hour,
		AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}}
}

// receiveOwn waits for topic i's one message; false if none came within the timeout.
func (r *topicsRun) receiveOwn(consumer pulsar.Consumer, i int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	msg, err := consumer.Receive(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if string(msg.Payload()) != topicName(r.prefix, i) {
		return false, fmt.Errorf("%s: unexpected message %q", topicName(r.prefix, i), msg.Payload())
	}
	return true, nil
}

// tally counts outcomes and per-topic latencies across workers; the first error is kept.
type tally struct {
	mu        sync.Mutex
	latencies []time.Duration
	ok        int
	missing   int
	failed    int
	firstErr  error
}

func (t *tally) add(latency time.Duration, healthy bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err != nil:
		t.failed++
		if t.firstErr == nil {
			t.firstErr = err
		}
	case healthy:
		t.ok++
		t.latencies = append(t.latencies, latency)
	default:
		t.missing++
	}
}

func (t *tally) latencyFields(name string) string {
	slices.Sort(t.latencies)
	return fmt.Sprintf("%s_p50_ms=%.2f %s_p99_ms=%.2f %s_max_ms=%.2f", name, percentile(t.latencies, 0.5),
		name, percentile(t.latencies, 0.99), name, percentile(t.latencies, 1.0))
}

// forEach runs work(client, i) for i in [0, n) on clients × inflight goroutines.
func forEach(clients []pulsar.Client, inflight, n int, work func(pulsar.Client, int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < len(clients)*inflight; w++ {
		wg.Add(1)
		go func(client pulsar.Client) {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				work(client, i)
			}
		}(clients[w%len(clients)])
	}
	wg.Wait()
	return time.Since(start)
}

// waitForLine prints a result line and, if hold, blocks until scale.py writes a line to stdin.
func waitForLine(line string, hold bool) {
	fmt.Println(line)
	if hold {
		var discard string
		_, _ = fmt.Fscanln(os.Stdin, &discard)
	}
}

func (r *topicsRun) create(clients []pulsar.Client, inflight, n int, hold bool) {
	consumers, producers := make([]pulsar.Consumer, n), make([]pulsar.Producer, n)
	var t tally
	elapsed := forEach(clients, inflight, n, func(client pulsar.Client, i int) {
		started := time.Now()
		consumer, err := client.Subscribe(r.consumerOptions(i))
		if err != nil {
			t.add(0, false, fmt.Errorf("subscribe %d: %w", i, err))
			return
		}
		consumers[i] = consumer
		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topicName(r.prefix, i),
			DisableBatching: true, MaxPendingMessages: 1, SendTimeout: r.timeout,
			PartitionsAutoDiscoveryInterval: time.Hour})
		if err != nil {
			t.add(0, false, fmt.Errorf("producer %d: %w", i, err))
			return
		}
		producers[i] = producer
		opened := time.Since(started)
		_, err = producer.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(topicName(r.prefix, i))})
		t.add(opened, err == nil, err)
	})
	if t.firstErr != nil {
		fmt.Fprintln(os.Stderr, "first error:", t.firstErr)
	}
	waitForLine(fmt.Sprintf("topics=%d ok=%d failed=%d seconds=%.3f rate=%.1f %s", n, t.ok, t.failed,
		elapsed.Seconds(), float64(t.ok)/elapsed.Seconds(), t.latencyFields("open")), hold)
	if !hold {
		return
	}
	elapsed = forEach(clients, inflight, n, func(_ pulsar.Client, i int) {
		if producers[i] != nil {
			producers[i].Close()
		}
		if consumers[i] != nil {
			consumers[i].Close()
		}
	})
	fmt.Printf("closed seconds=%.3f\n", elapsed.Seconds())
}

func (r *topicsRun) reopen(clients []pulsar.Client, inflight, n int) {
	var t tally
	elapsed := forEach(clients, inflight, n, func(client pulsar.Client, i int) {
		started := time.Now()
		consumer, err := client.Subscribe(r.consumerOptions(i))
		if err != nil {
			t.add(0, false, fmt.Errorf("subscribe %d: %w", i, err))
			return
		}
		defer consumer.Close()
		healthy, err := r.receiveOwn(consumer, i)
		t.add(time.Since(started), healthy, err)
	})
	if t.firstErr != nil {
		fmt.Fprintln(os.Stderr, "first error:", t.firstErr)
	}
	fmt.Printf("topics=%d healthy=%d missing=%d failed=%d seconds=%.3f rate=%.1f %s\n", n, t.ok, t.missing,
		t.failed, elapsed.Seconds(), float64(t.ok+t.missing)/elapsed.Seconds(), t.latencyFields("first"))
}

// first times -sample topics one at a time on one client whose connection is already open.
func (r *topicsRun) first(client pulsar.Client, n, sample int, seed int64) error {
	picks := rand.New(rand.NewSource(seed)).Perm(n)[:sample+1]
	if _, err := client.TopicPartitions(topicName(r.prefix, picks[sample])); err != nil { // connect first
		return err
	}
	var subscribed, first tally
	for _, i := range picks[:sample] {
		started := time.Now()
		consumer, err := client.Subscribe(r.consumerOptions(i))
		subscribed.add(time.Since(started), err == nil, err)
		if err != nil {
			first.add(0, false, err)
			continue
		}
		healthy, err := r.receiveOwn(consumer, i)
		first.add(time.Since(started), healthy, err)
		consumer.Close()
	}
	if first.firstErr != nil {
		fmt.Fprintln(os.Stderr, "first error:", first.firstErr)
	}
	fmt.Printf("sample=%d healthy=%d missing=%d failed=%d %s %s\n", sample, first.ok, first.missing, first.failed,
		subscribed.latencyFields("subscribe"), first.latencyFields("first"))
	return nil
}

func runTopics(args []string) error {
	fs := flag.NewFlagSet("topics", flag.ExitOnError)
	url := fs.String("url", "pulsar://127.0.0.1:6650", "service URL")
	mode := fs.String("mode", "create", "create, reopen or first")
	r := topicsRun{}
	fs.StringVar(&r.prefix, "prefix", "scale", "topic name prefix (topics are PREFIX-0 .. PREFIX-N-1)")
	fs.StringVar(&r.subscription, "subscription", "scale", "the durable subscription's name")
	fs.IntVar(&r.queue, "queue", 10, "consumer receiver queue size")
	fs.DurationVar(&r.timeout, "timeout", 60*time.Second, "operation timeout, and wait for a topic's message")
	topics := fs.Int("topics", 1000, "number of topics")
	nClients := fs.Int("clients", 8, "client instances (one connection each)")
	inflight := fs.Int("inflight", 64, "topics being opened at once per client instance")
	hold := fs.Bool("hold", false, "create: keep everything open until a line arrives on stdin, then close")
	sample := fs.Int("sample", 20, "first: topics timed")
	seed := fs.Int64("seed", 1, "first: which topics")
	gcPercent := fs.Int("gc-percent", 100, "the Go collector's target percentage (GOGC)")
	_ = fs.Parse(args[1:])
	debug.SetGCPercent(*gcPercent)
	if *mode == "first" {
		*nClients = 1
	}
	clients := make([]pulsar.Client, *nClients)
	for c := range clients {
		client, err := newClient(*url, r.timeout)
		if err != nil {
			return err
		}
		defer client.Close()
		clients[c] = client
	}
	switch *mode {
	case "create":
		r.create(clients, *inflight, *topics, *hold)
	case "reopen":
		r.reopen(clients, *inflight, *topics)
	case "first":
		return r.first(clients[0], *topics, *sample, *seed)
	default:
		return fmt.Errorf("unknown -mode %q", *mode)
	}
	return nil
}
