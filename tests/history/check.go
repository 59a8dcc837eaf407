package main

// The checks over a recorded History:
//
//   - porcupine, per partition, against a model of a Kafka partition log:
//     an append takes the next offset (the gaps are transaction markers,
//     which no client appends), a read returns only offsets the log
//     already holds;
//   - porcupine, per group partition, against a register: a fetch of the
//     committed offset returns the last commit;
//   - what holds whatever the order: no offset holds two values, no value
//     sits at two offsets, no read skips an offset that holds an
//     acknowledged or seen record, every acknowledged record is in the
//     final read at its offset, aborted transactions are never read, and a
//     transaction is visible whole or not at all.
//
// An operation whose outcome is unknown (timed out, connection lost) is
// pending: porcupine may place its effect anywhere after its invocation,
// or nowhere. An unknown append that a read saw is known to have happened
// before that read ended; one nobody saw constrains nothing and is left out.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Anomaly kinds, as printed.
const (
	AnLost       = "lost acknowledged write"
	AnDupOffset  = "duplicated offset"
	AnTwoValues  = "offset with two values"
	AnDupRecord  = "record at two offsets"
	AnAborted    = "aborted read"
	AnTorn       = "torn transaction"
	AnPhantom    = "record nobody wrote"
	AnNonLin     = "non-linearizable partition history"
	AnNonLinOff  = "lost offset commit"
	AnPhantomOff = "committed offset nobody committed"
)

// AnomalyKinds in print order.
var AnomalyKinds = []string{AnLost, AnDupOffset, AnTwoValues, AnDupRecord, AnAborted, AnTorn, AnPhantom, AnNonLin, AnNonLinOff, AnPhantomOff}

// Anomaly is one finding.
type Anomaly struct {
	Kind   string
	Detail string
}

// Verdict is porcupine's answer for one history.
type Verdict struct {
	Name   string
	Ops    int
	Result porcupine.CheckResult
	HTML   string
}

// Report is everything the checks found.
type Report struct {
	Anomalies []Anomaly
	Verdicts  []Verdict
	Counts    map[string]int
}

func (r *Report) add(kind, format string, args ...any) {
	r.Anomalies = append(r.Anomalies, Anomaly{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// CountOf gives the number of anomalies of one kind.
func (r *Report) CountOf(kind string) int {
	n := 0
	for _, a := range r.Anomalies {
		if a.Kind == kind {
			n++
		}
	}
	return n
}

type key struct {
	p int32
	o int64
}

// logInput is a porcupine input on a partition log.
type logInput struct {
	read  bool
	value string
	last  int64 // read: the highest offset it returned
}

// Check runs every check; HTML visualizations of failed partitions go into
// outDir.
func Check(h *History, outDir, prefix string, timeout time.Duration) *Report {
	rep := &Report{Counts: map[string]int{}}
	ops := h.Ops
	var end int64
	for _, op := range ops {
		end = max(end, op.Complete)
	}
	txnOf := map[string]*Txn{}
	for i := range h.Txns {
		for _, v := range h.Txns[i].Values {
			txnOf[v] = &h.Txns[i]
		}
	}
	// writer of each value (the op index), and what was seen where.
	writer := map[string]int{}
	valuesAt := map[key]map[string]string{} // offset → value → first source
	offsetsOf := map[string]map[int64]bool{}
	note := func(p int32, o int64, v, src string) {
		k := key{p, o}
		if valuesAt[k] == nil {
			valuesAt[k] = map[string]string{}
		}
		if _, ok := valuesAt[k][v]; !ok {
			valuesAt[k][v] = src
		}
		if offsetsOf[v] == nil {
			offsetsOf[v] = map[int64]bool{}
		}
		offsetsOf[v][o] = true
	}
	ackAt := map[key][]int{}
	firstSeen := map[string]int64{} // value → earliest completion of a read that returned it
	holes := map[key][]int{}        // offset → reads that skipped it
	final := map[key]string{}
	for i, op := range ops {
		rep.Counts[string(op.Kind)]++
		switch op.Kind {
		case OpAppend, OpTxnAppend:
			writer[op.Value] = i
			if op.Ok {
				rep.Counts[string(op.Kind)+" acknowledged"]++
				note(op.Part, op.Offset, op.Value, fmt.Sprintf("the ack of %s", op.Value))
				ackAt[key{op.Part, op.Offset}] = append(ackAt[key{op.Part, op.Offset}], i)
			}
		case OpRead:
			rep.Counts["records read"] += len(op.Recs)
			next := op.From
			for _, r := range op.Recs {
				note(op.Part, r.Offset, r.Value, fmt.Sprintf("a read by client %d at %s", op.Client, ms(op.Complete)))
				if t, ok := firstSeen[r.Value]; !ok || op.Complete < t {
					firstSeen[r.Value] = op.Complete
				}
				if next >= 0 {
					for o := next; o < r.Offset; o++ {
						holes[key{op.Part, o}] = append(holes[key{op.Part, o}], i)
					}
				}
				next = r.Offset + 1
				if op.Final {
					final[key{op.Part, r.Offset}] = r.Value
				}
			}
		}
	}
	// No offset holds two values; two acks never share an offset.
	for k, vs := range valuesAt {
		if len(vs) > 1 {
			var d []string
			for v, src := range vs {
				d = append(d, fmt.Sprintf("%q (%s)", v, src))
			}
			sort.Strings(d)
			rep.add(AnTwoValues, "partition %d offset %d: %s", k.p, k.o, strings.Join(d, ", "))
		}
		if acks := ackAt[k]; len(acks) > 1 {
			var d []string
			for _, i := range acks {
				d = append(d, fmt.Sprintf("%q acked at %s", ops[i].Value, ms(ops[i].Complete)))
			}
			rep.add(AnDupOffset, "partition %d offset %d given to %s", k.p, k.o, strings.Join(d, ", "))
		}
	}
	// No value at two offsets; every value read was written.
	for v, offs := range offsetsOf {
		if len(offs) > 1 {
			var os []int64
			for o := range offs {
				os = append(os, o)
			}
			sort.Slice(os, func(i, j int) bool { return os[i] < os[j] })
			rep.add(AnDupRecord, "%q at offsets %v", v, os)
		}
		if _, ok := writer[v]; !ok {
			rep.add(AnPhantom, "%q read at offsets %v", v, offs)
		}
	}
	// A read skips only offsets that hold no committed record.
	lost := map[string]bool{}
	for k, rs := range holes {
		for v, src := range valuesAt[k] {
			t := txnOf[v]
			if t != nil && t.Outcome != TxnCommitted {
				continue // judged per transaction below
			}
			if !lost[v] {
				lost[v] = true
				r := ops[rs[0]]
				rep.add(AnLost, "partition %d offset %d: %q (%s) skipped by a read by client %d from %d at %s", k.p, k.o, v, src, r.Client, r.From, ms(r.Complete))
			}
		}
	}
	// Every acknowledged idempotent record is in the final read, at its offset.
	haveFinal := len(final) > 0
	for _, op := range ops {
		if op.Kind != OpAppend || !op.Ok || !haveFinal || lost[op.Value] {
			continue
		}
		if got, ok := final[key{op.Part, op.Offset}]; !ok || got != op.Value {
			lost[op.Value] = true
			rep.add(AnLost, "partition %d offset %d: %q acknowledged at %s, the final read has %q there", op.Part, op.Offset, op.Value, ms(op.Complete), got)
		}
	}
	// Transactions: aborted ones never read, the others whole or not at all.
	for _, t := range h.Txns {
		rep.Counts["txn "+string(t.Outcome)]++
		var visible, hidden []string
		for _, v := range t.Values {
			if _, seen := firstSeen[v]; seen {
				if t.Outcome == TxnAborted {
					rep.add(AnAborted, "%q of aborted transaction %d read (offsets %v)", v, t.ID, keys(offsetsOf[v]))
				}
			}
			inFinal := false
			if op, ok := writer[v]; ok {
				for o := range offsetsOf[v] {
					if final[key{ops[op].Part, o}] == v {
						inFinal = true
					}
				}
			}
			if inFinal {
				visible = append(visible, v)
			} else {
				hidden = append(hidden, v)
			}
		}
		if !haveFinal || t.Outcome == TxnAborted {
			continue
		}
		switch {
		case len(visible) > 0 && len(hidden) > 0:
			rep.add(AnTorn, "transaction %d (%s): %v visible, %v not", t.ID, t.Outcome, visible, hidden)
		case t.Outcome == TxnCommitted && len(visible) == 0:
			rep.add(AnLost, "committed transaction %d: none of %v in the final read", t.ID, t.Values)
		}
	}
	checkLogs(rep, ops, firstSeen, outDir, prefix, timeout)
	checkOffsets(rep, ops, end, outDir, prefix, timeout)
	return rep
}

func keys(m map[int64]bool) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func ms(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// logModel is a Kafka partition log. offs lists, in order, the offsets of
// every append in the partition's history (acknowledged, or seen by a read):
// the log hands offsets out in that order, so an append is linearized only
// right after every append below its offset (the next offset, skipping only
// offsets no client appended: transaction markers, and appends nobody saw),
// and a read only once the append at its last offset is. The state is how
// many appends are linearized. An offset given twice appears twice in offs
// and makes the history illegal.
func logModel(offs []int64) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return 0 },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			k := state.(int)
			in := input.(logInput)
			if in.read {
				return k > 0 && offs[k-1] >= in.last, k
			}
			o := output.(int64)
			// A second append at one offset never fits: no offset
			// holds two records.
			return k < len(offs) && offs[k] == o && (k == 0 || offs[k-1] != o), k + 1
		},
		DescribeOperation: func(input, output interface{}) string {
			in := input.(logInput)
			if in.read {
				return fmt.Sprintf("read ..%d", in.last)
			}
			return fmt.Sprintf("append %s -> %d", in.value, output.(int64))
		},
		DescribeState: func(state interface{}) string {
			if k := state.(int); k > 0 {
				return fmt.Sprintf("log to %d", offs[k-1])
			}
			return "empty log"
		},
	}
}

func checkLogs(rep *Report, ops []Op, firstSeen map[string]int64, outDir, prefix string, timeout time.Duration) {
	// The offset each value was seen at (reads), for unknown appends.
	seenAt := map[string]int64{}
	for _, op := range ops {
		if op.Kind == OpRead {
			for _, r := range op.Recs {
				seenAt[r.Value] = r.Offset
			}
		}
	}
	byPart := map[int32][]porcupine.Operation{}
	for _, op := range ops {
		switch op.Kind {
		case OpAppend, OpTxnAppend:
			if op.Ok {
				byPart[op.Part] = append(byPart[op.Part], porcupine.Operation{ClientId: op.Client, Input: logInput{value: op.Value}, Call: op.Invoke, Output: op.Offset, Return: op.Complete})
			} else if o, ok := seenAt[op.Value]; ok {
				ret := firstSeen[op.Value]
				if ret < op.Invoke {
					ret = op.Invoke // read before written: porcupine rejects it
				}
				byPart[op.Part] = append(byPart[op.Part], porcupine.Operation{ClientId: op.Client, Input: logInput{value: op.Value}, Call: op.Invoke, Output: o, Return: ret})
			}
		case OpRead:
			if len(op.Recs) == 0 {
				continue
			}
			byPart[op.Part] = append(byPart[op.Part], porcupine.Operation{ClientId: op.Client, Input: logInput{read: true, last: op.Recs[len(op.Recs)-1].Offset}, Call: op.Invoke, Return: op.Complete})
		}
	}
	var parts []int32
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		hist := byPart[p]
		clientIDs(hist)
		var offs []int64
		for _, op := range hist {
			if !op.Input.(logInput).read {
				offs = append(offs, op.Output.(int64))
			}
		}
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		model := logModel(offs)
		res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
		v := Verdict{Name: fmt.Sprintf("partition %d", p), Ops: len(hist), Result: res}
		if res == porcupine.Illegal {
			v.HTML = visualize(model, info, outDir, fmt.Sprintf("%s-partition-%d.html", prefix, p))
			rep.add(AnNonLin, "partition %d (%d operations): no linearization; %s", p, len(hist), v.HTML)
		}
		rep.Verdicts = append(rep.Verdicts, v)
	}
}

// clientIDs renumbers client ids densely from 0 (porcupine's visualization
// wants that).
func clientIDs(hist []porcupine.Operation) {
	ids := map[int]int{}
	for i := range hist {
		id, ok := ids[hist[i].ClientId]
		if !ok {
			id = len(ids)
			ids[hist[i].ClientId] = id
		}
		hist[i].ClientId = id
	}
}

func visualize(m porcupine.Model, info porcupine.LinearizationInfo, outDir, name string) string {
	if outDir == "" {
		return ""
	}
	os.MkdirAll(outDir, 0o755)
	path := filepath.Join(outDir, name)
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return "visualization failed: " + err.Error()
	}
	return path
}

// offInput is a porcupine input on a group's committed offset.
type offInput struct {
	commit bool
	offset int64
}

var offsetModel = porcupine.Model{
	Init: func() interface{} { return int64(-1) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		in := input.(offInput)
		if in.commit {
			return true, in.offset
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(offInput)
		if in.commit {
			return fmt.Sprintf("commit %d", in.offset)
		}
		return fmt.Sprintf("fetch -> %d", output.(int64))
	},
}

func checkOffsets(rep *Report, ops []Op, end int64, outDir, prefix string, timeout time.Duration) {
	// Fetches during the run may be stale: a coordinator cut off from the
	// others still answers OffsetFetch from its cache after another took
	// over (Apache Kafka does; Kafka promises no more). What must hold: a
	// fetch returns an offset some commit wrote, and once the faults are
	// healed, the fetch of the final committed offsets returns the last
	// commit (porcupine, a register over every commit and the final fetch).
	firstCommit := map[key]int64{}
	for _, op := range ops {
		if op.Kind == OpCommit {
			k := key{op.Part, op.Offset}
			if t, ok := firstCommit[k]; !ok || op.Invoke < t {
				firstCommit[k] = op.Invoke
			}
		}
	}
	for _, op := range ops {
		if op.Kind != OpFetchCommitted {
			continue
		}
		if t, ok := firstCommit[key{op.Part, op.Offset}]; !ok || t > op.Complete {
			rep.add(AnPhantomOff, "partition %d: a fetch at %s returned offset %d, which no commit invoked before it wrote", op.Part, ms(op.Complete), op.Offset)
		}
	}
	rep.Counts["stale committed-offset fetches"] = staleFetches(ops)
	fetched := map[key]int64{} // (partition, value) → earliest completion of a final fetch returning it
	commitsOf := map[key]int{}
	for _, op := range ops {
		switch op.Kind {
		case OpFetchCommitted:
			if !op.Final {
				continue
			}
			k := key{op.Part, op.Offset}
			if t, ok := fetched[k]; !ok || op.Complete < t {
				fetched[k] = op.Complete
			}
		case OpCommit:
			commitsOf[key{op.Part, op.Offset}]++
		}
	}
	byPart := map[int32][]porcupine.Operation{}
	for _, op := range ops {
		switch op.Kind {
		case OpCommit:
			k := key{op.Part, op.Offset}
			ret := op.Complete
			if !op.Ok {
				t, seen := fetched[k]
				if !seen {
					continue // never took visible effect
				}
				ret = math.MaxInt64
				if commitsOf[k] == 1 && t >= op.Invoke {
					ret = t
				}
			}
			byPart[op.Part] = append(byPart[op.Part], porcupine.Operation{ClientId: op.Client, Input: offInput{commit: true, offset: op.Offset}, Call: op.Invoke, Output: int64(0), Return: ret})
		case OpFetchCommitted:
			if !op.Final {
				continue
			}
			byPart[op.Part] = append(byPart[op.Part], porcupine.Operation{ClientId: op.Client, Input: offInput{}, Call: op.Invoke, Output: op.Offset, Return: op.Complete})
		}
	}
	var parts []int32
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		hist := byPart[p]
		for i := range hist {
			if hist[i].Return == math.MaxInt64 {
				hist[i].Return = end + 1
			}
		}
		clientIDs(hist)
		res, info := porcupine.CheckOperationsVerbose(offsetModel, hist, timeout)
		v := Verdict{Name: fmt.Sprintf("committed offset, partition %d", p), Ops: len(hist), Result: res}
		if res == porcupine.Illegal {
			v.HTML = visualize(offsetModel, info, outDir, fmt.Sprintf("%s-offsets-%d.html", prefix, p))
			rep.add(AnNonLinOff, "group offsets of partition %d (%d commits and final fetches): no linearization; %s", p, len(hist), v.HTML)
		}
		rep.Verdicts = append(rep.Verdicts, v)
	}
}

// staleFetches counts the fetches during the run that returned an offset
// which an acknowledged commit, invoked after every commit of that offset
// had returned, had replaced before the fetch began (not an anomaly: see
// checkOffsets).
func staleFetches(ops []Op) int {
	lastDone := map[key]int64{} // (partition, value) → latest completion of a commit of it
	var acked []Op
	for _, op := range ops {
		if op.Kind == OpCommit {
			k := key{op.Part, op.Offset}
			done := op.Complete
			if !op.Ok {
				done = math.MaxInt64
			}
			if done > lastDone[k] {
				lastDone[k] = done
			}
			if op.Ok {
				acked = append(acked, op)
			}
		}
	}
	sort.Slice(acked, func(i, j int) bool { return acked[i].Complete < acked[j].Complete })
	n := 0
	for _, f := range ops {
		if f.Kind != OpFetchCommitted || f.Final {
			continue
		}
		v := lastDone[key{f.Part, f.Offset}]
		i := sort.Search(len(acked), func(i int) bool { return acked[i].Complete >= f.Invoke })
		for _, c := range acked[:i] {
			if c.Part == f.Part && c.Offset != f.Offset && c.Invoke > v {
				n++
				break
			}
		}
	}
	return n
}
