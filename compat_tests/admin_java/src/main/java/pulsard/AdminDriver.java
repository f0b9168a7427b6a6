package pulsard;

import java.util.List;
import java.util.Set;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.RetentionPolicies;
import org.apache.pulsar.common.policies.data.TenantInfo;
import org.apache.pulsar.common.policies.data.TopicStats;

/** Drives tenants, namespaces, topics and subscriptions through the official admin client;
 *  prints one line per step for the Python test to compare, exits non-zero on any failure. */
public final class AdminDriver {
    public static void main(String[] args) throws Exception {
        String tenant = args[1];
        String ns = tenant + "/ns";
        String topic = "persistent://" + ns + "/orders";
        String partitioned = "persistent://" + ns + "/events";
        try (PulsarAdmin admin = PulsarAdmin.builder().serviceHttpUrl(args[0]).build()) {
            admin.tenants().createTenant(tenant, TenantInfo.builder()
                    .adminRoles(Set.of("ops")).allowedClusters(Set.of("standalone")).build());
            TenantInfo info = admin.tenants().getTenantInfo(tenant);
            System.out.println("tenant " + info.getAdminRoles() + " " + info.getAllowedClusters());
            System.out.println("clusters " + admin.clusters().getClusters());
            admin.namespaces().createNamespace(ns);
            System.out.println("namespaces " + admin.namespaces().getNamespaces(tenant));
            admin.namespaces().setRetention(ns, new RetentionPolicies(60, 100));
            RetentionPolicies retention = admin.namespaces().getRetention(ns);
            System.out.println("retention " + retention.getRetentionTimeInMinutes() + " " + retention.getRetentionSizeInMB());
            admin.namespaces().setNamespaceMessageTTL(ns, 300);
            System.out.println("ttl " + admin.namespaces().getNamespaceMessageTTL(ns));
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().createPartitionedTopic(partitioned, 2);
            System.out.println("partitions " + admin.topics().getPartitionedTopicMetadata(partitioned).partitions);
            System.out.println("partitioned " + admin.topics().getPartitionedTopicList(ns));
            List<String> topics = admin.topics().getList(ns);
            System.out.println("topics " + topics);
            admin.topics().createSubscription(topic, "audit", MessageId.earliest);
            System.out.println("subscriptions " + admin.topics().getSubscriptions(topic));
            try {
                admin.topics().createSubscription(topic, "audit", MessageId.earliest);
                System.out.println("duplicate subscription accepted");
            } catch (PulsarAdminException.ConflictException e) {
                System.out.println("duplicate subscription conflict");
            }
            TopicStats stats = admin.topics().getStats(topic);
            System.out.println("stats backlog " + stats.getSubscriptions().get("audit").getMsgBacklog());
            PersistentTopicInternalStats internal = admin.topics().getInternalStats(topic);
            System.out.println("internal entries " + internal.numberOfEntries + " cursors " + internal.cursors.keySet());
            admin.topics().skipAllMessages(topic, "audit");
            admin.topics().deleteSubscription(topic, "audit");
            System.out.println("subscriptions " + admin.topics().getSubscriptions(topic));
            try {
                admin.topics().getStats("persistent://" + ns + "/missing");
            } catch (PulsarAdminException.NotFoundException e) {
                System.out.println("missing topic not found");
            }
            admin.topics().delete(topic);
            admin.topics().deletePartitionedTopic(partitioned);
            System.out.println("topics " + admin.topics().getList(ns));
            admin.namespaces().deleteNamespace(ns);
            admin.tenants().deleteTenant(tenant);
            System.out.println("tenant deleted " + !admin.tenants().getTenants().contains(tenant));
        }
    }
}
