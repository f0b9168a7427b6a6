// Command txnworker is the consume-transform-produce worker of benchmarks/txn_crash_harness.py,
// on the official Go client (pulsar-client-go v0.19.0, EnableTransaction):
//
//	txnworker -url pulsar://... -input T -output T -subscription S [-batch 5] [-abort-ratio 0.1] [-seed N] [-txn-timeout 5s]
//
// It loops: receive up to -batch numbered messages from -input (an Exclusive subscription), send
// "N N*N MOST:LEAST" per input to -output in a transaction, acknowledge the inputs in the same
// transaction, and commit it, or abort it on purpose with probability -abort-ratio. Any error
// (the broker killed under it) abandons the transaction and the whole client, and it starts
// again with a new one: the broker aborts what it abandoned when the transaction times out.
// On an Exclusive subscription Pulsar gives the messages of an aborted transaction back only when
// the consumer asks for them (or subscribes again): the worker nacks the messages of the
// transactions it aborts, and subscribes again after 2 s without a message, to get those of
// the transactions the broker aborted.
// It stops when its stdin closes. One stdout line per transaction, for the harness to check:
//
//	COMMITTED MOST:LEAST n,n,...   Commit returned success: every output must be visible
//	ABORTED MOST:LEAST n,n,...     aborted on purpose: no output may be visible
//	ABANDONED MOST:LEAST n,n,...   a send or an ack failed, no commit was asked for: the broker
//	                               aborts it on its timeout, no output may be visible
//	UNKNOWN MOST:LEAST n,n,...     the commit's answer was lost: all outputs visible, or none
//
// and "ERROR text" lines for what made it start again.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

// stepTimeout bounds every client call: the client's coordinator calls wait for its reconnection
// without a deadline of their own, and the worker would rather start again.
const stepTimeout = 5 * time.Second

var errStepTimeout = errors.New("step timed out")

type options struct {
	url, input, output, subscription string
	batch                            int
	abortRatio                       float64
	txnTimeout                       time.Duration
}

type session struct {
	client   pulsar.Client
	consumer pulsar.Consumer
	producer pulsar.Producer
}

// within runs f and gives up waiting after stepTimeout (f may go on in the background).
func within(f func() error) error { return withinTime(stepTimeout, f) }

func withinTime(limit time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		return errStepTimeout
	}
}

// connect makes a session within stepTimeout; one made later is closed, for its Exclusive
// consumer not to keep the next one out.
func connect(o options) (*session, error) {
	type made struct {
		s   *session
		err error
	}
	done := make(chan made, 1)
	go func() {
		s, err := open(o)
		done <- made{s, err}
	}()
	select {
	case m := <-done:
		return m.s, m.err
	case <-time.After(stepTimeout):
		go func() {
			if m := <-done; m.s != nil {
				m.s.close()
			}
		}()
		return nil, errStepTimeout
	}
}

func open(o options) (*session, error) {
	logger := logrus.New()
	logger.SetLevel(logrus.WarnLevel)
	logger.SetOutput(os.Stderr)
	s := &session{}
	var err error
	s.client, err = pulsar.NewClient(pulsar.ClientOptions{URL: o.url, EnableTransaction: true,
		OperationTimeout: stepTimeout, ConnectionTimeout: 2 * time.Second,
		Logger: log.NewLoggerWithLogrus(logger)})
	if err == nil {
		s.consumer, err = s.client.Subscribe(pulsar.ConsumerOptions{Topic: o.input, SubscriptionName: o.subscription,
			Type: pulsar.Exclusive, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
			ReceiverQueueSize: 4 * o.batch, NackRedeliveryDelay: 100 * time.Millisecond})
	}
	if err == nil {
		s.producer, err = s.client.CreateProducer(pulsar.ProducerOptions{Topic: o.output, DisableBatching: true,
			SendTimeout: stepTimeout})
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close lets go of the client; a call still blocked in it is abandoned with it. The consumer
// is closed first (for a second at most), for the next session's to be let in at once.
func (s *session) close() {
	if s.consumer != nil {
		_ = withinTime(time.Second, func() error { s.consumer.Close(); return nil })
	}
	if s.client != nil {
		go s.client.Close()
	}
}

// receive returns up to n distinct numbered messages: waits up to a second for the first.
func (s *session) receive(n int) ([]pulsar.Message, []int, error) {
	var messages []pulsar.Message
	var numbers []int
	seen := map[int]bool{}
	wait := time.Second
	for len(messages) < n {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		m, err := s.consumer.Receive(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		number, err := strconv.Atoi(string(m.Payload()))
		if err != nil {
			return nil, nil, fmt.Errorf("input %q is not a number", m.Payload())
		}
		if !seen[number] {
			seen[number] = true
			messages = append(messages, m)
			numbers = append(numbers, number)
		}
		wait = 50 * time.Millisecond
	}
	return messages, numbers, nil
}

func joined(numbers []int) string {
	parts := make([]string, len(numbers))
	for i, n := range numbers {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// transform runs one transaction over the messages and reports it; an error ends the session.
func (s *session) transform(o options, rng *rand.Rand, messages []pulsar.Message, numbers []int) error {
	var txn pulsar.Transaction
	if err := within(func() error {
		var err error
		txn, err = s.client.NewTransaction(o.txnTimeout)
		return err
	}); err != nil {
		return fmt.Errorf("new transaction: %w", err)
	}
	id := txn.GetTxnID()
	tag := fmt.Sprintf("%d:%d", id.MostSigBits, id.LeastSigBits)
	report := func(outcome string) { fmt.Printf("%s %s %s\n", outcome, tag, joined(numbers)) }
	err := within(func() error {
		for i, m := range messages {
			payload := fmt.Sprintf("%d %d %s", numbers[i], numbers[i]*numbers[i], tag)
			if _, err := s.producer.Send(context.Background(),
				&pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn}); err != nil {
				return fmt.Errorf("send: %w", err)
			}
			if err := s.consumer.AckWithTxn(m, txn); err != nil {
				return fmt.Errorf("ack: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		report("ABANDONED")
		return err
	}
	if rng.Float64() < o.abortRatio {
		report("ABORTED")
		if err := within(func() error { return txn.Abort(context.Background()) }); err != nil {
			return fmt.Errorf("abort: %w", err)
		}
		for _, m := range messages {
			s.consumer.Nack(m)
		}
		return nil
	}
	if err := within(func() error { return txn.Commit(context.Background()) }); err != nil {
		report("UNKNOWN")
		return fmt.Errorf("commit: %w", err)
	}
	report("COMMITTED")
	return nil
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "pulsar://127.0.0.1:6650", "service URL")
	flag.StringVar(&o.input, "input", "", "input topic")
	flag.StringVar(&o.output, "output", "", "output topic")
	flag.StringVar(&o.subscription, "subscription", "transform", "input subscription (Exclusive)")
	flag.IntVar(&o.batch, "batch", 5, "messages per transaction, at most")
	flag.Float64Var(&o.abortRatio, "abort-ratio", 0.1, "share of transactions aborted on purpose")
	seed := flag.Int64("seed", 1, "seed of the aborts on purpose")
	flag.DurationVar(&o.txnTimeout, "txn-timeout", 5*time.Second, "transaction timeout")
	flag.Parse()
	rng := rand.New(rand.NewSource(*seed))
	var stopping atomic.Bool
	go func() { // the harness closes stdin to stop the worker
		_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		stopping.Store(true)
	}()
	var s *session
	idleSince := time.Now()
	for !stopping.Load() {
		var err error
		if s == nil {
			if s, err = connect(o); err != nil {
				fmt.Printf("ERROR connect: %v\n", err)
				time.Sleep(200 * time.Millisecond)
				continue
			}
			idleSince = time.Now()
		}
		messages, numbers, err := s.receive(o.batch)
		if err == nil && len(messages) > 0 {
			idleSince = time.Now()
			err = s.transform(o, rng, messages, numbers)
		}
		if err != nil {
			fmt.Printf("ERROR %v\n", err)
		}
		if err != nil || time.Since(idleSince) > 2*time.Second {
			s.close()
			s = nil
		}
	}
	if s != nil {
		s.close()
	}
	fmt.Println("STOPPED")
}
