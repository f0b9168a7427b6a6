package compat

// Pending acks with the Go client's EnableTransaction (run by test_txn_pending_ack_clients.py
// against a broker with transactionCoordinatorEnabled=true in PULSAR_TXN_SERVICE_URL, with
// txn_buffer_test.go's client): acks in a transaction are held until it ends, an abort delivers
// the messages again, a commit keeps them acknowledged (PENDING_ACK_COMMIT_TOPIC names its topic:
// the test restarts the broker after it and checks), and consume-transform-produce acks one
// topic and produces to another in one transaction.

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

func sharedConsumer(t *testing.T, c pulsar.Client, topic, subscription string) pulsar.Consumer {
	t.Helper()
	return consumer(t, c, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: subscription, Type: pulsar.Shared})
}

func ackAllWithTxn(t *testing.T, cons pulsar.Consumer, messages []pulsar.Message, txn pulsar.Transaction) {
	t.Helper()
	for _, m := range messages {
		noErr(t, cons.AckWithTxn(m, txn))
	}
}

func TestTxnPendingAckAbortRedelivers(t *testing.T) {
	c := txnClient(t)
	topic := topicName("txn-ack-abort")
	cons := sharedConsumer(t, c, topic, "sub")
	sent := payloads(3, "abort")
	sendAll(t, c, topic, sent)
	txn := begin(t, c)
	ackAllWithTxn(t, cons, receive(t, cons, 3, false), txn)
	noErr(t, txn.Abort(context.Background()))
	expectEqual(t, "redelivered after the abort", sent, sorted(texts(receive(t, cons, 3, false))))
}

func TestTxnPendingAckCommitKeepsAcks(t *testing.T) {
	c := txnClient(t)
	topic := os.Getenv("PENDING_ACK_COMMIT_TOPIC")
	if topic == "" {
		topic = topicName("txn-ack-commit")
	}
	cons := result(c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})).must(t)
	sendAll(t, c, topic, payloads(3, "commit"))
	txn := begin(t, c)
	ackAllWithTxn(t, cons, receive(t, cons, 3, false), txn)
	noErr(t, txn.Commit(context.Background()))
	cons.Close()
	expectQuiet(t, sharedConsumer(t, c, topic, "sub"))
}

func transformInTxn(t *testing.T, c pulsar.Client, in pulsar.Consumer, out pulsar.Producer, n int, commit bool) {
	t.Helper()
	txn := begin(t, c)
	for _, m := range receive(t, in, n, false) {
		result(out.Send(context.Background(), &pulsar.ProducerMessage{
			Payload: []byte(strings.ToUpper(string(m.Payload()))), Transaction: txn})).must(t)
		noErr(t, in.AckWithTxn(m, txn))
	}
	if commit {
		noErr(t, txn.Commit(context.Background()))
	} else {
		noErr(t, txn.Abort(context.Background()))
	}
}

func TestTxnPendingAckConsumeTransformProduce(t *testing.T) {
	c := txnClient(t)
	source, sink := topicName("txn-ctp-in"), topicName("txn-ctp-out")
	in := sharedConsumer(t, c, source, "transform")
	results := sharedConsumer(t, c, sink, "results")
	out := producer(t, c, pulsar.ProducerOptions{Topic: sink, DisableBatching: true, SendTimeout: -1})
	sent := payloads(4, "ctp")
	sendAll(t, c, source, sent)
	transformInTxn(t, c, in, out, 2, true)
	transformInTxn(t, c, in, out, 2, false) // aborted: nothing produced, the two come back
	transformInTxn(t, c, in, out, 2, true)
	expected := make([]string, len(sent))
	for i, s := range sent {
		expected[i] = strings.ToUpper(s)
	}
	expectEqual(t, "produced by the committed transactions", expected, sorted(texts(receive(t, results, 4, true))))
	expectQuiet(t, results)
	expectQuiet(t, in)
}
