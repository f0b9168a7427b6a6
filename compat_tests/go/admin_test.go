package compat

// The official Go admin client (github.com/apache/pulsar-client-go/pulsaradmin) driving
// pulsard's admin REST API on PULSAR_WEB_URL: tenants, namespaces and their policies, topics,
// subscriptions, schemas and termination, each answer checked exactly.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/google/uuid"
)

func adminClient(t *testing.T) pulsaradmin.Client {
	t.Helper()
	admin, err := pulsaradmin.NewClient(&pulsaradmin.Config{WebServiceURL: serviceURL(t, "PULSAR_WEB_URL")})
	noErr(t, err)
	return admin
}

// newTenant creates a tenant of its own (allowed on the standalone cluster) with namespace "ns".
func newTenant(t *testing.T, admin pulsaradmin.Client) (tenant, namespace string) {
	t.Helper()
	tenant = "go-admin-" + uuid.NewString()[:8]
	noErr(t, admin.Tenants().Create(utils.TenantData{Name: tenant, AllowedClusters: []string{"standalone"}}))
	namespace = tenant + "/ns"
	noErr(t, admin.Namespaces().CreateNamespace(namespace))
	return tenant, namespace
}

func topicOf(t *testing.T, name string) utils.TopicName {
	t.Helper()
	return *result(utils.GetTopicName(name)).must(t)
}

// expectStatus checks that err is the broker's refusal with that HTTP status code.
func expectStatus(t *testing.T, what string, status int, err error) {
	t.Helper()
	var refused rest.Error
	if !errors.As(err, &refused) || refused.Code != status {
		t.Fatalf("%s: expected HTTP %d but got %v", what, status, err)
	}
}

func TestAdminTenants(t *testing.T) {
	admin := adminClient(t)
	name := "go-tenant-" + uuid.NewString()[:8]
	tenants := admin.Tenants()
	noErr(t, tenants.Create(utils.TenantData{Name: name, AdminRoles: []string{"ops"},
		AllowedClusters: []string{"standalone"}}))
	expectStatus(t, "create twice", http.StatusConflict,
		tenants.Create(utils.TenantData{Name: name, AllowedClusters: []string{"standalone"}}))
	listed := result(tenants.List()).must(t)
	check := map[string]bool{}
	for _, each := range listed {
		check[each] = true
	}
	expectEqual(t, "listed", true, check[name] && check["public"])
	expectEqual(t, "get", utils.TenantData{AdminRoles: []string{"ops"}, AllowedClusters: []string{"standalone"}},
		result(tenants.Get(name)).must(t))
	noErr(t, tenants.Update(utils.TenantData{Name: name, AdminRoles: []string{"ops", "audit"},
		AllowedClusters: []string{"standalone"}}))
	expectEqual(t, "updated roles (a set)", []string{"audit", "ops"}, sorted(result(tenants.Get(name)).must(t).AdminRoles))
	noErr(t, tenants.Delete(name))
	_, err := tenants.Get(name)
	expectStatus(t, "get deleted", http.StatusNotFound, err)
	expectStatus(t, "delete twice", http.StatusNotFound, tenants.Delete(name))
}

func TestAdminNamespaces(t *testing.T) {
	admin := adminClient(t)
	tenant, namespace := newTenant(t, admin)
	namespaces := admin.Namespaces()
	noErr(t, namespaces.CreateNamespace(tenant+"/other"))
	expectStatus(t, "create twice", http.StatusConflict, namespaces.CreateNamespace(namespace))
	expectEqual(t, "list", []string{tenant + "/ns", tenant + "/other"},
		sorted(result(namespaces.GetNamespaces(tenant)).must(t)))

	retention := utils.RetentionPolicies{RetentionTimeInMinutes: 60, RetentionSizeInMB: 512}
	noErr(t, namespaces.SetRetention(namespace, retention))
	expectEqual(t, "retention", retention, *result(namespaces.GetRetention(namespace)).must(t))
	noErr(t, namespaces.SetNamespaceMessageTTL(namespace, 90))
	expectEqual(t, "message TTL", 90, result(namespaces.GetNamespaceMessageTTL(namespace)).must(t))

	quota := utils.NewBacklogQuota(10*1024*1024, 3600, utils.ProducerException)
	noErr(t, namespaces.SetBacklogQuota(namespace, quota, utils.DestinationStorage))
	expectEqual(t, "backlog quota", map[utils.BacklogQuotaType]utils.BacklogQuota{utils.DestinationStorage: quota},
		result(namespaces.GetBacklogQuotaMap(namespace)).must(t))
	noErr(t, namespaces.RemoveBacklogQuota(namespace))
	expectEqual(t, "backlog quota removed", 0, len(result(namespaces.GetBacklogQuotaMap(namespace)).must(t)))

	noErr(t, namespaces.SetDeduplicationStatus(namespace, true))
	policies := result(namespaces.GetPolicies(namespace)).must(t)
	expectEqual(t, "deduplication", true, policies.DeduplicationEnabled != nil && *policies.DeduplicationEnabled)
	expectEqual(t, "TTL in policies", 90, *policies.MessageTTLInSeconds)
	expectEqual(t, "retention in policies", retention, *policies.RetentionPolicies)

	ns := *result(utils.GetNamespaceName(namespace)).must(t)
	noErr(t, namespaces.GrantNamespacePermission(ns, "reader", []utils.AuthAction{"consume"}))
	noErr(t, namespaces.GrantNamespacePermission(ns, "writer", []utils.AuthAction{"produce", "consume"}))
	granted := result(namespaces.GetNamespacePermissions(ns)).must(t)
	sort.Slice(granted["writer"], func(i, j int) bool { return granted["writer"][i] < granted["writer"][j] })
	expectEqual(t, "permissions (sets of actions)",
		map[string][]utils.AuthAction{"reader": {"consume"}, "writer": {"consume", "produce"}}, granted)
	noErr(t, namespaces.RevokeNamespacePermission(ns, "writer"))
	expectEqual(t, "permissions after revoke", map[string][]utils.AuthAction{"reader": {"consume"}},
		result(namespaces.GetNamespacePermissions(ns)).must(t))

	noErr(t, namespaces.DeleteNamespace(tenant+"/other"))
	expectEqual(t, "list after delete", []string{namespace}, result(namespaces.GetNamespaces(tenant)).must(t))
	_, err := namespaces.GetPolicies(tenant + "/other")
	expectStatus(t, "deleted namespace", http.StatusNotFound, err)
}

func TestAdminTopics(t *testing.T) {
	admin, c := adminClient(t), client(t)
	_, namespace := newTenant(t, admin)
	topics := admin.Topics()
	plain := topicOf(t, "persistent://"+namespace+"/plain")
	parts := topicOf(t, "persistent://"+namespace+"/parts")
	noErr(t, topics.Create(plain, 0))
	expectStatus(t, "create twice", http.StatusConflict, topics.Create(plain, 0))
	noErr(t, topics.Create(parts, 2))
	expectEqual(t, "partitions", 2, result(topics.GetMetadata(parts)).must(t).Partitions)
	noErr(t, topics.Update(parts, 3))
	expectEqual(t, "partitions after update", 3, result(topics.GetMetadata(parts)).must(t).Partitions)

	ns := *result(utils.GetNamespaceName(namespace)).must(t)
	partitioned, nonPartitioned, err := topics.List(ns)
	noErr(t, err)
	expectEqual(t, "partitioned topics", []string{parts.String()}, partitioned)
	want := []string{plain.String()}
	for i := 0; i < 3; i++ {
		want = append(want, fmt.Sprintf("%s-partition-%d", parts.String(), i))
	}
	expectEqual(t, "non-partitioned topics", sorted(want), sorted(nonPartitioned))

	p := producer(t, c, pulsar.ProducerOptions{Topic: plain.String(), DisableBatching: true})
	var ids []pulsar.MessageID
	for _, s := range payloads(3, "adm") {
		ids = append(ids, result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)})).must(t))
	}
	stats := result(topics.GetStats(plain)).must(t)
	expectEqual(t, "msgInCounter", int64(3), stats.MsgCounterIn)
	expectEqual(t, "publishers", 1, len(stats.Publishers))
	internal := result(topics.GetInternalStats(plain)).must(t)
	expectEqual(t, "entries", int64(3), internal.NumberOfEntries)
	last := ids[2]
	expectEqual(t, "last confirmed entry", fmt.Sprintf("%d:%d", last.LedgerID(), last.EntryID()),
		internal.LastConfirmedEntry)
	lastID := result(topics.GetLastMessageID(plain)).must(t)
	// (BatchIndex is `json:"-"` in the Go admin client: never decoded, always 0)
	expectEqual(t, "last message id", utils.MessageID{LedgerID: last.LedgerID(), EntryID: last.EntryID(),
		PartitionIndex: -1}, lastID)

	p.Close() // else it reconnects after the forced delete and creates the topic again, as with Pulsar
	noErr(t, topics.Delete(plain, true, true))
	noErr(t, topics.Delete(parts, true, false))
	partitioned, nonPartitioned, err = topics.List(ns)
	noErr(t, err)
	expectEqual(t, "nothing left", 0, len(partitioned)+len(nonPartitioned))
	_, err = topics.GetStats(plain)
	expectStatus(t, "stats of a deleted topic", http.StatusNotFound, err)
}

func TestAdminSubscriptions(t *testing.T) {
	admin, c := adminClient(t), client(t)
	_, namespace := newTenant(t, admin)
	topic := topicOf(t, "persistent://"+namespace+"/subs")
	subs := admin.Subscriptions()
	noErr(t, subs.Create(topic, "audit", utils.Earliest))
	noErr(t, subs.Create(topic, "late", utils.Latest))
	expectStatus(t, "create twice", http.StatusConflict, subs.Create(topic, "audit", utils.Earliest))
	expectEqual(t, "list", []string{"audit", "late"}, sorted(result(subs.List(topic)).must(t)))

	sent := payloads(6, "sub")
	ids := sendAll(t, c, topic.String(), sent)
	backlog := func(sub string) int64 {
		return result(admin.Topics().GetStats(topic)).must(t).Subscriptions[sub].MsgBacklog
	}
	expectEqual(t, "backlogs", []int64{6, 6}, []int64{backlog("audit"), backlog("late")})

	peeked := result(subs.PeekMessages(topic, "audit", 2)).must(t)
	expectEqual(t, "peeked", []string{sent[0], sent[1]}, []string{string(peeked[0].Payload), string(peeked[1].Payload)})
	expectEqual(t, "peeked id", ids[1].EntryID(), peeked[1].MessageID.EntryID)

	noErr(t, subs.SkipMessages(topic, "audit", 2))
	expectEqual(t, "backlog after skip", int64(4), backlog("audit"))
	peeked = result(subs.PeekMessages(topic, "audit", 1)).must(t)
	expectEqual(t, "first after skip", sent[2], string(peeked[0].Payload))

	byID := result(subs.GetMessageByID(topic, ids[4].LedgerID(), ids[4].EntryID())).must(t)
	expectEqual(t, "message by id", sent[4], string(byID.Payload))
	_, err := subs.GetMessageByID(topic, ids[4].LedgerID(), 99)
	expectStatus(t, "message by an unknown id", http.StatusNotFound, err)

	noErr(t, subs.ExpireMessages(topic, "late", 3600))
	expectEqual(t, "nothing is an hour old", int64(6), backlog("late"))
	noErr(t, subs.ExpireAllMessages(topic, 0))
	expectEqual(t, "expired everything", []int64{0, 0}, []int64{backlog("audit"), backlog("late")})
	noErr(t, subs.ResetCursorToTimestamp(topic, "late", 0))
	expectEqual(t, "reset to the beginning of time", int64(6), backlog("late"))

	noErr(t, subs.ClearBacklog(topic, "audit"))
	expectEqual(t, "backlog after clear", int64(0), backlog("audit"))
	reset := utils.MessageID{LedgerID: ids[3].LedgerID(), EntryID: ids[3].EntryID(), PartitionIndex: -1}
	noErr(t, subs.ResetCursorToMessageID(topic, "audit", reset))
	expectEqual(t, "backlog after reset", int64(3), backlog("audit"))

	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic.String(), SubscriptionName: "audit"})
	expectEqual(t, "delivered after reset", sent[3:], texts(receive(t, cons, 3, true)))
	expectStatus(t, "delete with a consumer", http.StatusPreconditionFailed, subs.Delete(topic, "audit"))
	cons.Close() // a consumer disconnected by a forced delete re-subscribes, as with Pulsar
	noErr(t, subs.ForceDelete(topic, "audit"))
	noErr(t, subs.Delete(topic, "late"))
	expectEqual(t, "none left", 0, len(result(subs.List(topic)).must(t)))
	expectStatus(t, "delete unknown", http.StatusNotFound, subs.Delete(topic, "late"))
}

func TestAdminPartitionedStats(t *testing.T) {
	admin, c := adminClient(t), client(t)
	_, namespace := newTenant(t, admin)
	topic := topicOf(t, "persistent://"+namespace+"/pstats")
	noErr(t, admin.Topics().Create(topic, 2))
	noErr(t, admin.Subscriptions().Create(topic, "s", utils.Earliest))
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic.String(), DisableBatching: true})
	for _, s := range payloads(4, "ps") {
		result(p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(s)})).must(t)
	}
	stats := result(admin.Topics().GetPartitionedStats(topic, true)).must(t)
	expectEqual(t, "partitions", 2, stats.Metadata.Partitions)
	expectEqual(t, "backlog of s", int64(4), stats.Subscriptions["s"].MsgBacklog)
	expectEqual(t, "per partition", 2, len(stats.Partitions))
	var perPartition int64
	for _, each := range stats.Partitions {
		perPartition += each.MsgCounterIn
	}
	expectEqual(t, "sum of the partitions", int64(4), perPartition)
	ends := result(admin.Topics().GetLastMessageID(topicOf(t, topic.String()+"-partition-0"))).must(t)
	expectEqual(t, "partition index of a partition's last message id", 0, ends.PartitionIndex)
}

func TestAdminSchemas(t *testing.T) {
	admin := adminClient(t)
	_, namespace := newTenant(t, admin)
	topic := "persistent://" + namespace + "/users"
	schemas := admin.Schemas()
	v0 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	noErr(t, schemas.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v0,
		Properties: map[string]string{"owner": "ops"}}))
	info := result(schemas.GetSchemaInfoWithVersion(topic)).must(t)
	expectEqual(t, "version", int64(0), info.Version)
	expectEqual(t, "type", "AVRO", info.SchemaInfo.Type)
	expectEqual(t, "definition", v0, string(info.SchemaInfo.Schema))
	expectEqual(t, "properties", map[string]string{"owner": "ops"}, info.SchemaInfo.Properties)
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},` +
		`{"name":"age","type":["null","int"],"default":null}]}`
	noErr(t, schemas.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v1}))
	expectEqual(t, "latest version", int64(1), result(schemas.GetSchemaInfoWithVersion(topic)).must(t).Version)
	expectEqual(t, "version 0", v0, string(result(schemas.GetSchemaInfoByVersion(topic, 0)).must(t).Schema))
	all := result(schemas.GetAllSchemas(topic)).must(t)
	versions := []int64{}
	for _, each := range all {
		versions = append(versions, each.Version)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	expectEqual(t, "all versions", []int64{0, 1}, versions)
	noErr(t, schemas.DeleteSchema(topic))
	_, err := schemas.GetSchemaInfo(topic)
	expectStatus(t, "latest after delete", http.StatusNotFound, err)
	_, err = schemas.GetSchemaInfoByVersion(topic, 1)
	expectStatus(t, "versions before a delete are gone", http.StatusNotFound, err)
	// the delete was version 2 (a tombstone); the next schema is version 3
	noErr(t, schemas.CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v0}))
	expectEqual(t, "after a delete", int64(3), result(schemas.GetSchemaInfoWithVersion(topic)).must(t).Version)
	expectEqual(t, "versions since the delete", 1, len(result(schemas.GetAllSchemas(topic)).must(t)))
	noErr(t, schemas.ForceDeleteSchema(topic))
	_, err = schemas.GetSchemaInfoByVersion(topic, 0)
	expectStatus(t, "every version after a forced delete", http.StatusNotFound, err)
}

func TestAdminTerminate(t *testing.T) {
	admin, c := adminClient(t), client(t)
	_, namespace := newTenant(t, admin)
	topic := topicOf(t, "persistent://"+namespace+"/ending")
	noErr(t, admin.Subscriptions().Create(topic, "s", utils.Earliest))
	ids := sendAll(t, c, topic.String(), payloads(3, "end"))
	last := ids[2]
	want := utils.MessageID{LedgerID: last.LedgerID(), EntryID: last.EntryID(), PartitionIndex: -1}
	expectEqual(t, "terminated at", want, result(admin.Topics().Terminate(topic)).must(t))
	expectEqual(t, "terminated again", want, result(admin.Topics().Terminate(topic)).must(t))
	_, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic.String()})
	if !errors.Is(err, pulsar.ErrTopicTerminated) && (err == nil || !strings.Contains(err.Error(), "TopicTerminated")) {
		t.Fatalf("a producer on a terminated topic: expected TopicTerminated but got %v", err)
	}
	cons := consumer(t, c, pulsar.ConsumerOptions{Topic: topic.String(), SubscriptionName: "s"})
	expectEqual(t, "delivered up to the end", payloads(3, "end"), texts(receive(t, cons, 3, true)))
	expectQuiet(t, cons)

	parts := topicOf(t, "persistent://"+namespace+"/ending-parts")
	noErr(t, admin.Topics().Create(parts, 2))
	_, err = admin.Topics().Terminate(parts)
	expectStatus(t, "terminate a partitioned topic", http.StatusMethodNotAllowed, err)
	_, err = admin.Topics().Terminate(topicOf(t, "persistent://"+namespace+"/never"))
	expectStatus(t, "terminate an unknown topic", http.StatusNotFound, err)
}

func TestAdminClustersBrokersAndNamespaceLimits(t *testing.T) {
	admin := adminClient(t)
	expectEqual(t, "clusters", []string{"standalone"}, result(admin.Clusters().List()).must(t))
	cluster := result(admin.Clusters().Get("standalone")).must(t)
	expectEqual(t, "cluster service URL set", true, cluster.ServiceURL != "" && cluster.BrokerServiceURL != "")
	noErr(t, admin.Brokers().HealthCheck())
	expectEqual(t, "active brokers", 1, len(result(admin.Brokers().GetActiveBrokers("standalone")).must(t)))

	_, namespace := newTenant(t, admin)
	ns := *result(utils.GetNamespaceName(namespace)).must(t)
	namespaces := admin.Namespaces()
	noErr(t, namespaces.SetSchemaCompatibilityStrategy(ns, utils.SchemaCompatibilityStrategyBackward))
	expectEqual(t, "schema compatibility strategy", utils.SchemaCompatibilityStrategyBackward,
		result(namespaces.GetSchemaCompatibilityStrategy(ns)).must(t))
	noErr(t, namespaces.SetMaxProducersPerTopic(ns, 3))
	expectEqual(t, "max producers per topic", 3, result(namespaces.GetMaxProducersPerTopic(ns)).must(t))
	noErr(t, namespaces.SetMaxConsumersPerTopic(ns, 4))
	expectEqual(t, "max consumers per topic", 4, result(namespaces.GetMaxConsumersPerTopic(ns)).must(t))
}

func TestAdminUnloadAndCompaction(t *testing.T) {
	admin, c := adminClient(t), client(t)
	_, namespace := newTenant(t, admin)
	topic := topicOf(t, "persistent://"+namespace+"/compacted")
	p := producer(t, c, pulsar.ProducerOptions{Topic: topic.String(), DisableBatching: true})
	for i, key := range []string{"a", "b", "a"} {
		msg := &pulsar.ProducerMessage{Key: key, Payload: []byte(fmt.Sprintf("%s-%d", key, i))}
		result(p.Send(context.Background(), msg)).must(t)
	}
	noErr(t, admin.Topics().Unload(topic))
	// the producer reconnects after the unload and publishes again
	result(p.Send(context.Background(), &pulsar.ProducerMessage{Key: "b", Payload: []byte("b-3")})).must(t)
	expectEqual(t, "status before any compaction", utils.NOTRUN,
		result(admin.Topics().CompactStatus(topic)).must(t).Status)
	noErr(t, admin.Topics().Compact(topic))
	deadline := time.Now().Add(receiveTimeout)
	for result(admin.Topics().CompactStatus(topic)).must(t).Status != utils.SUCCESS {
		if time.Now().After(deadline) {
			t.Fatalf("compaction did not succeed within %v", receiveTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	reader := result(c.CreateReader(pulsar.ReaderOptions{Topic: topic.String(),
		StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})).must(t)
	defer reader.Close()
	var got []string
	for len(got) < 2 {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		msg, err := reader.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("compacted read after %v: %v", got, err)
		}
		got = append(got, string(msg.Payload()))
	}
	expectEqual(t, "compacted view: the latest per key", []string{"a-2", "b-3"}, got)
}
