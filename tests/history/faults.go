package main

// The fault schedule: one fault at a time, chosen with the seed from the
// mix, held for a while, healed, then the cluster given time to recover
// (every broker back, every ISR full) before the next.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FaultKinds are the kinds --faults accepts.
var FaultKinds = []string{"kill", "pause", "partition", "slow", "diskfull"}

// Admin asks the cluster about itself (through the proxies, as source 0,
// so never faulted).
type Admin struct {
	adm   *kadm.Client
	kcl   *kgo.Client
	topic string
}

// PartState is one partition's leader, replicas and ISR.
type PartState struct {
	Leader   int
	Replicas []int
	ISR      []int
}

// Partitions gives topic's partitions.
func (a *Admin) Partitions(ctx context.Context, topic string) (map[int32]PartState, error) {
	md, err := a.adm.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	t, ok := md.Topics[topic]
	if !ok || t.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", topic, t.Err)
	}
	out := map[int32]PartState{}
	for p, d := range t.Partitions {
		out[p] = PartState{Leader: int(d.Leader), Replicas: ints(d.Replicas), ISR: ints(d.ISR)}
	}
	return out, nil
}

func ints(s []int32) []int {
	var o []int
	for _, v := range s {
		o = append(o, int(v))
	}
	return o
}

// Controller gives the active controller (the quorum's leader).
func (a *Admin) Controller(ctx context.Context) (int, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	p.Partition = 0
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, a.kcl)
	if err != nil {
		return 0, err
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, errors.New("DescribeQuorum: empty answer")
	}
	q := resp.Topics[0].Partitions[0]
	if q.ErrorCode != 0 || q.LeaderID < 0 {
		return 0, fmt.Errorf("DescribeQuorum: error %d leader %d", q.ErrorCode, q.LeaderID)
	}
	return int(q.LeaderID), nil
}

// Healthy says whether every broker is registered and every partition of
// every topic has a leader and its whole replica set in sync.
func (a *Admin) Healthy(ctx context.Context) (bool, string) {
	md, err := a.adm.Metadata(ctx)
	if err != nil {
		return false, err.Error()
	}
	if len(md.Brokers) != 3 {
		return false, fmt.Sprintf("%d brokers registered", len(md.Brokers))
	}
	for name, t := range md.Topics {
		if t.Err != nil {
			return false, fmt.Sprintf("%s: %v", name, t.Err)
		}
		for p, d := range t.Partitions {
			if d.Leader < 0 || len(d.ISR) != len(d.Replicas) {
				return false, fmt.Sprintf("%s-%d: leader %d isr %v replicas %v", name, p, d.Leader, d.ISR, d.Replicas)
			}
		}
	}
	return true, ""
}

// WaitHealthy polls Healthy until it holds or timeout passes.
func (a *Admin) WaitHealthy(timeout time.Duration) (bool, string) {
	deadline := time.Now().Add(timeout)
	why := ""
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ok, w := a.Healthy(ctx)
		cancel()
		if ok {
			return true, ""
		}
		why = w
		time.Sleep(300 * time.Millisecond)
	}
	return false, why
}

// Faulter injects faults from the mix.
type Faulter struct {
	C     *Cluster
	H     *History
	A     *Admin
	Topic string
	Mix   []string
	R     *rand.Rand
	Log   func(string)
	// RecoverWait bounds the wait for recovery after each fault (default
	// 60 s).
	RecoverWait time.Duration
}

func (f *Faulter) sleep(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(f.R.Int63n(int64(hi-lo)+1)))
}

func (f *Faulter) node() int { return 1 + f.R.Intn(3) }

// Run injects faults until the deadline, then heals everything.
func (f *Faulter) Run(until time.Time) {
	// Every kind once per round, in a seeded order, so that even a short
	// run sees the whole mix.
	var round []string
	for time.Now().Add(5 * time.Second).Before(until) {
		f.sleep(2*time.Second, 5*time.Second)
		if len(f.Mix) == 0 {
			continue
		}
		if len(round) == 0 {
			round = append(round, f.Mix...)
			f.R.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		if !contains(f.Mix, kind) {
			continue
		}
		ev := FaultEvent{Kind: kind, Start: f.H.Now()}
		var err error
		switch kind {
		case "kill":
			err = f.kill(&ev)
		case "pause":
			err = f.pause(&ev)
		case "partition":
			err = f.partition(&ev)
		case "slow":
			err = f.slow(&ev)
		case "diskfull":
			err = f.diskFull(&ev)
		}
		ev.End = f.H.Now()
		if err != nil {
			f.Log(fmt.Sprintf("fault %s on node %d not injected: %v", kind, ev.Node, err))
			if kind == "diskfull" {
				f.H.Skipped["diskfull"] = err.Error()
				f.Mix = without(f.Mix, "diskfull")
			}
		} else {
			f.H.AddFault(ev)
			f.Log(fmt.Sprintf("fault %s node %d %s (%.1fs)", ev.Kind, ev.Node, ev.Detail, float64(ev.End-ev.Start)/1e9))
		}
		f.Recover()
	}
}

func without(s []string, x string) []string {
	var o []string
	for _, v := range s {
		if v != x {
			o = append(o, v)
		}
	}
	return o
}

// Recover heals every link, resumes paused nodes, starts dead ones and
// waits for a healthy cluster.
func (f *Faulter) Recover() {
	f.C.HealAll()
	for _, n := range f.C.Nodes {
		if n.Paused() {
			f.C.Resume(n.ID)
		}
		if !n.Alive() {
			f.Log(fmt.Sprintf("node %d is not running: starting it", n.ID))
			if err := f.C.StartNode(n.ID); err != nil {
				f.Log(fmt.Sprintf("node %d: %v", n.ID, err))
			}
		}
	}
	if ok, why := f.A.WaitHealthy(f.recoverWait()); !ok {
		// Noted (and counted in the summary), and the run goes on: the
		// next faults meet a degraded cluster, which the checks still
		// cover.
		f.Log(fmt.Sprintf("the cluster did not recover within %v: %s", f.recoverWait(), why))
		f.H.Note(fmt.Sprintf("not recovered within %v after a fault: %s", f.recoverWait(), why))
	}
}

// recoverWait is how long the cluster gets to recover after a fault: every
// broker back, every ISR full.
func (f *Faulter) recoverWait() time.Duration {
	if f.RecoverWait > 0 {
		return f.RecoverWait
	}
	return 60 * time.Second
}

func (f *Faulter) kill(ev *FaultEvent) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := f.node()
	switch f.R.Intn(3) {
	case 0:
		ev.Kind = "kill-leader"
		if ps, err := f.A.Partitions(ctx, f.Topic); err == nil {
			if s, ok := ps[int32(f.R.Intn(len(ps)))]; ok && s.Leader > 0 {
				target = s.Leader
			}
		}
	case 1:
		ev.Kind = "kill-follower"
		if ps, err := f.A.Partitions(ctx, f.Topic); err == nil {
			if s, ok := ps[int32(f.R.Intn(len(ps)))]; ok {
				for _, r := range s.Replicas {
					if r != s.Leader {
						target = r
						break
					}
				}
			}
		}
	default:
		ev.Kind = "kill-controller"
		if c, err := f.A.Controller(ctx); err == nil {
			target = c
		}
	}
	ev.Node = target
	f.C.Kill(target)
	f.sleep(time.Second, 4*time.Second)
	return f.C.StartNode(target)
}

func (f *Faulter) pause(ev *FaultEvent) error {
	ev.Node = f.node()
	d := sessionTimeout + 2*time.Second + time.Duration(f.R.Int63n(int64(3*time.Second)))
	ev.Detail = fmt.Sprintf("SIGSTOP for %.1fs", d.Seconds())
	f.C.Pause(ev.Node)
	time.Sleep(d)
	f.C.Resume(ev.Node)
	return nil
}

func (f *Faulter) partition(ev *FaultEvent) error {
	ev.Node = f.node()
	mode := BlackHole
	if f.R.Intn(3) == 0 {
		mode = Refuse
	}
	name := map[LinkMode]string{BlackHole: "black-holed", Refuse: "refused"}[mode]
	if f.R.Intn(2) == 0 {
		for _, o := range f.C.Nodes {
			if o.ID != ev.Node {
				f.C.SetLink(o.ID, ev.Node, Link{Mode: mode})
				f.C.SetLink(ev.Node, o.ID, Link{Mode: mode})
			}
		}
		ev.Detail = "isolated from both others, " + name
	} else {
		other := 1 + (ev.Node+f.R.Intn(2))%3
		f.C.SetLink(other, ev.Node, Link{Mode: mode})
		f.C.SetLink(ev.Node, other, Link{Mode: mode})
		ev.Detail = fmt.Sprintf("cut from node %d, %s", other, name)
	}
	f.sleep(5*time.Second, 15*time.Second)
	f.C.HealAll()
	return nil
}

func (f *Faulter) slow(ev *FaultEvent) error {
	ev.Node = f.node()
	d := time.Duration(20+f.R.Intn(180)) * time.Millisecond
	for _, o := range f.C.Nodes {
		if o.ID != ev.Node {
			f.C.SetLink(o.ID, ev.Node, Link{Delay: d})
			f.C.SetLink(ev.Node, o.ID, Link{Delay: d})
		}
	}
	ev.Detail = fmt.Sprintf("%v per chunk to and from both others", d)
	f.sleep(8*time.Second, 20*time.Second)
	f.C.HealAll()
	return nil
}

// diskFull fills the tmpfs under one node's data dir until ENOSPC, holds,
// then frees it; a broker that stopped meanwhile is started again.
func (f *Faulter) diskFull(ev *FaultEvent) error {
	if f.C.TmpfsNode == 0 {
		if f.C.TmpfsNote != "" {
			return errors.New(f.C.TmpfsNote)
		}
		return errors.New("no tmpfs data dir")
	}
	ev.Node = f.C.TmpfsNode
	path := filepath.Join(filepath.Dir(f.C.DataDir(ev.Node)), "filler")
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	var filled int64
	for _, size := range []int{1 << 20, 4096, 1} {
		for {
			n, err := fh.Write(buf[:size])
			filled += int64(n)
			if err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					fh.Close()
					os.Remove(path)
					return err
				}
				break
			}
		}
	}
	fh.Close()
	f.sleep(5*time.Second, 10*time.Second)
	os.Remove(path)
	ev.Detail = fmt.Sprintf("filled %d MiB to ENOSPC", filled>>20)
	// Both brokers stop once their only log dir failed (a write or fsync
	// hit ENOSPC); one that did not meet a failed write while the disk was
	// full is restarted anyway, so every round ends the same way.
	if f.C.Node(ev.Node).Alive() {
		ev.Detail += "; the broker restarted (SIGTERM)"
		f.C.Terminate(ev.Node, 60*time.Second)
	} else {
		ev.Detail += "; the broker stopped itself, started again"
	}
	return f.C.StartNode(ev.Node)
}

// Tally counts faults per kind.
func Tally(fs []FaultEvent) string {
	n := map[string]int{}
	for _, f := range fs {
		n[f.Kind]++
	}
	var ks []string
	for k := range n {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}
