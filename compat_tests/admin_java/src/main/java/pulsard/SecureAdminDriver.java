package pulsard;

import java.util.Set;
import java.util.TreeSet;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.impl.auth.AuthenticationToken;
import org.apache.pulsar.common.policies.data.AuthAction;

/** The official admin client over https with a token (test_authorization.py): grants and revokes
 *  namespace, topic and subscription permissions, and is refused without credentials or rights.
 *  Usage: SecureAdminDriver HTTPS_URL TRUST_CERTS SUPER_TOKEN USER_TOKEN USER_ROLE */
public final class SecureAdminDriver {
    public static void main(String[] args) throws Exception {
        String url = args[0], trust = args[1], role = args[4];
        String ns = "public/default", topic = "persistent://public/default/java-admin-guarded";
        try (PulsarAdmin admin = client(url, trust, args[2])) {
            admin.namespaces().grantPermissionOnNamespace(ns, role, Set.of(AuthAction.produce));
            System.out.println("namespace " + admin.namespaces().getPermissions(ns).get(role));
            admin.topics().grantPermission(topic, role, Set.of(AuthAction.consume));
            System.out.println("topic " + new TreeSet<>(admin.topics().getPermissions(topic).get(role)));   // enum order
            admin.namespaces().grantPermissionOnSubscription(ns, "audit", Set.of(role));
            System.out.println("subscription " + admin.namespaces().getPermissionOnSubscription(ns).get("audit"));
            refused("user", () -> client(url, trust, args[3]).tenants().getTenants());
            refused("anonymous", () -> client(url, trust, null).tenants().getTenants());
            admin.namespaces().revokePermissionsOnNamespace(ns, role);
            admin.topics().revokePermissions(topic, role);
            System.out.println("revoked " + admin.namespaces().getPermissions(ns).get(role));
        }
        System.exit(0);
    }

    static PulsarAdmin client(String url, String trust, String token) throws Exception {
        var builder = PulsarAdmin.builder().serviceHttpUrl(url).tlsTrustCertsFilePath(trust);
        if (token != null) {
            builder.authentication(AuthenticationToken.class.getName(), "token:" + token);
        }
        return builder.build();
    }

    interface Call {
        Object run() throws Exception;
    }

    static void refused(String who, Call call) {
        try {
            call.run();
            System.out.println(who + " allowed");
        } catch (PulsarAdminException e) {
            System.out.println(who + " refused " + e.getStatusCode());
        } catch (Exception e) {
            System.out.println(who + " failed " + e);
        }
    }
}
