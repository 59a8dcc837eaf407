// franz-go-producer-perf: a producer latency run with franz-go, the Go
// client, shaped like Kafka's kafka-producer-perf-test so that
// scripts/bench-compare can put both clients' rows side by side: N records
// of S bytes to one topic, as fast as the client goes or at a fixed rate,
// each record's latency from its Produce call to its acknowledgement.
//
//	franz-go-producer-perf -b 127.0.0.1:9092 -topic t -records 1000000 \
//	    -warmup 200000 -size 1024 -rate 0 -acks 1 -linger 5ms -batch 65536
//
// Prints one JSON object: mb_per_s, p50_ms, p99_ms, p99.9_ms, max_ms over
// every record, and the same keys prefixed steady_ over the records after
// the first -warmup ones (the client's start-up left out). MB is 2^20 bytes,
// as Kafka's tool counts it. The topic is created by the broker on first
// use (auto.create.topics.enable, true on both brokers by default).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	boot := flag.String("b", "127.0.0.1:9092", "bootstrap address")
	topic := flag.String("topic", "", "topic (created on first use)")
	records := flag.Int("records", 1000000, "records to send")
	warmup := flag.Int("warmup", 0, "first records left out of the steady_ figures")
	size := flag.Int("size", 1024, "record value size in bytes")
	rate := flag.Float64("rate", 0, "records per second; 0 sends as fast as the client goes")
	acks := flag.String("acks", "1", "0, 1 or all")
	linger := flag.Duration("linger", 5*time.Millisecond, "linger before a batch is sent")
	batch := flag.Int("batch", 65536, "largest batch in bytes")
	flag.Parse()
	if *topic == "" || *records <= 0 || *warmup < 0 || *warmup >= *records || *size <= 0 {
		fmt.Fprintln(os.Stderr, "usage: franz-go-producer-perf -topic T [-records N] [-warmup W < N] [-size S] [-rate R] [-acks 0|1|all]")
		os.Exit(64)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(*boot),
		kgo.DefaultProduceTopic(*topic),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(*linger),
		kgo.ProducerBatchMaxBytes(int32(*batch)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// The Java producer's buffer.memory default (32 MiB): as fast as the
		// client goes, a record then waits behind at most as many bytes.
		kgo.MaxBufferedBytes(32 << 20),
	}
	switch *acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	default:
		fmt.Fprintln(os.Stderr, "-acks takes 0, 1 or all")
		os.Exit(64)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
	defer cl.Close()

	payload := make([]byte, *size)
	rnd := rand.New(rand.NewSource(0))
	for i := range payload {
		payload[i] = byte('A' + rnd.Intn(26))
	}
	lat := make([]int64, *records) // µs from the Produce call to the acknowledgement
	var failed error
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(*records)
	ctx := context.Background()
	start := time.Now()
	var steadyStart time.Time
	for i := 0; i < *records; i++ {
		if *rate > 0 {
			due := start.Add(time.Duration(float64(i) / *rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		if i == *warmup {
			steadyStart = time.Now()
		}
		i := i
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: payload}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(sent).Microseconds()
			if err != nil {
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	end := time.Now()
	if failed != nil {
		fmt.Fprintln(os.Stderr, "produce failed:", failed)
		os.Exit(1)
	}
	out := map[string]float64{"records": float64(*records), "warmup_records": float64(*warmup)}
	summarize(out, "", lat, *size, end.Sub(start))
	if *warmup > 0 {
		summarize(out, "steady_", lat[*warmup:], *size, end.Sub(steadyStart))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}

// summarize adds the rate (MB = 2^20 bytes per second) and the latency
// percentiles in milliseconds of lat (µs) to out, each key prefixed.
func summarize(out map[string]float64, prefix string, lat []int64, size int, took time.Duration) {
	s := append([]int64(nil), lat...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	q := func(p float64) float64 {
		k := int(math.Ceil(p*float64(len(s)))) - 1
		if k < 0 {
			k = 0
		}
		return float64(s[k]) / 1e3
	}
	out[prefix+"mb_per_s"] = float64(len(s)*size) / (1 << 20) / took.Seconds()
	out[prefix+"p50_ms"] = q(0.50)
	out[prefix+"p99_ms"] = q(0.99)
	out[prefix+"p99.9_ms"] = q(0.999)
	out[prefix+"max_ms"] = float64(s[len(s)-1]) / 1e3
}
