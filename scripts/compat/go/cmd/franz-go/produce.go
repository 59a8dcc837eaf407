package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"fjord/compat-go/internal/check"
)

type codec struct {
	name  string
	codec kgo.CompressionCodec
	id    uint8 // the RecordBatch attributes' compression bits
}

var codecs = []codec{
	{"none", kgo.NoCompression(), 0},
	{"gzip", kgo.GzipCompression(), 1},
	{"snappy", kgo.SnappyCompression(), 2},
	{"lz4", kgo.Lz4Compression(), 3},
	{"zstd", kgo.ZstdCompression(), 4},
}

// batchCodecs records the compression type of every batch the client wrote or read.
type batchCodecs struct {
	mu      sync.Mutex
	written map[uint8]int
	read    map[uint8]int
}

func newBatchCodecs() *batchCodecs {
	return &batchCodecs{written: map[uint8]int{}, read: map[uint8]int{}}
}

func (b *batchCodecs) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	b.mu.Lock()
	b.written[m.CompressionType]++
	b.mu.Unlock()
}

func (b *batchCodecs) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	b.mu.Lock()
	b.read[m.CompressionType]++
	b.mu.Unlock()
}

func onlyCodec(m map[uint8]int, want uint8) error {
	if len(m) == 0 {
		return fmt.Errorf("no batches seen")
	}
	for c, n := range m {
		if c != want {
			return fmt.Errorf("%d batch(es) with compression type %d, want only %d (all: %v)", n, c, want, m)
		}
	}
	return nil
}

// produceConsume: an idempotent acks=all producer with one codec writes keyed
// records with headers and explicit CreateTime timestamps (plus a record
// without a key and one with an empty value) to a 3-partition topic; an
// assigned consumer reads them back. Checks: every field equal, offsets
// contiguous from 0 and equal to the produce results, one partition per key,
// producer ids set (idempotence), every batch read back in the codec it was
// written with.
func (f *fg) produceConsume(ctx context.Context, c codec) error {
	adm, closeAdm, err := f.admin("admin")
	if err != nil {
		return err
	}
	defer closeAdm()
	topic := f.r.Name("fg-codec-" + c.name)
	const partitions = 3
	if err := createTopic(ctx, adm, topic, partitions, nil); err != nil {
		return err
	}

	hooks := newBatchCodecs()
	prod, err := f.client("producer",
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(c.codec),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.WithHooks(hooks),
	)
	if err != nil {
		return err
	}
	defer prod.Close()

	base := time.UnixMilli(time.Now().UnixMilli() - 3_600_000)
	const n = 300
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{
			Key:       []byte(fmt.Sprintf("key-%02d", i%20)),
			Value:     []byte(fmt.Sprintf("value-%04d-%s", i, strings.Repeat("compressible ", 12))),
			Headers:   []kgo.RecordHeader{{Key: "idx", Value: []byte(fmt.Sprint(i))}, {Key: "codec", Value: []byte(c.name)}, {Key: "empty", Value: []byte{}}},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	recs = append(recs,
		&kgo.Record{Key: nil, Value: []byte("record without a key"), Timestamp: base.Add(n * time.Millisecond)},
		&kgo.Record{Key: []byte("empty-value"), Value: []byte{}, Timestamp: base.Add((n + 1) * time.Millisecond)},
	)
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}

	type po struct {
		p int32
		o int64
	}
	want := map[po]*kgo.Record{}
	keyPart := map[string]int32{}
	for _, r := range recs {
		if r.Offset < 0 {
			return fmt.Errorf("produce result without offset: partition %d offset %d", r.Partition, r.Offset)
		}
		if _, dup := want[po{r.Partition, r.Offset}]; dup {
			return fmt.Errorf("two produce results at partition %d offset %d", r.Partition, r.Offset)
		}
		want[po{r.Partition, r.Offset}] = r
		if r.Key != nil {
			if p, ok := keyPart[string(r.Key)]; ok && p != r.Partition {
				return fmt.Errorf("key %q went to partitions %d and %d", r.Key, p, r.Partition)
			}
			keyPart[string(r.Key)] = r.Partition
		}
	}

	cons, err := f.client("consumer",
		kgo.ConsumePartitions(allPartitionsAtStart(topic, partitions)),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.WithHooks(hooks),
	)
	if err != nil {
		return err
	}
	defer cons.Close()
	got, err := pollUntil(ctx, cons, "consume", func(rs []*kgo.Record) bool { return len(rs) >= len(recs) })
	if err != nil {
		return err
	}
	if len(got) != len(recs) {
		return fmt.Errorf("consumed %d records, produced %d", len(got), len(recs))
	}
	next := map[int32]int64{}
	for _, g := range got {
		if g.Offset != next[g.Partition] {
			return fmt.Errorf("partition %d: offset %d after %d (not contiguous from 0)", g.Partition, g.Offset, next[g.Partition]-1)
		}
		next[g.Partition]++
		w, ok := want[po{g.Partition, g.Offset}]
		if !ok {
			return fmt.Errorf("consumed partition %d offset %d, which no produce result named", g.Partition, g.Offset)
		}
		if (w.Key == nil) != (g.Key == nil) || !bytes.Equal(w.Key, g.Key) {
			return fmt.Errorf("%d/%d key %q (nil %v), want %q (nil %v)", g.Partition, g.Offset, g.Key, g.Key == nil, w.Key, w.Key == nil)
		}
		if !bytes.Equal(w.Value, g.Value) {
			return fmt.Errorf("%d/%d value %q, want %q", g.Partition, g.Offset, g.Value, w.Value)
		}
		if len(w.Headers) != len(g.Headers) {
			return fmt.Errorf("%d/%d: %d headers, want %d", g.Partition, g.Offset, len(g.Headers), len(w.Headers))
		}
		for i := range w.Headers {
			if w.Headers[i].Key != g.Headers[i].Key || !bytes.Equal(w.Headers[i].Value, g.Headers[i].Value) {
				return fmt.Errorf("%d/%d header %d: %q=%q, want %q=%q", g.Partition, g.Offset, i, g.Headers[i].Key, g.Headers[i].Value, w.Headers[i].Key, w.Headers[i].Value)
			}
		}
		if !g.Timestamp.Equal(w.Timestamp) {
			return fmt.Errorf("%d/%d timestamp %d, want %d", g.Partition, g.Offset, g.Timestamp.UnixMilli(), w.Timestamp.UnixMilli())
		}
		if g.Attrs.TimestampType() != 0 {
			return fmt.Errorf("%d/%d timestamp type %d, want 0 (CreateTime)", g.Partition, g.Offset, g.Attrs.TimestampType())
		}
		if g.ProducerID < 0 {
			return fmt.Errorf("%d/%d producer id %d: the idempotent producer's id is not in the batch", g.Partition, g.Offset, g.ProducerID)
		}
	}
	// kgo calls the produce hook from a goroutine of its own after the
	// records' promises, so wait until it has been called.
	if err := check.Poll(ctx, 20*time.Millisecond, "batch hooks", func() (bool, string, error) {
		hooks.mu.Lock()
		defer hooks.mu.Unlock()
		return len(hooks.written) > 0 && len(hooks.read) > 0, fmt.Sprintf("written %v read %v", hooks.written, hooks.read), nil
	}); err != nil {
		return err
	}
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if err := onlyCodec(hooks.written, c.id); err != nil {
		return fmt.Errorf("the client wrote: %w", err)
	}
	if err := onlyCodec(hooks.read, c.id); err != nil {
		return fmt.Errorf("the consumer read: %w", err)
	}
	return nil
}
