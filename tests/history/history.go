package main

// The recorded history: every operation of every client with its
// invocation and completion times (nanoseconds since the run started).

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// OpKind is the kind of a recorded operation.
type OpKind string

const (
	// OpAppend is an idempotent acks=all produce of one record.
	OpAppend OpKind = "append"
	// OpTxnAppend is a produce of one record inside a transaction.
	OpTxnAppend OpKind = "txn-append"
	// OpRead is what one poll of a read_committed consumer returned for
	// one partition.
	OpRead OpKind = "read"
	// OpCommit is a group's offset commit for one partition.
	OpCommit OpKind = "commit"
	// OpFetchCommitted is a read of a group's committed offset.
	OpFetchCommitted OpKind = "fetch-committed"
)

// Rec is one record a read returned.
type Rec struct {
	Offset int64  `json:"o"`
	Value  string `json:"v"`
}

// Op is one operation.
type Op struct {
	Kind   OpKind `json:"kind"`
	Client int    `json:"client"`
	Part   int32  `json:"part"`
	// Value written (appends).
	Value string `json:"value,omitempty"`
	// Offset: the acknowledged offset (appends), the committed offset
	// (commit, fetch-committed); -1 unknown.
	Offset int64 `json:"offset"`
	// Ok: completed with a known result. Not ok: failed or timed out, so
	// the effect is unknown (the operation stays pending).
	Ok  bool   `json:"ok"`
	Err string `json:"err,omitempty"`
	// Invoke, Complete: ns since the start of the run.
	Invoke   int64 `json:"invoke"`
	Complete int64 `json:"complete"`
	// Txn is the transaction of a txn-append.
	Txn int `json:"txn,omitempty"`
	// From is where a read's range starts (-1: at its first record, the
	// position was not known, e.g. after a group assignment); Recs what
	// it returned, in offset order.
	From  int64 `json:"from,omitempty"`
	Recs  []Rec `json:"recs,omitempty"`
	Final bool  `json:"final,omitempty"`
}

// TxnOutcome is how a transaction ended as its producer saw it.
type TxnOutcome string

const (
	// TxnCommitted: EndTransaction(commit) succeeded.
	TxnCommitted TxnOutcome = "committed"
	// TxnAborted: the producer aborted it (whether or not the abort was
	// answered: an aborted transaction can never commit).
	TxnAborted TxnOutcome = "aborted"
	// TxnUnknown: the commit was sent and not answered.
	TxnUnknown TxnOutcome = "unknown"
)

// Txn is one transaction.
type Txn struct {
	ID      int        `json:"id"`
	Client  int        `json:"client"`
	Values  []string   `json:"values"`
	Outcome TxnOutcome `json:"outcome"`
	Invoke  int64      `json:"invoke"`
	End     int64      `json:"end"`
}

// FaultEvent is one injected fault.
type FaultEvent struct {
	Kind   string `json:"kind"`
	Node   int    `json:"node"`
	Detail string `json:"detail,omitempty"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// History collects everything; safe for concurrent use.
type History struct {
	start  time.Time
	mu     sync.Mutex
	Ops    []Op         `json:"ops"`
	Txns   []Txn        `json:"txns"`
	Faults []FaultEvent `json:"faults"`
	// Skipped faults: kind → why (e.g. no tmpfs).
	Skipped map[string]string `json:"skipped,omitempty"`
	Notes   []string          `json:"notes,omitempty"`
}

// NewHistory starts the clock.
func NewHistory() *History { return &History{start: time.Now(), Skipped: map[string]string{}} }

// Now is ns since the start.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records an operation.
func (h *History) Add(ops ...Op) {
	h.mu.Lock()
	h.Ops = append(h.Ops, ops...)
	h.mu.Unlock()
}

// Begin records an operation at its invocation (pending until Finish);
// gives its index.
func (h *History) Begin(op Op) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Ops = append(h.Ops, op)
	return len(h.Ops) - 1
}

// Finish replaces the operation Begin recorded with its outcome.
func (h *History) Finish(i int, op Op) {
	h.mu.Lock()
	h.Ops[i] = op
	h.mu.Unlock()
}

// Snapshot copies the history (operations still running stay pending).
func (h *History) Snapshot() *History {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &History{start: h.start, Skipped: map[string]string{}}
	c.Ops = append([]Op(nil), h.Ops...)
	c.Txns = append([]Txn(nil), h.Txns...)
	c.Faults = append([]FaultEvent(nil), h.Faults...)
	c.Notes = append([]string(nil), h.Notes...)
	for k, v := range h.Skipped {
		c.Skipped[k] = v
	}
	return c
}

// AddTxn records a transaction.
func (h *History) AddTxn(t Txn) {
	h.mu.Lock()
	h.Txns = append(h.Txns, t)
	h.mu.Unlock()
}

// AddFault records a fault.
func (h *History) AddFault(f FaultEvent) {
	h.mu.Lock()
	h.Faults = append(h.Faults, f)
	h.mu.Unlock()
}

// Note records a remark for the summary.
func (h *History) Note(s string) {
	h.mu.Lock()
	h.Notes = append(h.Notes, s)
	h.mu.Unlock()
}

// Save writes the history as JSON.
func (h *History) Save(path string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
