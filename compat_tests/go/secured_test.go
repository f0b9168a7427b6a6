package compat

// TestSecured* scenarios need a broker with TLS and authentication on: compat_tests/
// test_authentication.py runs them with PULSAR_SECURED_SERVICE_URL (pulsar+ssl://), the CA file,
// a token, a basic user and a client certificate in the environment; test_go_client.py skips them.

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/sirupsen/logrus"
)

func securedClient(t *testing.T, authentication pulsar.Authentication) (pulsar.Client, error) {
	logger := logrus.StandardLogger()
	logger.SetLevel(logrus.ErrorLevel)
	return pulsar.NewClient(pulsar.ClientOptions{
		URL:                   serviceURL(t, "PULSAR_SECURED_SERVICE_URL"),
		TLSTrustCertsFilePath: os.Getenv("PULSAR_CA_FILE"),
		Authentication:        authentication,
		OperationTimeout:      5 * time.Second,
		Logger:                log.NewLoggerWithLogrus(logger),
	})
}

// TestSecuredClientsOverTLS: a token, basic credentials and a client certificate each produce
// and consume over pulsar+ssl://; a wrong token and wrong basic credentials are refused.
func TestSecuredClientsOverTLS(t *testing.T) {
	accepted := map[string]pulsar.Authentication{
		"token": pulsar.NewAuthenticationToken(os.Getenv("PULSAR_TOKEN")),
		"basic": mustAuth(t)(pulsar.NewAuthenticationBasic(os.Getenv("PULSAR_BASIC_USER"), os.Getenv("PULSAR_BASIC_PASSWORD"))),
		"tls":   pulsar.NewAuthenticationTLS(os.Getenv("PULSAR_CLIENT_CERT"), os.Getenv("PULSAR_CLIENT_KEY")),
	}
	for kind, authentication := range accepted {
		client, err := securedClient(t, authentication)
		if err != nil {
			t.Fatalf("%s: client: %v", kind, err)
		}
		topic := topicName("secured-" + kind)
		consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatalf("%s: subscribe: %v", kind, err)
		}
		producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("%s: producer: %v", kind, err)
		}
		if _, err := producer.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(kind)}); err != nil {
			t.Fatalf("%s: send: %v", kind, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		message, err := consumer.Receive(ctx)
		cancel()
		if err != nil || string(message.Payload()) != kind {
			t.Fatalf("%s: receive: %v", kind, err)
		}
		client.Close()
	}
	refused := map[string]pulsar.Authentication{
		"wrong token": pulsar.NewAuthenticationToken("not-a-token"),
		"wrong basic": mustAuth(t)(pulsar.NewAuthenticationBasic(os.Getenv("PULSAR_BASIC_USER"), "wrong")),
	}
	for kind, authentication := range refused {
		client, err := securedClient(t, authentication)
		if err != nil {
			continue // refused already
		}
		if _, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topicName("refused")}); err == nil {
			t.Fatalf("%s: a producer was created", kind)
		}
		client.Close()
	}
}

func mustAuth(t *testing.T) func(pulsar.Authentication, error) pulsar.Authentication {
	return func(authentication pulsar.Authentication, err error) pulsar.Authentication {
		if err != nil {
			t.Fatalf("authentication: %v", err)
		}
		return authentication
	}
}
