package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

func errorIs(err error, target error) bool { return err != nil && errors.Is(err, target) }

type po struct {
	p int32
	o int64
}

// sent is what the producer was told: the message at each (partition, offset).
type sent map[po]*sarama.ProducerMessage

func (s sent) add(m *sarama.ProducerMessage) error {
	if m.Offset < 0 {
		return fmt.Errorf("message %v: no offset in the produce result (partition %d offset %d)", m.Metadata, m.Partition, m.Offset)
	}
	k := po{m.Partition, m.Offset}
	if _, dup := s[k]; dup {
		return fmt.Errorf("two messages reported at partition %d offset %d", m.Partition, m.Offset)
	}
	s[k] = m
	return nil
}

// contiguous checks that each partition's offsets are 0..n-1 and returns the
// count per partition.
func (s sent) contiguous() (map[int32]int64, error) {
	ends := map[int32]int64{}
	for k := range s {
		if k.o+1 > ends[k.p] {
			ends[k.p] = k.o + 1
		}
	}
	for p, e := range ends {
		for o := int64(0); o < e; o++ {
			if _, ok := s[po{p, o}]; !ok {
				return nil, fmt.Errorf("partition %d: no message reported at offset %d (end %d)", p, o, e)
			}
		}
	}
	return ends, nil
}

func encoderBytes(e sarama.Encoder) []byte {
	if e == nil {
		return nil
	}
	b, _ := e.Encode()
	return b
}

func makeMessages(topic string, n int, tag string, base time.Time) []*sarama.ProducerMessage {
	var ms []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		ms = append(ms, &sarama.ProducerMessage{
			Topic: topic,
			Key:   sarama.StringEncoder(fmt.Sprintf("key-%02d", i%20)),
			Value: sarama.StringEncoder(fmt.Sprintf("%s-%04d-%s", tag, i, strings.Repeat("compressible ", 8))),
			Headers: []sarama.RecordHeader{
				{Key: []byte("idx"), Value: []byte(fmt.Sprint(i))},
				{Key: []byte("tag"), Value: []byte(tag)},
			},
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
			Metadata:  i,
		})
	}
	return ms
}

// readBack consumes every partition from the oldest offset with the partition
// consumer until it has ends[p] messages, and compares each with what was sent.
func (s *sr) readBack(ctx context.Context, topic string, want sent, ends map[int32]int64) error {
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewConsumer: %w", err)
	}
	defer cons.Close()
	for p, end := range ends {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return fmt.Errorf("ConsumePartition %d: %w", p, err)
		}
		next := int64(0)
		for next < end {
			select {
			case <-ctx.Done():
				pc.AsyncClose()
				return fmt.Errorf("partition %d: %d of %d messages read: %w", p, next, end, ctx.Err())
			case cerr := <-pc.Errors():
				pc.AsyncClose()
				return fmt.Errorf("partition %d: %w", p, cerr)
			case m := <-pc.Messages():
				if m.Offset != next {
					pc.AsyncClose()
					return fmt.Errorf("partition %d: offset %d, want %d", p, m.Offset, next)
				}
				if err := sameMessage(m, want[po{p, m.Offset}]); err != nil {
					pc.AsyncClose()
					return fmt.Errorf("partition %d offset %d: %w", p, m.Offset, err)
				}
				next++
			}
		}
		if err := pc.Close(); err != nil {
			return fmt.Errorf("partition %d close: %w", p, err)
		}
	}
	return nil
}

func sameMessage(got *sarama.ConsumerMessage, want *sarama.ProducerMessage) error {
	if want == nil {
		return fmt.Errorf("no produce result for this offset")
	}
	if k := encoderBytes(want.Key); !bytes.Equal(got.Key, k) {
		return fmt.Errorf("key %q, want %q", got.Key, k)
	}
	if v := encoderBytes(want.Value); !bytes.Equal(got.Value, v) {
		return fmt.Errorf("value %q, want %q", got.Value, v)
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i, h := range want.Headers {
		if !bytes.Equal(got.Headers[i].Key, h.Key) || !bytes.Equal(got.Headers[i].Value, h.Value) {
			return fmt.Errorf("header %d %q=%q, want %q=%q", i, got.Headers[i].Key, got.Headers[i].Value, h.Key, h.Value)
		}
	}
	if !want.Timestamp.IsZero() && got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli() {
		return fmt.Errorf("timestamp %d, want %d", got.Timestamp.UnixMilli(), want.Timestamp.UnixMilli())
	}
	return nil
}

func (s *sr) syncProducer(ctx context.Context) error {
	topic := s.topic("sync")
	if err := s.createTopic(ctx, topic, 3); err != nil {
		return err
	}
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	prod, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer prod.Close()
	msgs := makeMessages(topic, 200, "sync", time.UnixMilli(time.Now().UnixMilli()-3_600_000))
	if err := prod.SendMessages(msgs[:150]); err != nil {
		return fmt.Errorf("SendMessages: %w", err)
	}
	for _, m := range msgs[150:] {
		p, o, err := prod.SendMessage(m)
		if err != nil {
			return fmt.Errorf("SendMessage %v: %w", m.Metadata, err)
		}
		if p != m.Partition || o != m.Offset {
			return fmt.Errorf("SendMessage returned %d/%d, the message says %d/%d", p, o, m.Partition, m.Offset)
		}
	}
	want := sent{}
	keyPart := map[string]int32{}
	for _, m := range msgs {
		if err := want.add(m); err != nil {
			return err
		}
		k := string(encoderBytes(m.Key))
		if p, ok := keyPart[k]; ok && p != m.Partition {
			return fmt.Errorf("key %s went to partitions %d and %d", k, p, m.Partition)
		}
		keyPart[k] = m.Partition
	}
	ends, err := want.contiguous()
	if err != nil {
		return err
	}
	return s.readBack(ctx, topic, want, ends)
}

func (s *sr) codecRoundTrip(ctx context.Context, name string, codec sarama.CompressionCodec) error {
	topic := s.topic("codec-" + name)
	if err := s.createTopic(ctx, topic, 1); err != nil {
		return err
	}
	c := s.config()
	c.Producer.Compression = codec
	c.Producer.Flush.Messages = 25 // several messages per batch, so the batch is really compressed
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	cl, err := s.client(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	prod, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer prod.Close()
	msgs := makeMessages(topic, 100, name, time.UnixMilli(time.Now().UnixMilli()-60_000))
	if err := prod.SendMessages(msgs); err != nil {
		return fmt.Errorf("SendMessages: %w", err)
	}
	want := sent{}
	for _, m := range msgs {
		if err := want.add(m); err != nil {
			return err
		}
	}
	ends, err := want.contiguous()
	if err != nil {
		return err
	}
	if ends[0] != 100 {
		return fmt.Errorf("%d messages at partition 0, want 100", ends[0])
	}
	return s.readBack(ctx, topic, want, ends)
}

func (s *sr) asyncProducer(ctx context.Context) error {
	topic := s.topic("async")
	if err := s.createTopic(ctx, topic, 3); err != nil {
		return err
	}
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	defer cl.Close()
	prod, err := sarama.NewAsyncProducerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewAsyncProducer: %w", err)
	}
	const n = 300
	msgs := makeMessages(topic, n, "async", time.UnixMilli(time.Now().UnixMilli()-1_800_000))
	go func() {
		for _, m := range msgs {
			select {
			case prod.Input() <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	want := sent{}
	seen := map[int]bool{}
	var failures []string
	for got := 0; got < n; got++ {
		select {
		case <-ctx.Done():
			prod.AsyncClose()
			return fmt.Errorf("%d of %d results: %w", got, n, ctx.Err())
		case m := <-prod.Successes():
			i := m.Metadata.(int)
			if seen[i] {
				prod.AsyncClose()
				return fmt.Errorf("message %d reported twice", i)
			}
			seen[i] = true
			if err := want.add(m); err != nil {
				prod.AsyncClose()
				return err
			}
		case e := <-prod.Errors():
			if len(failures) < 5 {
				failures = append(failures, fmt.Sprintf("message %v: %v", e.Msg.Metadata, e.Err))
			}
		}
	}
	if err := prod.Close(); err != nil {
		return fmt.Errorf("Close: %w", err)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d of %d messages failed: %v", n-len(want), n, failures)
	}
	ends, err := want.contiguous()
	if err != nil {
		return err
	}
	return s.readBack(ctx, topic, want, ends)
}
