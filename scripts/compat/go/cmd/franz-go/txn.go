package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeCounter counts the requests a client wrote, by API key.
type writeCounter struct {
	mu   sync.Mutex
	keys map[int16]int
}

// OnBrokerWrite is kgo's HookBrokerWrite.
func (w *writeCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keys[key]++
}

func (w *writeCounter) count(key kmsg.Key) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keys[int16(key)]
}

// finalizedTransactionVersion is the cluster's finalized transaction.version
// level as ApiVersions v3 answers it (0 when absent).
func finalizedTransactionVersion(ctx context.Context, adm *admin) (int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "fjord-compat"
	req.ClientSoftwareVersion = "1"
	resp, err := req.RequestWith(ctx, adm.cl)
	if err != nil {
		return 0, fmt.Errorf("ApiVersions: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// groupTransactSession: 90 input records are copied (transformed) to an output
// topic by a kgo.GroupTransactSession in rounds of at most 25 records. The
// second round with records is aborted (the session rewinds to the committed
// offsets, so those records are processed again later). Checks: no input record
// is in two committed rounds; a read_committed consumer of the output sees
// every transformed input exactly once and nothing from the aborted round; a
// read_uncommitted consumer does see the aborted round's records; the group's
// committed offsets are the input's end offsets. On the wire: with
// transaction.version 2 finalized (KIP-890 part 2, both brokers' default) the
// session sends no AddPartitionsToTxn and no AddOffsetsToTxn, below 2 it does.
func (f *fg) groupTransactSession(ctx context.Context) error {
	adm, closeAdm, err := f.admin("admin")
	if err != nil {
		return err
	}
	defer closeAdm()
	in := f.r.Name("fg-txn-in")
	out := f.r.Name("fg-txn-out")
	group := f.r.Name("fg-txn-group")
	const partitions = 3
	const n = 90
	for _, t := range []string{in, out} {
		if err := createTopic(ctx, adm, t, partitions, nil); err != nil {
			return err
		}
	}
	prod, err := f.client("producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	var inputs []*kgo.Record
	for i := 0; i < n; i++ {
		inputs = append(inputs, &kgo.Record{Topic: in, Partition: int32(i % partitions), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("in-%d", i))})
	}
	if err := prod.ProduceSync(ctx, inputs...).FirstErr(); err != nil {
		return fmt.Errorf("produce input: %w", err)
	}

	tv, err := finalizedTransactionVersion(ctx, adm)
	if err != nil {
		return err
	}
	wire := &writeCounter{keys: map[int16]int{}}
	sess, err := kgo.NewGroupTransactSession(f.opts("txn-session",
		kgo.WithHooks(wire),
		kgo.TransactionalID(f.r.Name("fg-txn-id")),
		kgo.TransactionTimeout(30*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RequireStableFetchOffsets(),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.DefaultProduceTopic(out),
	)...)
	if err != nil {
		return fmt.Errorf("NewGroupTransactSession: %w", err)
	}
	defer sess.Close()

	committedIn := map[string]int{}
	abortedRound, abortedCount, rounds, uncommittedRounds := -1, 0, 0, 0
	for len(committedIn) < n {
		if ctx.Err() != nil {
			return fmt.Errorf("%d of %d inputs committed after %d rounds: %w", len(committedIn), n, rounds, ctx.Err())
		}
		rounds++
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("round %d Begin: %w", rounds, err)
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := sess.PollRecords(pctx, 25)
		cancel()
		if err := fetchErr(fs); err != nil {
			return err
		}
		var outs []*kgo.Record
		var vals []string
		fs.EachRecord(func(r *kgo.Record) {
			vals = append(vals, string(r.Value))
			outs = append(outs, &kgo.Record{
				Key:     r.Key,
				Value:   []byte("out:" + string(r.Value)),
				Headers: []kgo.RecordHeader{{Key: "round", Value: []byte(strconv.Itoa(rounds))}},
			})
		})
		if len(outs) > 0 {
			if err := sess.ProduceSync(ctx, outs...).FirstErr(); err != nil {
				return fmt.Errorf("round %d produce: %w", rounds, err)
			}
		}
		abort := abortedRound < 0 && len(outs) > 0 && len(committedIn) > 0
		committed, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
		if err != nil {
			return fmt.Errorf("round %d End(commit=%v): %w", rounds, !abort, err)
		}
		switch {
		case abort:
			if committed {
				return fmt.Errorf("round %d: End(TryAbort) reported a commit", rounds)
			}
			abortedRound, abortedCount = rounds, len(outs)
		case committed:
			for _, v := range vals {
				committedIn[v]++
				if committedIn[v] > 1 {
					return fmt.Errorf("round %d committed %s again (already in an earlier committed round)", rounds, v)
				}
			}
		case len(outs) > 0:
			uncommittedRounds++ // a rebalance made the session abort; the records come again
		}
	}
	if abortedRound < 0 {
		return fmt.Errorf("no round was aborted (all %d inputs came in one round?)", n)
	}
	if uncommittedRounds > 0 {
		f.r.Note("transactions: %d round(s) aborted by the session itself (rebalance)", uncommittedRounds)
	}
	sess.Close()
	adds, offsets, endTxns := wire.count(kmsg.AddPartitionsToTxn), wire.count(kmsg.AddOffsetsToTxn), wire.count(kmsg.EndTxn)
	if endTxns == 0 {
		return fmt.Errorf("the session sent no EndTxn")
	}
	if v2 := tv >= 2; v2 != (adds == 0 && offsets == 0) {
		return fmt.Errorf("transaction.version %d finalized, yet the session sent %d AddPartitionsToTxn and %d AddOffsetsToTxn (%d EndTxn)", tv, adds, offsets, endTxns)
	}
	f.r.Note("transactions: transaction.version %d: %d AddPartitionsToTxn, %d AddOffsetsToTxn, %d EndTxn on the wire", tv, adds, offsets, endTxns)

	// A plain record at the end of each output partition tells the readers
	// that they have seen everything before it.
	var sentinels []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		sentinels = append(sentinels, &kgo.Record{Topic: out, Partition: p, Key: []byte("sentinel"), Headers: []kgo.RecordHeader{{Key: "sentinel", Value: []byte("1")}}})
	}
	if err := prod.ProduceSync(ctx, sentinels...).FirstErr(); err != nil {
		return fmt.Errorf("produce sentinels: %w", err)
	}
	readAll := func(level kgo.IsolationLevel, label string) ([]*kgo.Record, error) {
		cl, err := f.client(label, kgo.ConsumePartitions(allPartitionsAtStart(out, partitions)), kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		var recs []*kgo.Record
		_, err = pollUntil(ctx, cl, label, func(rs []*kgo.Record) bool {
			recs = recs[:0]
			seen := map[int32]bool{}
			for _, r := range rs {
				if _, ok := header(r, "sentinel"); ok {
					seen[r.Partition] = true
				} else {
					recs = append(recs, r)
				}
			}
			return len(seen) == partitions
		})
		return recs, err
	}

	rc, err := readAll(kgo.ReadCommitted(), "read_committed")
	if err != nil {
		return err
	}
	got := map[string]int{}
	for _, r := range rc {
		if rd, _ := header(r, "round"); rd == strconv.Itoa(abortedRound) {
			return fmt.Errorf("read_committed saw %q from aborted round %d at %d/%d", r.Value, abortedRound, r.Partition, r.Offset)
		}
		got[string(r.Value)]++
	}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("out:in-%d", i)
		if got[v] != 1 {
			return fmt.Errorf("read_committed output has %q %d times, want once (%d records in all)", v, got[v], len(rc))
		}
	}
	if len(rc) != n {
		return fmt.Errorf("read_committed output has %d records, want %d", len(rc), n)
	}

	ru, err := readAll(kgo.ReadUncommitted(), "read_uncommitted")
	if err != nil {
		return err
	}
	aborted := 0
	for _, r := range ru {
		if rd, _ := header(r, "round"); rd == strconv.Itoa(abortedRound) {
			aborted++
		}
	}
	if aborted != abortedCount {
		return fmt.Errorf("read_uncommitted saw %d records of aborted round %d, want %d", aborted, abortedRound, abortedCount)
	}

	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("OffsetFetch: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		return fmt.Errorf("ListOffsets: %w", err)
	}
	for p := int32(0); p < partitions; p++ {
		o, ok := offs.Lookup(in, p)
		e, _ := ends.Lookup(in, p)
		if !ok || o.Err != nil || o.At != e.Offset {
			return fmt.Errorf("group offset of %s/%d: %+v (found %v), want the end offset %d", in, p, o, ok, e.Offset)
		}
	}
	return nil
}
