// Command crossclient is the Go side of compat_tests/test_cross_client.py. Usage:
//
//	crossclient SERVICE_URL (produce TOPIC ORIGIN CODEC | consume TOPIC COUNT)...
//
// produce sends the shared message set (see cross_messages in the test) in batches with CODEC;
// consume prints each received message as one tab-separated MSG line.
package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

const (
	messages       = 10
	eventTimeBase  = int64(1_700_000_000_000)
	receiveTimeout = 5 * time.Second
)

var codecs = map[string]pulsar.CompressionType{
	"NONE": pulsar.NoCompression, "LZ4": pulsar.LZ4, "ZLIB": pulsar.ZLib, "ZSTD": pulsar.ZSTD, "SNAPPY": pulsar.SNAPPY,
}

func main() {
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: os.Args[1], OperationTimeout: 10 * time.Second})
	if err != nil {
		log.Fatalf("client: %v", err)
	}
	defer client.Close()
	args := os.Args[2:]
	for len(args) > 0 {
		if args[0] == "produce" {
			produce(client, args[1], args[2], codecs[args[3]])
			args = args[4:]
		} else {
			count, _ := strconv.Atoi(args[2])
			consume(client, args[1], count)
			args = args[3:]
		}
	}
}

// produce: message i has payload "ORIGIN-i:" + bytes {i, 0, 255, 128}, key "key-(i%3)", two properties.
func produce(client pulsar.Client, topic, origin string, codec pulsar.CompressionType) {
	producer, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, CompressionType: codec,
		BatchingMaxMessages: 4, BatchingMaxPublishDelay: time.Second})
	if err != nil {
		log.Fatalf("producer: %v", err)
	}
	defer producer.Close()
	var wg sync.WaitGroup
	wg.Add(messages)
	for i := 0; i < messages; i++ {
		payload := append([]byte(fmt.Sprintf("%s-%d:", origin, i)), byte(i), 0, 255, 128)
		producer.SendAsync(context.Background(), &pulsar.ProducerMessage{
			Payload: payload, Key: fmt.Sprintf("key-%d", i%3),
			Properties: map[string]string{"i": strconv.Itoa(i), "origin": origin},
			EventTime:  time.UnixMilli(eventTimeBase + int64(i)),
		}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				log.Fatalf("send: %v", err)
			}
			wg.Done()
		})
	}
	if err := producer.Flush(); err != nil {
		log.Fatalf("flush: %v", err)
	}
	wg.Wait()
}

func consume(client pulsar.Client, topic string, count int) {
	consumer, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "cross-go",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		log.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	for i := 0; i < count; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		m, err := consumer.Receive(ctx)
		cancel()
		if err != nil {
			fmt.Printf("MISSING\t%s\t%d\n", topic, i)
			return
		}
		fmt.Println(line(topic, m))
		_ = consumer.Ack(m)
	}
}

func line(topic string, m pulsar.Message) string {
	var props []string
	for k, v := range m.Properties() {
		props = append(props, k+"="+v)
	}
	sort.Strings(props)
	return strings.Join([]string{"MSG", topic, base64.StdEncoding.EncodeToString(m.Payload()), m.Key(),
		strconv.FormatInt(m.EventTime().UnixMilli(), 10), strconv.Itoa(int(m.ID().BatchIdx())),
		strings.Join(props, ",")}, "\t")
}
