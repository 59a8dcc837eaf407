package main

import (
	"testing"
	"time"
)

// A small history builder: times in ms.
type hb struct{ h *History }

func newHB() *hb { return &hb{h: NewHistory()} }

func (b *hb) ack(p int32, v string, off int64, inv, comp int64) *hb {
	b.h.Add(Op{Kind: OpAppend, Part: p, Value: v, Offset: off, Ok: true, Invoke: inv * 1e6, Complete: comp * 1e6})
	return b
}

func (b *hb) pending(p int32, v string, inv int64) *hb {
	b.h.Add(Op{Kind: OpAppend, Part: p, Value: v, Offset: -1, Invoke: inv * 1e6, Complete: (inv + 1) * 1e6, Err: "timeout"})
	return b
}

func (b *hb) read(p int32, from int64, inv, comp int64, final bool, recs ...Rec) *hb {
	b.h.Add(Op{Kind: OpRead, Client: 9, Part: p, From: from, Recs: recs, Invoke: inv * 1e6, Complete: comp * 1e6, Final: final, Offset: -1})
	return b
}

func (b *hb) check(t *testing.T) *Report {
	t.Helper()
	return Check(b.h, "", "test", 10*time.Second)
}

func want(t *testing.T, r *Report, kind string, n int) {
	t.Helper()
	if got := r.CountOf(kind); (n < 0 && got == 0) || (n >= 0 && got != n) {
		t.Errorf("%s: got %d, want %d; anomalies %v", kind, got, n, r.Anomalies)
	}
}

func TestCleanHistoryPasses(t *testing.T) {
	r := newHB().
		ack(0, "a", 0, 0, 5).ack(0, "b", 1, 1, 6).pending(0, "c", 7).
		read(0, 0, 3, 8, false, Rec{0, "a"}, Rec{1, "b"}).
		ack(0, "d", 3, 10, 12). // offset 2: a control record
		read(0, 0, 20, 30, true, Rec{0, "a"}, Rec{1, "b"}, Rec{3, "d"}).
		check(t)
	if len(r.Anomalies) != 0 {
		t.Fatalf("anomalies in a clean history: %v", r.Anomalies)
	}
}

func TestLostAcknowledgedWriteIsFound(t *testing.T) {
	r := newHB().
		ack(0, "a", 0, 0, 5).ack(0, "b", 1, 6, 7).
		// A new leader without "b": the next append takes its offset.
		ack(0, "c", 1, 10, 12).
		read(0, 0, 20, 30, true, Rec{0, "a"}, Rec{1, "c"}).
		check(t)
	want(t, r, AnLost, 1)
	want(t, r, AnDupOffset, 1)
	want(t, r, AnTwoValues, 1)
	want(t, r, AnNonLin, 1)
}

func TestSkippedOffsetIsALostWrite(t *testing.T) {
	r := newHB().
		ack(0, "a", 0, 0, 5).ack(0, "b", 1, 6, 7).ack(0, "c", 2, 8, 9).
		read(0, 0, 20, 30, false, Rec{0, "a"}, Rec{2, "c"}).
		check(t)
	want(t, r, AnLost, 1)
}

func TestOffsetGoingBackIsNotLinearizable(t *testing.T) {
	// Both acknowledged and read, but "y" was invoked after "x" had its
	// answer and still got a lower offset.
	r := newHB().
		ack(0, "x", 5, 0, 1).ack(0, "y", 4, 2, 3).
		read(0, 4, 10, 11, true, Rec{4, "y"}, Rec{5, "x"}).
		check(t)
	want(t, r, AnNonLin, 1)
}

func TestReadBeyondTheLogIsNotLinearizable(t *testing.T) {
	// A read that ended before the record at its last offset was written.
	r := newHB().
		pending(0, "a", 0).
		read(0, 0, 1, 2, false, Rec{0, "a"}).
		ack(0, "b", 1, 5, 6).ack(0, "c", 2, 7, 8).
		read(0, 1, 3, 4, false, Rec{1, "b"}, Rec{2, "c"}).
		check(t)
	want(t, r, AnNonLin, 1)
}

func TestTransactions(t *testing.T) {
	b := newHB()
	b.h.Add(
		Op{Kind: OpTxnAppend, Part: 0, Value: "t1-0", Offset: 0, Ok: true, Txn: 1, Invoke: 0, Complete: 1e6},
		Op{Kind: OpTxnAppend, Part: 1, Value: "t1-1", Offset: 0, Ok: true, Txn: 1, Invoke: 1e6, Complete: 2e6},
		Op{Kind: OpTxnAppend, Part: 0, Value: "t2-0", Offset: 2, Ok: true, Txn: 2, Invoke: 3e6, Complete: 4e6},
		Op{Kind: OpTxnAppend, Part: 0, Value: "t3-0", Offset: 4, Ok: true, Txn: 3, Invoke: 5e6, Complete: 6e6},
		Op{Kind: OpTxnAppend, Part: 1, Value: "t3-1", Offset: 2, Ok: true, Txn: 3, Invoke: 6e6, Complete: 7e6},
	)
	b.h.AddTxn(Txn{ID: 1, Values: []string{"t1-0", "t1-1"}, Outcome: TxnCommitted})
	b.h.AddTxn(Txn{ID: 2, Values: []string{"t2-0"}, Outcome: TxnAborted})
	b.h.AddTxn(Txn{ID: 3, Values: []string{"t3-0", "t3-1"}, Outcome: TxnUnknown})
	// Committed t1 is seen only in partition 0, aborted t2 is seen, and
	// unknown t3 is seen in partition 0 only.
	b.read(0, 0, 10, 11, true, Rec{0, "t1-0"}, Rec{2, "t2-0"}, Rec{4, "t3-0"})
	b.read(1, 0, 10, 11, true)
	r := b.check(t)
	want(t, r, AnAborted, 1)
	want(t, r, AnTorn, 2)
}

func TestCommittedOffsetsRegister(t *testing.T) {
	b := newHB()
	b.h.Add(
		Op{Kind: OpCommit, Part: 0, Offset: 10, Ok: true, Invoke: 0, Complete: 1e6},
		Op{Kind: OpCommit, Part: 0, Offset: 20, Ok: true, Invoke: 2e6, Complete: 3e6},
		Op{Kind: OpFetchCommitted, Part: 0, Offset: 20, Ok: true, Invoke: 4e6, Complete: 5e6},
		// A stale fetch during the run is allowed (a cut-off coordinator).
		Op{Kind: OpFetchCommitted, Part: 0, Offset: 10, Ok: true, Invoke: 4e6, Complete: 5e6},
	)
	if r := b.check(t); len(r.Anomalies) != 0 {
		t.Fatalf("a clean register history: %v", r.Anomalies)
	}
	// The final fetch, after the faults, returns the older one: a lost
	// commit.
	b.h.Add(Op{Kind: OpFetchCommitted, Part: 0, Offset: 10, Ok: true, Invoke: 6e6, Complete: 7e6, Final: true})
	r := b.check(t)
	want(t, r, AnNonLinOff, 1)
	if r.Counts["stale committed-offset fetches"] != 1 {
		t.Errorf("stale fetches: %d", r.Counts["stale committed-offset fetches"])
	}
	// An offset nobody committed.
	b.h.Add(Op{Kind: OpFetchCommitted, Part: 0, Offset: 15, Ok: true, Invoke: 8e6, Complete: 9e6})
	want(t, b.check(t), AnPhantomOff, 1)
}
