package main

// The clients: idempotent acks=all producers, a transactional producer
// committing and aborting, read_committed consumers assigned every
// partition, group consumers committing offsets, and an observer reading the
// group's committed offsets. Each records its operations in the History.

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workload drives the clients against one topic.
type Workload struct {
	H         *History
	Bootstrap []string
	Topic     string
	Parts     int32
	Group     string
	Seed      int64
	// Think is the longest pause between two operations of one client.
	Think time.Duration
}

func (w *Workload) base() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(w.Bootstrap...),
		kgo.DialTimeout(2 * time.Second),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(15 * time.Second),
		kgo.MetadataMinAge(200 * time.Millisecond),
		kgo.MetadataMaxAge(5 * time.Second),
	}
}

func (w *Workload) producerOpts() []kgo.Opt {
	return append(w.base(),
		kgo.DefaultProduceTopic(w.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.ProduceRequestTimeout(5*time.Second),
		kgo.RecordDeliveryTimeout(12*time.Second),
	)
}

func (w *Workload) think(r *rand.Rand) {
	if w.Think > 0 {
		time.Sleep(time.Duration(r.Int63n(int64(w.Think))))
	}
}

// Producer runs an idempotent acks=all producer until ctx ends: one record
// at a time, to a random partition, each value unique.
func (w *Workload) Producer(ctx context.Context, id int) {
	r := rand.New(rand.NewSource(w.Seed*1000 + int64(id)))
	cl, err := kgo.NewClient(w.producerOpts()...)
	if err != nil {
		w.H.Note(fmt.Sprintf("producer %d: %v", id, err))
		return
	}
	defer cl.Close()
	for seq := 0; ctx.Err() == nil; seq++ {
		p := int32(r.Intn(int(w.Parts)))
		v := fmt.Sprintf("a%d-%d", id, seq)
		w.produceOne(cl, id, p, v, OpAppend, 0)
		w.think(r)
	}
}

// produceOne records one produce of value v to partition p.
func (w *Workload) produceOne(cl *kgo.Client, id int, p int32, v string, kind OpKind, txn int) error {
	rec := &kgo.Record{Topic: w.Topic, Partition: p, Value: []byte(v)}
	op := Op{Kind: kind, Client: id, Part: p, Value: v, Offset: -1, Txn: txn, Invoke: w.H.Now(), Complete: -1, Err: "no answer"}
	// Recorded at once: an operation that never returns stays pending.
	at := w.H.Begin(op)
	op.Err = ""
	octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := cl.ProduceSync(octx, rec).FirstErr()
	cancel()
	op.Complete = w.H.Now()
	if err == nil {
		op.Ok, op.Offset = true, rec.Offset
	} else {
		op.Err = err.Error()
	}
	w.H.Finish(at, op)
	return err
}

// TxnProducer runs transactions of one to three records over random
// partitions, committing or aborting at random, until ctx ends.
func (w *Workload) TxnProducer(ctx context.Context, id int) {
	r := rand.New(rand.NewSource(w.Seed*1000 + int64(id)))
	opts := append(w.producerOpts(),
		kgo.TransactionalID(fmt.Sprintf("history-tx-%d", id)),
		kgo.TransactionTimeout(15*time.Second),
	)
	var cl *kgo.Client
	renew := func() {
		if cl != nil {
			cl.Close()
		}
		var err error
		for ctx.Err() == nil {
			if cl, err = kgo.NewClient(opts...); err == nil {
				return
			}
			time.Sleep(time.Second)
		}
	}
	renew()
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for t := 0; ctx.Err() == nil; t++ {
		if err := cl.BeginTransaction(); err != nil {
			renew()
			continue
		}
		tx := Txn{ID: id*1_000_000 + t, Client: id, Invoke: w.H.Now()}
		ok := true
		for i, n := 0, 1+r.Intn(3); i < n && ok; i++ {
			v := fmt.Sprintf("t%d-%d-%d", id, t, i)
			tx.Values = append(tx.Values, v)
			ok = w.produceOne(cl, id, int32(r.Intn(int(w.Parts))), v, OpTxnAppend, tx.ID) == nil
		}
		commit := ok && r.Intn(2) == 0
		ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if !ok {
			cl.AbortBufferedRecords(ectx)
		}
		try := kgo.TryAbort
		if commit {
			try = kgo.TryCommit
		}
		err := cl.EndTransaction(ectx, try)
		tx.End = w.H.Now()
		switch {
		case !commit:
			tx.Outcome = TxnAborted
		case err == nil:
			tx.Outcome = TxnCommitted
		default:
			tx.Outcome = TxnUnknown
		}
		if err != nil {
			// The documented recovery: abort (which completes or fences
			// what the broker has); if that fails too, a new client (its
			// InitProducerID does the same).
			if cl.EndTransaction(ectx, kgo.TryAbort) != nil {
				renew()
			}
		}
		cancel()
		w.H.AddTxn(tx)
		w.think(r)
	}
}

// Consumer runs a read_committed consumer until ctx ends: assigned every
// partition from the start when group is "", else a member of group that
// commits what it read after every poll.
func (w *Workload) Consumer(ctx context.Context, id int, group string) {
	var mu sync.Mutex
	pos := map[int32]int64{} // next expected offset; absent: not known
	opts := append(w.base(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if group == "" {
		parts := map[int32]kgo.Offset{}
		for p := int32(0); p < w.Parts; p++ {
			parts[p] = kgo.NewOffset().AtStart()
			pos[p] = 0
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.Topic: parts}))
	} else {
		forget := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			for _, p := range m[w.Topic] {
				delete(pos, p)
			}
			mu.Unlock()
		}
		opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(w.Topic),
			kgo.DisableAutoCommit(), kgo.SessionTimeout(10*time.Second),
			kgo.HeartbeatInterval(time.Second), kgo.RebalanceTimeout(20*time.Second),
			kgo.OnPartitionsAssigned(forget), kgo.OnPartitionsRevoked(forget), kgo.OnPartitionsLost(forget))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		w.H.Note(fmt.Sprintf("consumer %d: %v", id, err))
		return
	}
	defer cl.Close()
	committed := map[int32]int64{}
	for ctx.Err() == nil {
		inv := w.H.Now()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		comp := w.H.Now()
		byPart := map[int32][]Rec{}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == w.Topic {
				byPart[r.Partition] = append(byPart[r.Partition], Rec{Offset: r.Offset, Value: string(r.Value)})
			}
		})
		mu.Lock()
		for p, recs := range byPart {
			w.H.Add(readOps(id, p, pos, recs, inv, comp, false)...)
		}
		mu.Unlock()
		if group != "" {
			w.commit(cl, id, committed)
		}
	}
}

// readOps turns the records one poll returned for partition p into read
// operations (split where the consumer went back, after a reset), and moves
// pos on.
func readOps(client int, p int32, pos map[int32]int64, recs []Rec, inv, comp int64, final bool) []Op {
	var ops []Op
	from, known := pos[p]
	if !known {
		from = -1
	}
	cur := Op{Kind: OpRead, Client: client, Part: p, From: from, Invoke: inv, Complete: comp, Final: final, Offset: -1}
	for _, r := range recs {
		if n := len(cur.Recs); (n > 0 && r.Offset <= cur.Recs[n-1].Offset) || (n == 0 && cur.From >= 0 && r.Offset < cur.From) {
			if n > 0 {
				ops = append(ops, cur)
			}
			cur = Op{Kind: OpRead, Client: client, Part: p, From: -1, Invoke: inv, Complete: comp, Final: final, Offset: -1}
		}
		cur.Recs = append(cur.Recs, r)
	}
	if len(cur.Recs) > 0 {
		ops = append(ops, cur)
		pos[p] = cur.Recs[len(cur.Recs)-1].Offset + 1
	}
	return ops
}

// commit commits the offsets the member consumed since its last commit,
// one operation per partition.
func (w *Workload) commit(cl *kgo.Client, id int, committed map[int32]int64) {
	unc := cl.UncommittedOffsets()
	todo := map[string]map[int32]kgo.EpochOffset{}
	for p, eo := range unc[w.Topic] {
		if last, ok := committed[p]; ok && last == eo.Offset {
			continue
		}
		if todo[w.Topic] == nil {
			todo[w.Topic] = map[int32]kgo.EpochOffset{}
		}
		todo[w.Topic][p] = eo
	}
	if len(todo) == 0 {
		return
	}
	inv := w.H.Now()
	results := map[int32]error{}
	var reqErr error
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	cl.CommitOffsetsSync(cctx, todo, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		reqErr = err
		if err != nil || resp == nil {
			return
		}
		for _, t := range resp.Topics {
			for _, pr := range t.Partitions {
				results[pr.Partition] = kerrOf(pr.ErrorCode)
			}
		}
	})
	cancel()
	comp := w.H.Now()
	for p, eo := range todo[w.Topic] {
		op := Op{Kind: OpCommit, Client: id, Part: p, Offset: eo.Offset, Invoke: inv, Complete: comp}
		perr, answered := results[p]
		switch {
		case reqErr != nil:
			op.Err = reqErr.Error()
		case !answered:
			op.Err = "no answer for the partition"
		case perr != nil:
			op.Err = perr.Error()
		default:
			op.Ok = true
			committed[p] = eo.Offset
		}
		w.H.Add(op)
	}
}

// OffsetObserver reads the group's committed offsets every few hundred ms.
func (w *Workload) OffsetObserver(ctx context.Context, id int, group string) {
	cl, err := kgo.NewClient(w.base()...)
	if err != nil {
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for ctx.Err() == nil {
		inv := w.H.Now()
		fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := adm.FetchOffsets(fctx, group)
		cancel()
		comp := w.H.Now()
		if err == nil {
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Err == nil && o.Topic == w.Topic && o.At >= 0 {
					w.H.Add(Op{Kind: OpFetchCommitted, Client: id, Part: o.Partition, Offset: o.At, Ok: true, Invoke: inv, Complete: comp})
				}
			})
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// FinalRead writes one last acknowledged record to every partition (a
// sentinel), waits until no transaction is open (the last stable offset
// equals the high watermark everywhere), then reads every partition from the
// start up to its sentinel with read_committed and records that as final
// reads.
func (w *Workload) FinalRead(adm *kadm.Client, id int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pcl, err := kgo.NewClient(w.producerOpts()...)
	if err != nil {
		return err
	}
	sentinel := map[int32]string{}
	for p := int32(0); p < w.Parts; p++ {
		v := fmt.Sprintf("end-%d", p)
		for try := 0; ; try++ {
			if w.produceOne(pcl, id, p, fmt.Sprintf("%s-%d", v, try), OpAppend, 0) == nil {
				sentinel[p] = fmt.Sprintf("%s-%d", v, try)
				break
			}
			if time.Now().After(deadline) {
				pcl.Close()
				return fmt.Errorf("no sentinel record could be written to partition %d", p)
			}
		}
	}
	pcl.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lso, err1 := adm.ListCommittedOffsets(ctx, w.Topic)
		hw, err2 := adm.ListEndOffsets(ctx, w.Topic)
		cancel()
		if err1 == nil && err2 == nil {
			same, n := true, int32(0)
			lso.Each(func(o kadm.ListedOffset) {
				n++
				if h, ok := hw.Lookup(w.Topic, o.Partition); o.Err != nil || !ok || h.Err != nil || h.Offset != o.Offset {
					same = false
				}
			})
			if same && n == w.Parts {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the last stable offsets did not reach the high watermarks within %v (a transaction left open?)", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < w.Parts; p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append(w.base(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.Topic: parts}))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	inv := w.H.Now()
	all := map[int32][]Rec{}
	seen := map[int32]bool{}
	for int32(len(seen)) < w.Parts && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			all[r.Partition] = append(all[r.Partition], Rec{Offset: r.Offset, Value: string(r.Value)})
			if string(r.Value) == sentinel[r.Partition] {
				seen[r.Partition] = true
			}
		})
	}
	comp := w.H.Now()
	for p := int32(0); p < w.Parts; p++ {
		w.H.Add(readOps(id, p, map[int32]int64{p: 0}, all[p], inv, comp, true)...)
	}
	if int32(len(seen)) < w.Parts {
		return fmt.Errorf("the final read did not reach every partition's sentinel record within %v", timeout)
	}
	return nil
}

// FinalOffsets fetches the group's committed offsets once the faults are
// healed and every member left, and records that as final fetches (three,
// each after the previous returned).
func (w *Workload) FinalOffsets(adm *kadm.Client, id int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for got := 0; got < 3; {
		inv := w.H.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := adm.FetchOffsets(ctx, w.Group)
		cancel()
		comp := w.H.Now()
		if err == nil {
			err = resp.Error()
		}
		if err == nil {
			resp.Each(func(o kadm.OffsetResponse) {
				if o.Topic == w.Topic && o.At >= 0 {
					w.H.Add(Op{Kind: OpFetchCommitted, Client: id, Part: o.Partition, Offset: o.At, Ok: true, Invoke: inv, Complete: comp, Final: true})
				}
			})
			got++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group's committed offsets could not be fetched: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}
