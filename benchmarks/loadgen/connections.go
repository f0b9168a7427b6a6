package main

// loadgen connections: a connect storm and per-consumer flow-control fairness, for benchmarks/scale.py.
//
//	loadgen connections -connections C -topics T [-messages M] [-queue Q] [-hold]
//
// C client instances, one connection each, all connecting at once (a partitioned-metadata
// request opens the connection): prints "connections=C ok=.. failed=.. seconds=..". Then each
// subscribes one consumer to topic PREFIX-(c mod T) in one Shared subscription per topic, all at
// once: "consumers=C ok=.. failed=.. seconds=..". Then a separate client publishes M unbatched
// messages to every topic while the consumers receive (without acknowledging: flow control
// alone decides who gets what): "fair messages=.. received=.. seconds=.. min=.. p50=.. max=..
// zero=.. topic_spread=..", the per-consumer counts (topic_spread: the widest max/min ratio
// within one topic's consumers, 0 when a consumer got none). With -hold, each line waits for a
// line on stdin before the next phase (scale.py samples the broker meanwhile).

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
)

// allAtOnce runs work(i) for i in [0, n) each in its own goroutine; returns failures and the time.
func allAtOnce(n int, work func(int) error) (int, time.Duration) {
	var failed atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := work(i); err != nil {
				failed.Add(1)
				firstErr.Do(func() { fmt.Fprintln(os.Stderr, "first error:", err) })
			}
		}()
	}
	wg.Wait()
	return int(failed.Load()), time.Since(start)
}

// publish sends messages unbatched to each topic, a producer and a sender goroutine per topic.
func publish(url, prefix string, topics, messages int) error {
	client, err := newClient(url, 60*time.Second)
	if err != nil {
		return err
	}
	defer client.Close()
	failed, _ := allAtOnce(topics, func(t int) error {
		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topicName(prefix, t),
			DisableBatching: true, SendTimeout: 60 * time.Second})
		if err != nil {
			return err
		}
		defer producer.Close()
		var sendErr atomic.Value
		for m := 0; m < messages; m++ {
			producer.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: make([]byte, 100)},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
					if err != nil {
						sendErr.Store(err)
					}
				})
		}
		if err := producer.Flush(); err != nil {
			return err
		}
		if err, _ := sendErr.Load().(error); err != nil {
			return err
		}
		return nil
	})
	if failed > 0 {
		return fmt.Errorf("publishing failed on %d topics", failed)
	}
	return nil
}

// fairness counts what each consumer received until all messages arrived or none came for idle.
func fairness(consumers []pulsar.Consumer, total int, idle time.Duration, published <-chan error) (
	counts []int, elapsed time.Duration, err error) {
	counts = make([]int, len(consumers))
	var received atomic.Int64
	var lastAt atomic.Int64
	start := time.Now()
	lastAt.Store(int64(time.Since(start)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for c, consumer := range consumers {
		if consumer == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if _, err := consumer.Receive(ctx); err != nil {
					return
				}
				counts[c]++
				lastAt.Store(int64(time.Since(start)))
				received.Add(1)
			}
		}()
	}
	err = <-published
	for int(received.Load()) < total && time.Since(start)-time.Duration(lastAt.Load()) < idle {
		time.Sleep(10 * time.Millisecond)
	}
	elapsed = time.Duration(lastAt.Load())
	cancel()
	wg.Wait()
	return counts, elapsed, err
}

// spread is the largest max/min ratio of counts within one topic's consumers (0: one got none).
func spread(counts []int, topics int) float64 {
	widest := 1.0
	for t := 0; t < topics; t++ {
		least, most := -1, 0
		for c := t; c < len(counts); c += topics {
			if least < 0 || counts[c] < least {
				least = counts[c]
			}
			most = max(most, counts[c])
		}
		if least == 0 {
			return 0
		}
		widest = max(widest, float64(most)/float64(least))
	}
	return widest
}

func runConnections(args []string) error {
	fs := flag.NewFlagSet("connections", flag.ExitOnError)
	url := fs.String("url", "pulsar://127.0.0.1:6650", "service URL")
	prefix := fs.String("prefix", "fair", "topic name prefix")
	n := fs.Int("connections", 1000, "client instances, one connection and one consumer each")
	topics := fs.Int("topics", 100, "topics, one Shared subscription each")
	messages := fs.Int("messages", 2000, "messages published to each topic")
	queue := fs.Int("queue", 1000, "each consumer's receiver queue (its flow-control permits)")
	idle := fs.Duration("idle", 20*time.Second, "stop waiting for messages after this long without one")
	hold := fs.Bool("hold", false, "wait for a line on stdin after each phase")
	gcPercent := fs.Int("gc-percent", 100, "the Go collector's target percentage (GOGC)")
	_ = fs.Parse(args[1:])
	debug.SetGCPercent(*gcPercent)

	clients := make([]pulsar.Client, *n)
	for c := range clients {
		client, err := newClient(*url, 120*time.Second)
		if err != nil {
			return err
		}
		defer client.Close()
		clients[c] = client
	}
	failed, elapsed := allAtOnce(*n, func(c int) error {
		_, err := clients[c].TopicPartitions(topicName(*prefix, c%*topics))
		return err
	})
	waitForLine(fmt.Sprintf("connections=%d ok=%d failed=%d seconds=%.3f", *n, *n-failed, failed,
		elapsed.Seconds()), *hold)

	consumers := make([]pulsar.Consumer, *n)
	failed, elapsed = allAtOnce(*n, func(c int) error {
		consumer, err := clients[c].Subscribe(pulsar.ConsumerOptions{Topic: topicName(*prefix, c%*topics),
			SubscriptionName: "fair", Type: pulsar.Shared, ReceiverQueueSize: *queue,
			AutoDiscoveryPeriod: time.Hour, AckGroupingOptions: &pulsar.AckGroupingOptions{MaxSize: 1}})
		consumers[c] = consumer
		return err
	})
	waitForLine(fmt.Sprintf("consumers=%d ok=%d failed=%d seconds=%.3f", *n, *n-failed, failed,
		elapsed.Seconds()), *hold)

	total := *topics * *messages
	published := make(chan error, 1)
	go func() { published <- publish(*url, *prefix, *topics, *messages) }()
	counts, elapsed, err := fairness(consumers, total, *idle, published)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	topicSpread := spread(counts, *topics)
	received, zero := 0, 0
	for _, count := range counts {
		received += count
		if count == 0 {
			zero++
		}
	}
	slices.Sort(counts)
	waitForLine(fmt.Sprintf("fair messages=%d received=%d seconds=%.3f min=%d p50=%d max=%d zero=%d topic_spread=%.2f",
		total, received, elapsed.Seconds(), counts[0], counts[len(counts)/2], counts[len(counts)-1], zero,
		topicSpread), *hold)
	allAtOnce(*n, func(c int) error {
		if consumers[c] != nil {
			consumers[c].Close()
		}
		return nil
	})
	return nil
}
