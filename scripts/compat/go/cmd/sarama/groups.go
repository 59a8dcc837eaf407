package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// handler marks messages until limit (then commits synchronously and stops
// marking); messages after the limit are not processed.
type handler struct {
	mu      sync.Mutex
	limit   int
	marked  map[po]bool
	first   map[int32]int64 // first offset seen per partition
	dups    []string
	reached chan struct{}
	closed  bool
	setups  int
}

func newHandler(limit int) *handler {
	return &handler{limit: limit, marked: map[po]bool{}, first: map[int32]int64{}, reached: make(chan struct{})}
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error {
	h.mu.Lock()
	h.setups++
	h.mu.Unlock()
	return nil
}

func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-sess.Context().Done():
			return nil
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			h.mu.Lock()
			if _, ok := h.first[m.Partition]; !ok {
				h.first[m.Partition] = m.Offset
			}
			if len(h.marked) < h.limit {
				k := po{m.Partition, m.Offset}
				if h.marked[k] {
					h.dups = append(h.dups, fmt.Sprintf("%d/%d", m.Partition, m.Offset))
				}
				h.marked[k] = true
				sess.MarkMessage(m, "")
				if len(h.marked) == h.limit && !h.closed {
					sess.Commit()
					h.closed = true
					close(h.reached)
				}
			}
			h.mu.Unlock()
		}
	}
}

// runGroup consumes with a new ConsumerGroup until the handler reaches its
// limit, then stops and closes the group (which leaves it).
func (s *sr) runGroup(ctx context.Context, group, topic string, h *handler) error {
	c := s.config()
	c.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup([]string{s.r.Bootstrap}, group, c)
	if err != nil {
		return fmt.Errorf("NewConsumerGroup: %w", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	loopDone := make(chan error, 1)
	go func() {
		for {
			if err := cg.Consume(cctx, []string{topic}, h); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) || cctx.Err() != nil {
					loopDone <- nil
				} else {
					loopDone <- fmt.Errorf("Consume: %w", err)
				}
				return
			}
			if cctx.Err() != nil {
				loopDone <- nil
				return
			}
		}
	}()
	var runErr error
	select {
	case <-h.reached:
	case err := <-loopDone:
		loopDone <- err
		runErr = fmt.Errorf("consume loop ended early: %v", err)
	case err := <-cg.Errors():
		runErr = fmt.Errorf("consumer group error: %w", err)
	case <-ctx.Done():
		h.mu.Lock()
		runErr = fmt.Errorf("%d of %d messages marked: %w", len(h.marked), h.limit, ctx.Err())
		h.mu.Unlock()
	}
	cancel()
	if err := <-loopDone; err != nil && runErr == nil {
		runErr = err
	}
	if err := cg.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("Close: %w", err)
	}
	if runErr == nil && len(h.dups) > 0 {
		runErr = fmt.Errorf("delivered twice in one run: %v", h.dups)
	}
	return runErr
}

func (s *sr) committed(group, topic string, partitions int32) (map[int32]int64, error) {
	cl, err := s.client(nil)
	if err != nil {
		return nil, err
	}
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		cl.Close()
		return nil, err
	}
	defer adm.Close()
	var ps []int32
	for p := int32(0); p < partitions; p++ {
		ps = append(ps, p)
	}
	resp, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{topic: ps})
	if err != nil {
		return nil, fmt.Errorf("ListConsumerGroupOffsets: %w", err)
	}
	out := map[int32]int64{}
	for _, p := range ps {
		b := resp.GetBlock(topic, p)
		if b == nil {
			return nil, fmt.Errorf("ListConsumerGroupOffsets: no block for partition %d", p)
		}
		if b.Err != sarama.ErrNoError {
			return nil, fmt.Errorf("ListConsumerGroupOffsets partition %d: %w", p, b.Err)
		}
		out[p] = b.Offset
	}
	return out, nil
}

// consumerGroup: 200 messages on 4 partitions. A group marks exactly 100,
// commits, and closes; the committed offsets are one past the last marked
// message of each partition. A new group instance with the same id starts
// each partition exactly at its committed offset and reads the other 100:
// nothing read twice, nothing missing, final offsets at the end.
func (s *sr) consumerGroup(ctx context.Context) error {
	topic := s.topic("group")
	group := s.topic("group")
	const partitions = 4
	if err := s.createTopic(ctx, topic, partitions); err != nil {
		return err
	}
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	prod, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		cl.Close()
		return err
	}
	msgs := makeMessages(topic, 200, "group", time.Now())
	err = prod.SendMessages(msgs)
	prod.Close()
	cl.Close()
	if err != nil {
		return fmt.Errorf("SendMessages: %w", err)
	}
	all := sent{}
	for _, m := range msgs {
		if err := all.add(m); err != nil {
			return err
		}
	}
	ends, err := all.contiguous()
	if err != nil {
		return err
	}

	h1 := newHandler(100)
	if err := s.runGroup(ctx, group, topic, h1); err != nil {
		return fmt.Errorf("first run: %w", err)
	}
	got, err := s.committed(group, topic, partitions)
	if err != nil {
		return err
	}
	wantCommit := map[int32]int64{}
	for k := range h1.marked {
		if k.o+1 > wantCommit[k.p] {
			wantCommit[k.p] = k.o + 1
		}
	}
	for p := int32(0); p < partitions; p++ {
		w, ok := wantCommit[p]
		if !ok {
			w = -1 // nothing marked: no offset committed
		}
		if got[p] != w {
			return fmt.Errorf("after the first run partition %d has committed offset %d, want %d (marked %v)", p, got[p], w, wantCommit)
		}
	}
	// What was marked is a prefix of each partition.
	for k := range h1.marked {
		for o := int64(0); o < k.o; o++ {
			if !h1.marked[po{k.p, o}] {
				return fmt.Errorf("first run marked %d/%d but not %d/%d", k.p, k.o, k.p, o)
			}
		}
	}

	h2 := newHandler(100)
	if err := s.runGroup(ctx, group, topic, h2); err != nil {
		return fmt.Errorf("second run: %w", err)
	}
	for p := int32(0); p < partitions; p++ {
		start := wantCommit[p]
		if start == ends[p] {
			continue // nothing left on this partition
		}
		if f, ok := h2.first[p]; !ok || f != start {
			return fmt.Errorf("second run started partition %d at %d (seen %v), want the committed offset %d", p, f, ok, start)
		}
	}
	for k := range h2.marked {
		if h1.marked[k] {
			return fmt.Errorf("%d/%d processed in both runs", k.p, k.o)
		}
	}
	for k := range all {
		if !h1.marked[k] && !h2.marked[k] {
			return fmt.Errorf("%d/%d processed in neither run", k.p, k.o)
		}
	}
	final, err := s.committed(group, topic, partitions)
	if err != nil {
		return err
	}
	for p := int32(0); p < partitions; p++ {
		if final[p] != ends[p] {
			return fmt.Errorf("final committed offset of partition %d: %d, want %d", p, final[p], ends[p])
		}
	}
	return nil
}

// offsetManager: a group without members; MarkOffset + Commit, read back by a
// new offset manager (NextOffset) and by ClusterAdmin; ResetOffset to a lower
// offset + Commit, read back again.
func (s *sr) offsetManager(ctx context.Context) error {
	topic := s.topic("offsets")
	group := s.topic("offsets")
	if err := s.createTopic(ctx, topic, 2); err != nil {
		return err
	}
	c := s.config()
	c.Consumer.Offsets.AutoCommit.Enable = false
	open := func() (sarama.Client, sarama.OffsetManager, sarama.PartitionOffsetManager, error) {
		cl, err := s.client(c)
		if err != nil {
			return nil, nil, nil, err
		}
		om, err := sarama.NewOffsetManagerFromClient(group, cl)
		if err != nil {
			cl.Close()
			return nil, nil, nil, fmt.Errorf("NewOffsetManager: %w", err)
		}
		pom, err := om.ManagePartition(topic, 1)
		if err != nil {
			om.Close()
			cl.Close()
			return nil, nil, nil, fmt.Errorf("ManagePartition: %w", err)
		}
		return cl, om, pom, nil
	}
	closeAll := func(cl sarama.Client, om sarama.OffsetManager, pom sarama.PartitionOffsetManager) error {
		// Without auto-commit the offset manager releases its partitions
		// only when it closes, so pom.Close (which waits for that) would
		// block: close asynchronously, close the manager, then drain.
		pom.AsyncClose()
		om.Close()
		var perr error
		for e := range pom.Errors() {
			if perr == nil {
				perr = fmt.Errorf("partition offset manager: %w", e)
			}
		}
		cl.Close()
		return perr
	}
	expect := func(what string, offset int64, meta string) error {
		cl, om, pom, err := open()
		if err != nil {
			return err
		}
		o, m := pom.NextOffset()
		if err := closeAll(cl, om, pom); err != nil {
			return err
		}
		if o != offset || m != meta {
			return fmt.Errorf("%s: a new offset manager's NextOffset is %d %q, want %d %q", what, o, m, offset, meta)
		}
		if offset < 0 {
			return nil
		}
		got, err := s.committed(group, topic, 2)
		if err != nil {
			return err
		}
		if got[1] != offset {
			return fmt.Errorf("%s: ClusterAdmin says %d, want %d", what, got[1], offset)
		}
		return nil
	}
	commitErrs := func(pom sarama.PartitionOffsetManager) error {
		select {
		case e := <-pom.Errors():
			return fmt.Errorf("commit: %w", e)
		default:
			return nil
		}
	}

	if err := expect("nothing committed yet", sarama.OffsetOldest, ""); err != nil {
		return err
	}
	cl, om, pom, err := open()
	if err != nil {
		return err
	}
	pom.MarkOffset(42, "meta-42")
	om.Commit()
	if err := commitErrs(pom); err != nil {
		closeAll(cl, om, pom)
		return err
	}
	if o, m := pom.NextOffset(); o != 42 || m != "meta-42" {
		closeAll(cl, om, pom)
		return fmt.Errorf("NextOffset after MarkOffset(42): %d %q", o, m)
	}
	if err := expect("after MarkOffset(42)+Commit", 42, "meta-42"); err != nil {
		closeAll(cl, om, pom)
		return err
	}
	pom.MarkOffset(7, "ignored") // MarkOffset never moves back
	pom.ResetOffset(10, "meta-10")
	om.Commit()
	if err := commitErrs(pom); err != nil {
		closeAll(cl, om, pom)
		return err
	}
	if err := closeAll(cl, om, pom); err != nil {
		return err
	}
	return expect("after ResetOffset(10)+Commit", 10, "meta-10")
}
