package compat

// The transaction coordinator as the Go client's EnableTransaction meets it. With
// PULSAR_TXN_SERVICE_URL (test_transactions_coordinator.py: a broker with
// transactionCoordinatorEnabled=true) transactions begin, commit and abort; without it
// (test_go_client.py's default broker) a transactional client is refused at once.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

func transactionalClient(url string) (pulsar.Client, error) {
	logger := logrus.StandardLogger()
	logger.SetLevel(logrus.WarnLevel)
	return pulsar.NewClient(pulsar.ClientOptions{URL: url, EnableTransaction: true,
		OperationTimeout: 10 * time.Second, Logger: log.NewLoggerWithLogrus(logger)})
}

func TestTxnCoordinator(t *testing.T) {
	url := os.Getenv("PULSAR_TXN_SERVICE_URL")
	if url == "" {
		c, err := transactionalClient(serviceURL(t, "PULSAR_SERVICE_URL"))
		if err == nil {
			defer c.Close()
			_, err = c.NewTransaction(time.Minute)
		}
		if err == nil {
			t.Fatalf("a broker without transactionCoordinatorEnabled began a transaction")
		}
		return
	}
	c, err := transactionalClient(url)
	noErr(t, err)
	t.Cleanup(c.Close)
	ctx := context.Background()
	p := producer(t, c, pulsar.ProducerOptions{Topic: topicName("txn"), SendTimeout: -1, DisableBatching: true})
	seen := map[pulsar.TxnID]bool{}
	for i, commit := range []bool{true, false, true} {
		txn := result(c.NewTransaction(time.Minute)).must(t)
		seen[txn.GetTxnID()] = true
		result(p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte{byte(i)}, Transaction: txn})).must(t)
		if commit {
			noErr(t, txn.Commit(ctx))
			expectEqual(t, "state after commit", pulsar.TxnCommitted, txn.GetState())
		} else {
			noErr(t, txn.Abort(ctx))
			expectEqual(t, "state after abort", pulsar.TxnAborted, txn.GetState())
		}
	}
	expectEqual(t, "distinct transaction ids", 3, len(seen))
}
