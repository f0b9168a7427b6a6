package pulsard.compat;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;

/**
 * The Java side of the security tests (test_authentication.py). Usage:
 *   SecurityClient SERVICE_URL TRUST_CERTS (NAME AUTH_PLUGIN AUTH_PARAMS TOPIC)...
 * Each case makes its own client (AUTH_PLUGIN "-" for none), sends one message to TOPIC and
 * reads it back; it prints OUTCOME NAME ok, or OUTCOME NAME followed by the exception's class.
 */
public final class SecurityClient {
    private SecurityClient() {}

    public static void main(String[] args) throws Exception {
        for (int i = 2; i + 3 < args.length; i += 4) {
            System.out.println("OUTCOME " + args[i] + " " + attempt(args[0], args[1], args[i + 1], args[i + 2], args[i + 3]));
        }
        System.exit(0);
    }

    static String attempt(String url, String trust, String plugin, String params, String topic) {
        try {
            var builder = Ctx.builder(url).operationTimeout(5, TimeUnit.SECONDS);
            if (!trust.equals("-")) {
                builder.tlsTrustCertsFilePath(trust);
            }
            if (!plugin.equals("-")) {
                builder.authentication(plugin, params);
            }
            try (PulsarClient client = builder.build();
                 Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("java")
                         .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
                 Producer<byte[]> producer = client.newProducer().topic(topic).create()) {
                producer.send("from java".getBytes(StandardCharsets.UTF_8));
                Message<byte[]> message = consumer.receive(10, TimeUnit.SECONDS);
                return message != null && new String(message.getValue(), StandardCharsets.UTF_8).equals("from java")
                        ? "ok" : "no-message";
            }
        } catch (Exception e) {
            return e.getClass().getSimpleName() + " " + String.valueOf(e.getMessage()).replace('\n', ' ');
        }
    }
}
