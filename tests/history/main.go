// Command history-check records the operations of concurrent Kafka clients
// against a three-node cluster (Fjord or Apache Kafka 4.4) while it injects
// faults, then checks the history: porcupine per partition against a model
// of a Kafka partition log and per group partition against a register, and
// the per-record and per-transaction rules (see check.go).
//
//	history-check --broker fjord --seed 1 --duration 5m --faults kill,pause,partition,slow,diskfull
//	history-check --broker fjord --scenario early-ack
//
// Prints operations checked, faults injected and anomalies found; exits 1 on
// any anomaly, 2 when the run itself could not be carried out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type config struct {
	broker, faults, scenario, fjordBin, peer, work, out string
	seed                                                int64
	duration, checkTimeout                              time.Duration
	parts                                               int
	producers, consumers, groupMembers                  int
	keep                                                bool
	tmpfsSize, recheck                                  string
}

func main() {
	var c config
	flag.StringVar(&c.broker, "broker", "fjord", "fjord or kafka")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the fault schedule and the clients' choices")
	flag.DurationVar(&c.duration, "duration", 5*time.Minute, "how long clients run under faults")
	flag.StringVar(&c.faults, "faults", "kill,pause,partition,slow,diskfull", "fault mix (comma-separated: "+strings.Join(FaultKinds, ",")+"; empty: none)")
	flag.StringVar(&c.scenario, "scenario", "", "instead of the mixed run: early-ack (cut both followers off, burst of acks=all, kill -9 the leader)")
	flag.StringVar(&c.fjordBin, "fjord-bin", "target/release/fjord", "the fjord binary")
	flag.StringVar(&c.peer, "peer", "scripts/peers/kafka", "the Apache Kafka peer script")
	flag.StringVar(&c.work, "work", "", "work directory (default: a new one under /tmp, removed after a clean run)")
	flag.StringVar(&c.out, "out", "target/history", "where the history JSON and porcupine's visualizations go")
	flag.IntVar(&c.parts, "partitions", 3, "partitions of the topic")
	flag.IntVar(&c.producers, "producers", 3, "idempotent producers")
	flag.IntVar(&c.consumers, "consumers", 2, "read_committed consumers assigned every partition")
	flag.IntVar(&c.groupMembers, "group-members", 2, "members of the consumer group that commits offsets")
	flag.DurationVar(&c.checkTimeout, "check-timeout", 5*time.Minute, "porcupine's time limit per history (past it: unknown)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory (node logs and data)")
	flag.StringVar(&c.tmpfsSize, "tmpfs-size", "256m", "size of the tmpfs data dir of the disk-full node")
	flag.StringVar(&c.recheck, "recheck", "", "check a history JSON written by an earlier run instead of running")
	flag.Parse()
	if c.recheck != "" {
		os.Exit(recheck(c))
	}
	os.Exit(run(c))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(c config) int {
	if c.broker != "fjord" && c.broker != "kafka" {
		fmt.Fprintln(os.Stderr, "--broker must be fjord or kafka")
		return 2
	}
	var mix []string
	for _, f := range strings.Split(c.faults, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		known := false
		for _, k := range FaultKinds {
			known = known || k == f
		}
		if !known {
			fmt.Fprintf(os.Stderr, "unknown fault %q (known: %s)\n", f, strings.Join(FaultKinds, ","))
			return 2
		}
		mix = append(mix, f)
	}
	if c.scenario != "" && c.scenario != "early-ack" {
		fmt.Fprintf(os.Stderr, "unknown scenario %q\n", c.scenario)
		return 2
	}
	for _, p := range []*string{&c.fjordBin, &c.peer, &c.out} {
		if a, err := filepath.Abs(*p); err == nil {
			*p = a
		}
	}
	work := c.work
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "fjord-history-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	tmpfsNode := 0
	if c.scenario == "" && contains(mix, "diskfull") {
		tmpfsNode = 3
	}
	cl, err := NewCluster(c.broker, work, c.fjordBin, c.peer, tmpfsNode, c.tmpfsSize)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		return 2
	}
	stopped := false
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { cl.Stop(); stopped = true }) }
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		logf("interrupted: stopping the cluster")
		stop()
		os.Exit(2)
	}()
	h := NewHistory()
	if cl.TmpfsNote != "" {
		h.Skipped["diskfull"] = cl.TmpfsNote
	}
	logf("starting a 3-node %s cluster in %s", c.broker, work)
	if err := cl.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 2
	}
	kcl, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.DialTimeout(2*time.Second), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer kcl.Close()
	topic := "history"
	parts := c.parts
	if c.scenario == "early-ack" {
		topic, parts = "early-ack", 1
	}
	a := &Admin{adm: kadm.NewClient(kcl), kcl: kcl, topic: topic}
	if ok, why := a.WaitHealthy(180 * time.Second); !ok {
		fmt.Fprintln(os.Stderr, "the cluster did not come up:", why)
		return 2
	}
	if err := createTopic(a, topic, parts); err != nil {
		fmt.Fprintln(os.Stderr, "create topic:", err)
		return 2
	}
	w := &Workload{H: h, Bootstrap: cl.Bootstrap(), Topic: topic, Parts: int32(parts), Group: "history-group", Seed: c.seed, Think: 20 * time.Millisecond}
	started := time.Now()
	if c.scenario == "early-ack" {
		if err := earlyAck(cl, a, w, h); err != nil {
			fmt.Fprintln(os.Stderr, "scenario:", err)
			return 2
		}
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		goRun := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
		id := 1
		for i := 0; i < c.producers; i++ {
			n := id
			goRun(func() { w.Producer(ctx, n) })
			id++
		}
		n := id
		goRun(func() { w.TxnProducer(ctx, n) })
		id++
		for i := 0; i < c.consumers; i++ {
			n := id
			goRun(func() { w.Consumer(ctx, n, "") })
			id++
		}
		for i := 0; i < c.groupMembers; i++ {
			n := id
			goRun(func() { w.Consumer(ctx, n, w.Group) })
			id++
		}
		if c.groupMembers > 0 {
			n := id
			goRun(func() { w.OffsetObserver(ctx, n, w.Group) })
			id++
		}
		f := &Faulter{C: cl, H: h, A: a, Topic: topic, Mix: mix, R: rand.New(rand.NewSource(c.seed)), Log: func(s string) { logf("%s", s) }}
		f.Run(started.Add(c.duration))
		for time.Now().Before(started.Add(c.duration)) {
			time.Sleep(200 * time.Millisecond)
		}
		logf("stopping the clients")
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			h.Note("some clients did not stop within 90 s")
		}
		f.Recover()
		logf("final read")
		if err := w.FinalRead(a.adm, id, 150*time.Second); err != nil {
			h.Note("final read: " + err.Error())
			logf("final read: %v", err)
		}
		if c.groupMembers > 0 {
			if err := w.FinalOffsets(a.adm, id+1, 60*time.Second); err != nil {
				h.Note("final read: " + err.Error())
				logf("final offsets: %v", err)
			}
		}
	}
	elapsed := time.Since(started)
	stop()
	os.MkdirAll(c.out, 0o755)
	prefix := fmt.Sprintf("%s-seed%d", c.broker, c.seed)
	if c.scenario != "" {
		prefix = fmt.Sprintf("%s-%s", c.broker, c.scenario)
	}
	histPath := filepath.Join(c.out, prefix+"-history.json")
	h = h.Snapshot()
	if err := h.Save(histPath); err != nil {
		logf("saving the history: %v", err)
	}
	logf("checking %d operations", len(h.Ops))
	checkStart := time.Now()
	rep := Check(h, c.out, prefix, c.checkTimeout)
	code := summary(c, h, rep, elapsed, time.Since(checkStart), histPath)
	if code == 0 && len(h.Notes) == 0 && c.work == "" && !c.keep && stopped {
		os.RemoveAll(work)
	} else {
		fmt.Printf("work directory kept: %s\n", work)
	}
	return code
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func createTopic(a *Admin, topic string, parts int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	minISR := "2"
	resp, err := a.adm.CreateTopic(ctx, int32(parts), 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil {
		return resp.Err
	}
	if ok, why := a.WaitHealthy(60 * time.Second); !ok {
		return fmt.Errorf("no full ISR: %s", why)
	}
	return nil
}

func summary(c config, h *History, rep *Report, elapsed, checking time.Duration, histPath string) int {
	name := map[string]string{"fjord": "Fjord", "kafka": "Apache Kafka 4.4"}[c.broker]
	if c.recheck != "" {
		name = "a saved history"
	}
	what := fmt.Sprintf("seed %d, %v of faults %q", c.seed, c.duration, c.faults)
	if c.scenario != "" {
		what = "scenario " + c.scenario
	}
	fmt.Printf("== history check: %s, 3 nodes, %s (ran %.0f s, checked in %.1f s)\n", name, what, elapsed.Seconds(), checking.Seconds())
	k := rep.Counts
	total := k["append"] + k["txn-append"] + k["read"] + k["commit"] + k["fetch-committed"]
	fmt.Printf("operations checked: %d\n", total)
	fmt.Printf("  idempotent appends %d (acknowledged %d), transactional appends %d (acknowledged %d)\n", k["append"], k["append acknowledged"], k["txn-append"], k["txn-append acknowledged"])
	fmt.Printf("  reads %d (%d records), offset commits %d, committed-offset fetches %d\n", k["read"], k["records read"], k["commit"], k["fetch-committed"])
	fmt.Printf("  transactions %d: committed %d, aborted %d, outcome unknown %d\n", len(h.Txns), k["txn committed"], k["txn aborted"], k["txn unknown"])
	fmt.Printf("  stale committed-offset fetches during faults (allowed): %d\n", k["stale committed-offset fetches"])
	fmt.Printf("faults injected: %d", len(h.Faults))
	if len(h.Faults) > 0 {
		fmt.Printf(" (%s)", Tally(h.Faults))
	}
	fmt.Println()
	for kind, why := range h.Skipped {
		fmt.Printf("  %s: NOT injected: %s\n", kind, why)
	}
	slow := 0
	for _, n := range h.Notes {
		if strings.HasPrefix(n, "not recovered") {
			slow++
		}
	}
	fmt.Printf("recoveries not complete within the wait: %d\n", slow)
	shownNotes := map[string]int{}
	for _, n := range h.Notes {
		if shownNotes[n]++; shownNotes[n] == 1 {
			fmt.Printf("note: %s\n", n)
		}
	}
	fmt.Println("porcupine:")
	unknown := 0
	for _, v := range rep.Verdicts {
		verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable", porcupine.Unknown: "unknown (time limit)"}[v.Result]
		if v.Result == porcupine.Unknown {
			unknown++
		}
		extra := ""
		if v.HTML != "" {
			extra = " -> " + v.HTML
		}
		fmt.Printf("  %s: %s (%d operations)%s\n", v.Name, verdict, v.Ops, extra)
	}
	fmt.Printf("anomalies: %d\n", len(rep.Anomalies))
	for _, kind := range AnomalyKinds {
		fmt.Printf("  %s: %d\n", kind, rep.CountOf(kind))
	}
	shown := map[string]int{}
	for _, an := range rep.Anomalies {
		if shown[an.Kind] < 5 {
			fmt.Printf("  - %s: %s\n", an.Kind, an.Detail)
		}
		shown[an.Kind]++
	}
	fmt.Printf("history: %s\n", histPath)
	incomplete := false
	for _, n := range h.Notes {
		incomplete = incomplete || strings.HasPrefix(n, "final read")
	}
	switch {
	case len(rep.Anomalies) > 0:
		fmt.Println("result: FAIL (anomalies)")
		return 1
	case incomplete:
		fmt.Println("result: INCOMPLETE (the final read did not finish)")
		return 2
	default:
		if unknown > 0 {
			fmt.Printf("result: PASS (%d histories unknown to porcupine within its time limit)\n", unknown)
		} else {
			fmt.Println("result: PASS")
		}
		return 0
	}
}

// recheck runs the checks again over a saved history.
func recheck(c config) int {
	b, err := os.ReadFile(c.recheck)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h := NewHistory()
	if err := json.Unmarshal(b, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := time.Now()
	rep := Check(h, c.out, strings.TrimSuffix(filepath.Base(c.recheck), "-history.json")+"-recheck", c.checkTimeout)
	c.scenario = "recheck of " + c.recheck
	return summary(c, h, rep, 0, time.Since(start), c.recheck)
}
