package compat

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// The TestTxnBuffer* scenarios run against a broker with transactionCoordinatorEnabled=true
// (PULSAR_TXN_SERVICE_URL; PULSAR_TXN_PARTITIONED names a topic of it with 3 partitions), from
// compat_tests/test_transactions_e2e.py, with txn_coordinator_test.go's client. This client
// (v0.19.0) puts a message's transaction id on CommandSend only, never in its metadata: the
// broker must still never deliver aborted ones.

func txnClient(t *testing.T) pulsar.Client {
	c, err := transactionalClient(serviceURL(t, "PULSAR_TXN_SERVICE_URL"))
	noErr(t, err)
	t.Cleanup(c.Close)
	return c
}

func begin(t *testing.T, c pulsar.Client) pulsar.Transaction {
	txn, err := c.NewTransaction(time.Minute)
	noErr(t, err)
	return txn
}

func sendInTxn(t *testing.T, p pulsar.Producer, txn pulsar.Transaction, payload string) {
	_, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn})
	noErr(t, err)
}

func TestTxnBufferAbortedMessagesAreNeverDelivered(t *testing.T) {
	c := txnClient(t)
	topic := topicName("txn-abort")
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	prod := producer(t, c, pulsar.ProducerOptions{Topic: topic})
	committed, aborted := begin(t, c), begin(t, c)
	for _, i := range []string{"0", "1", "2"} {
		sendInTxn(t, prod, committed, "c-"+i)
		sendInTxn(t, prod, aborted, "x-"+i)
	}
	noErr(t, aborted.Abort(context.Background()))
	noErr(t, committed.Commit(context.Background()))
	expectEqual(t, "consumed", []string{"c-0", "c-1", "c-2"}, texts(receive(t, cons, 3, true)))
	expectQuiet(t, cons)

	reader, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	noErr(t, err)
	defer reader.Close()
	var read []string
	for reader.HasNext() {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		msg, err := reader.Next(ctx)
		cancel()
		noErr(t, err)
		read = append(read, string(msg.Payload()))
	}
	expectEqual(t, "read", []string{"c-0", "c-1", "c-2"}, read)
}

func TestTxnBufferAcrossTwoTopicsAndAPartitionedTopic(t *testing.T) {
	c := txnClient(t)
	topics := []string{topicName("txn-a"), topicName("txn-b"), os.Getenv("PULSAR_TXN_PARTITIONED")}
	var consumers []pulsar.Consumer
	var producers []pulsar.Producer
	for _, topic := range topics {
		consumers = append(consumers, consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "go-sub",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest}))
		producers = append(producers, producer(t, c, pulsar.ProducerOptions{Topic: topic}))
	}
	committed, aborted := begin(t, c), begin(t, c)
	for _, i := range []string{"0", "1", "2"} {
		for _, p := range producers {
			sendInTxn(t, p, committed, "c-"+i)
			sendInTxn(t, p, aborted, "x-"+i)
		}
	}
	noErr(t, aborted.Abort(context.Background()))
	noErr(t, committed.Commit(context.Background()))
	for index, cons := range consumers {
		got := texts(receive(t, cons, 3, true))
		sort.Strings(got)
		expectEqual(t, "messages of "+topics[index], []string{"c-0", "c-1", "c-2"}, got)
		expectQuiet(t, cons)
	}
}
