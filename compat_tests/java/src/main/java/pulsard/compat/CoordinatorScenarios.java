package pulsard.compat;

import static pulsard.compat.Ctx.bytes;
import static pulsard.compat.Ctx.check;
import static pulsard.compat.Ctx.expectEqual;
import static pulsard.compat.Ctx.text;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.apache.pulsar.client.api.transaction.TxnID;

/**
 * The transaction coordinator as the Java client's enableTransaction(true) meets it: the first
 * URL is a broker with transactionCoordinatorEnabled=true, the second one without. What the
 * transaction buffer and pending acks do with the messages is their rooms' scenarios; here the
 * coordinator's requests (new, add partition, add subscription, end) must succeed.
 */
public final class CoordinatorScenarios {
    private CoordinatorScenarios() {}

    static PulsarClient transactional(String url) throws PulsarClientException {
        return Ctx.builder(url).enableTransaction(true).operationTimeout(10, TimeUnit.SECONDS).build();
    }

    static Transaction begin(PulsarClient client) throws Exception {
        return client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get(10, TimeUnit.SECONDS);
    }

    @CoordinatorScenario
    public static void coordinatorCommitsAndAbortsEmptyTransactions(Ctx ctx) throws Exception {
        try (PulsarClient client = transactional(ctx.serviceUrl)) {
            Transaction committed = begin(client);
            committed.commit().get(10, TimeUnit.SECONDS);
            expectEqual("state after commit", Transaction.State.COMMITTED, committed.getState());
            Transaction aborted = begin(client);
            aborted.abort().get(10, TimeUnit.SECONDS);
            expectEqual("state after abort", Transaction.State.ABORTED, aborted.getState());
            check(!committed.getTxnID().equals(aborted.getTxnID()), "two transactions got one id");
        }
    }

    @CoordinatorScenario
    public static void coordinatorCommitsProducedPartitions(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-coordinator");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("sub")
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<byte[]> producer = client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS).create()) {
            Transaction produce = begin(client);
            producer.newMessage(produce).value(bytes("in-txn")).send();
            produce.commit().get(10, TimeUnit.SECONDS);
            Message<byte[]> message = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            check(message != null, "the committed message did not arrive");
            expectEqual("payload", "in-txn", text(message));
        }
    }

    @CoordinatorScenario
    public static void coordinatorAbortsAfterProducing(Ctx ctx) throws Exception {
        String topic = Ctx.topic("txn-coordinator-abort");
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Producer<byte[]> producer = client.newProducer().topic(topic).sendTimeout(0, TimeUnit.SECONDS).create()) {
            Transaction txn = begin(client);
            producer.newMessage(txn).value(bytes("aborted")).send();
            txn.abort().get(10, TimeUnit.SECONDS);
            expectEqual("state after abort", Transaction.State.ABORTED, txn.getState());
        }
    }

    @CoordinatorScenario
    public static void coordinatorServesConcurrentTransactions(Ctx ctx) throws Exception {
        try (PulsarClient client = transactional(ctx.serviceUrl)) {
            List<CompletableFuture<Transaction>> begun = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                begun.add(client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build());
            }
            Set<TxnID> ids = new HashSet<>();
            List<CompletableFuture<Void>> ended = new ArrayList<>();
            for (int i = 0; i < begun.size(); i++) {
                Transaction txn = begun.get(i).get(10, TimeUnit.SECONDS);
                ids.add(txn.getTxnID());
                ended.add(i % 2 == 0 ? txn.commit() : txn.abort());
            }
            CompletableFuture.allOf(ended.toArray(new CompletableFuture[0])).get(20, TimeUnit.SECONDS);
            expectEqual("distinct transaction ids", 20, ids.size());
        }
    }

    /**
     * Transactions producing to two topics each (TXN_TOPICS, comma-separated, else two new
     * ones): in a cluster, topics served by two brokers, and coordinators on both.
     */
    @CoordinatorScenario
    public static void coordinatorCommitsAcrossTopics(Ctx ctx) throws Exception {
        String named = System.getenv("TXN_TOPICS");
        String[] topics = named != null ? named.split(",")
                : new String[] {Ctx.topic("txn-across-a"), Ctx.topic("txn-across-b")};
        try (PulsarClient client = transactional(ctx.serviceUrl);
             Producer<byte[]> first = client.newProducer().topic(topics[0]).sendTimeout(0, TimeUnit.SECONDS).create();
             Producer<byte[]> second = client.newProducer().topic(topics[1]).sendTimeout(0, TimeUnit.SECONDS).create();
             Consumer<byte[]> consumer = client.newConsumer().topic(topics[1]).subscriptionName("across")
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            Set<TxnID> ids = new HashSet<>();
            for (int i = 0; i < 20; i++) {
                Transaction txn = begin(client);
                ids.add(txn.getTxnID());
                first.newMessage(txn).value(bytes("first-" + i)).send();
                second.newMessage(txn).value(bytes("second-" + i)).send();
                txn.commit().get(20, TimeUnit.SECONDS);
                expectEqual("state of transaction " + i, Transaction.State.COMMITTED, txn.getState());
            }
            Set<Long> coordinators = new HashSet<>();
            ids.forEach(id -> coordinators.add(id.getMostSigBits()));
            System.out.println("DETAIL coordinatorCommitsAcrossTopics coordinators used: " + coordinators);
            for (int i = 0; i < 20; i++) {
                Message<byte[]> message = consumer.receive(Ctx.RECEIVE_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                check(message != null, "committed message " + i + " did not arrive");
                expectEqual("message " + i, "second-" + i, text(message));
                consumer.acknowledge(message);
            }
        }
    }

    @CoordinatorScenario
    public static void coordinatorDisabledRefusesTransactions(Ctx ctx) throws Exception {
        try (PulsarClient client = transactional(ctx.partitionedServiceUrl)) {
            client.newTransaction().build().get(10, TimeUnit.SECONDS);
            throw new AssertionError("a broker without transactionCoordinatorEnabled began a transaction");
        } catch (ExecutionException | PulsarClientException expected) {
            System.out.println("DETAIL coordinatorDisabledRefusesTransactions refused with " + expected);
        }
    }
}
