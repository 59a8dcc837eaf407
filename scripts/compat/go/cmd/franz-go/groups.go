package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"fjord/compat-go/internal/check"
)

var balancers = []kgo.GroupBalancer{
	kgo.RangeBalancer(),
	kgo.RoundRobinBalancer(),
	kgo.StickyBalancer(),
	kgo.CooperativeStickyBalancer(),
}

// ledger records which member consumed each (partition, offset).
type ledger struct {
	mu   sync.Mutex
	seen map[int32]map[int64]string
	dups []string
}

func newLedger() *ledger { return &ledger{seen: map[int32]map[int64]string{}} }

func (l *ledger) add(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.seen[r.Partition]
	if m == nil {
		m = map[int64]string{}
		l.seen[r.Partition] = m
	}
	if prev, ok := m[r.Offset]; ok {
		if len(l.dups) < 10 {
			l.dups = append(l.dups, fmt.Sprintf("partition %d offset %d consumed by %s and again by %s", r.Partition, r.Offset, prev, member))
		}
		return
	}
	m[r.Offset] = member
}

// complete reports whether offsets [0, end) of each partition were consumed.
func (l *ledger) complete(end map[int32]int64) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, e := range end {
		for o := int64(0); o < e; o++ {
			if _, ok := l.seen[p][o]; !ok {
				return false, fmt.Sprintf("partition %d offset %d not consumed yet (%d of %d)", p, o, len(l.seen[p]), e)
			}
		}
	}
	return true, ""
}

func (l *ledger) who(p int32, o int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[p][o]
}

func (l *ledger) duplicates() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dups) > 0 {
		return fmt.Errorf("duplicates: %v", l.dups)
	}
	return nil
}

// member is one group consumer: poll with rebalances blocked, record, commit
// synchronously, allow the rebalance.
type member struct {
	name  string
	cl    *kgo.Client
	mu    sync.Mutex
	owned map[int32]bool
	stop  chan struct{}
	done  chan error
}

// groupMode is how a group check's members join: the classic protocol with a
// client-side balancer, or (serverSide) the consumer group protocol of KIP-848
// through kgo.ServerSideBalancer, where the broker assigns with the assignor
// franz-go maps the balancer to (RangeBalancer -> "range", StickyBalancer ->
// "uniform").
type groupMode struct {
	bal        kgo.GroupBalancer
	serverSide bool
}

// name is the check's label: the balancer's protocol name, or
// "server-side-<assignor>".
func (g groupMode) name() string {
	if g.serverSide {
		return "server-side-" + g.assignor()
	}
	return g.bal.ProtocolName()
}

// assignor is the broker assignor franz-go asks for in server-side mode.
func (g groupMode) assignor() string {
	if g.bal.ProtocolName() == "range" {
		return "range"
	}
	return "uniform"
}

func (f *fg) startMember(ctx context.Context, name, group, topic string, mode groupMode, led *ledger) (*member, error) {
	m := &member{name: name, owned: map[int32]bool{}, stop: make(chan struct{}), done: make(chan error, 1)}
	change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range ps[topic] {
				if add {
					m.owned[p] = true
				} else {
					delete(m.owned, p)
				}
			}
		}
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(mode.bal),
		kgo.BlockRebalanceOnPoll(),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.SessionTimeout(10 * time.Second),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.OnPartitionsAssigned(change(true)),
		kgo.OnPartitionsRevoked(change(false)),
		kgo.OnPartitionsLost(change(false)),
	}
	if mode.serverSide {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := f.client("group-"+name, opts...)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	go m.loop(ctx, led)
	return m, nil
}

func (m *member) loop(ctx context.Context, led *ledger) {
	for {
		select {
		case <-m.stop:
			m.done <- nil
			return
		case <-ctx.Done():
			m.done <- ctx.Err()
			return
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fs := m.cl.PollFetches(pctx)
		cancel()
		if err := fetchErr(fs); err != nil {
			m.cl.AllowRebalance()
			m.done <- fmt.Errorf("%s: %w", m.name, err)
			return
		}
		fs.EachRecord(func(r *kgo.Record) { led.add(m.name, r) })
		if fs.NumRecords() > 0 {
			if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
				m.cl.AllowRebalance()
				m.done <- fmt.Errorf("%s: commit: %w", m.name, err)
				return
			}
		}
		m.cl.AllowRebalance()
	}
}

func (m *member) assigned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// running returns the loop's error if it has ended.
func (m *member) running() error {
	select {
	case err := <-m.done:
		if err == nil {
			err = fmt.Errorf("%s stopped", m.name)
		}
		m.done <- err
		return err
	default:
		return nil
	}
}

// leave stops polling (after its last commit) and leaves the group.
func (m *member) leave() error {
	close(m.stop)
	err := <-m.done
	m.done <- fmt.Errorf("%s has left", m.name)
	m.cl.Close()
	return err
}

func (m *member) abandon() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
		<-m.done
		m.cl.Close()
	}
}

func produceToPartitions(ctx context.Context, cl *kgo.Client, topic string, partitions int32, perPartition int, phase string) error {
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("%s-%d-%d", phase, p, i)), Value: []byte(phase)})
		}
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// groupBalancer: member A joins alone and takes all 6 partitions; B joins and
// the balancer splits them (disjoint, both non-empty, union all six, and
// DescribeGroups agrees with the clients); records produced then are read by
// the owner of their partition; B commits and leaves, A takes over B's
// partitions from B's committed offsets. Over the whole run every offset is
// consumed exactly once and the final committed offsets are the end offsets
// (OffsetFetch). In server-side mode the split is checked against
// ConsumerGroupDescribe and ListGroups (type "consumer") instead of
// DescribeGroups.
func (f *fg) groupBalancer(ctx context.Context, mode groupMode) error {
	adm, closeAdm, err := f.admin("admin")
	if err != nil {
		return err
	}
	defer closeAdm()
	name := mode.name()
	topic := f.r.Name("fg-group-" + name)
	group := f.r.Name("fg-group-" + name)
	const partitions = 6
	if err := createTopic(ctx, adm, topic, partitions, nil); err != nil {
		return err
	}
	prod, err := f.client("producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	end := map[int32]int64{}
	produce := func(per int, phase string) error {
		if err := produceToPartitions(ctx, prod, topic, partitions, per, phase); err != nil {
			return fmt.Errorf("produce %s: %w", phase, err)
		}
		for p := int32(0); p < partitions; p++ {
			end[p] += int64(per)
		}
		return nil
	}
	led := newLedger()
	if err := produce(20, "phase1"); err != nil {
		return err
	}

	a, err := f.startMember(ctx, "A", group, topic, mode, led)
	if err != nil {
		return err
	}
	defer a.abandon()
	err = check.Poll(ctx, 50*time.Millisecond, "A alone owns all partitions and has read phase 1", func() (bool, string, error) {
		if err := a.running(); err != nil {
			return false, "", err
		}
		if got := a.assigned(); len(got) != partitions {
			return false, fmt.Sprintf("A owns %v", got), nil
		}
		ok, why := led.complete(end)
		return ok, why, nil
	})
	if err != nil {
		return err
	}

	b, err := f.startMember(ctx, "B", group, topic, mode, led)
	if err != nil {
		return err
	}
	defer b.abandon()
	var as, bs []int32
	err = check.Poll(ctx, 50*time.Millisecond, "A and B split the partitions", func() (bool, string, error) {
		if err := a.running(); err != nil {
			return false, "", err
		}
		if err := b.running(); err != nil {
			return false, "", err
		}
		as, bs = a.assigned(), b.assigned()
		why := fmt.Sprintf("A owns %v, B owns %v", as, bs)
		if len(as) == 0 || len(bs) == 0 || len(as)+len(bs) != partitions {
			return false, why, nil
		}
		for _, p := range as {
			if slices.Contains(bs, p) {
				return false, why, nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		return err
	}
	split := map[*kgo.Client][]int32{a.cl: as, b.cl: bs}
	if mode.serverSide {
		err = describeConsumerMatches(ctx, adm, group, mode.assignor(), topic, split)
	} else {
		err = describeMatches(ctx, adm, group, name, topic, split)
	}
	if err != nil {
		return err
	}

	if err := produce(10, "phase2"); err != nil {
		return err
	}
	if err := check.Poll(ctx, 50*time.Millisecond, "phase 2 consumed", func() (bool, string, error) {
		if err := a.running(); err != nil {
			return false, "", err
		}
		if err := b.running(); err != nil {
			return false, "", err
		}
		ok, why := led.complete(end)
		return ok, why, nil
	}); err != nil {
		return err
	}
	for p := int32(0); p < partitions; p++ {
		owner := "A"
		if slices.Contains(bs, p) {
			owner = "B"
		}
		for o := end[p] - 10; o < end[p]; o++ {
			if w := led.who(p, o); w != owner {
				return fmt.Errorf("phase 2: partition %d offset %d consumed by %s, but %s owns the partition (A %v, B %v)", p, o, w, owner, as, bs)
			}
		}
	}

	if err := b.leave(); err != nil {
		return fmt.Errorf("B: %w", err)
	}
	if err := check.Poll(ctx, 50*time.Millisecond, "A owns all partitions after B left", func() (bool, string, error) {
		if err := a.running(); err != nil {
			return false, "", err
		}
		got := a.assigned()
		return len(got) == partitions, fmt.Sprintf("A owns %v", got), nil
	}); err != nil {
		return err
	}
	if err := produce(10, "phase3"); err != nil {
		return err
	}
	if err := check.Poll(ctx, 50*time.Millisecond, "phase 3 consumed by A", func() (bool, string, error) {
		if err := a.running(); err != nil {
			return false, "", err
		}
		ok, why := led.complete(end)
		return ok, why, nil
	}); err != nil {
		return err
	}
	if err := a.leave(); err != nil {
		return fmt.Errorf("A: %w", err)
	}
	if err := led.duplicates(); err != nil {
		return err
	}
	for p := int32(0); p < partitions; p++ {
		for o := end[p] - 10; o < end[p]; o++ {
			if w := led.who(p, o); w != "A" {
				return fmt.Errorf("phase 3: partition %d offset %d consumed by %s, want A", p, o, w)
			}
		}
	}
	// Committed offsets: the end of every partition.
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return fmt.Errorf("OffsetFetch: %w", err)
	}
	for p := int32(0); p < partitions; p++ {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != end[p] {
			return fmt.Errorf("committed offset of partition %d: %+v (found %v), want %d", p, o, ok, end[p])
		}
	}
	return nil
}

// describeMatches checks DescribeGroups against what the clients were assigned.
func describeMatches(ctx context.Context, adm *admin, group, protocol, topic string, want map[*kgo.Client][]int32) error {
	byMember := map[string][]int32{}
	for cl, ps := range want {
		id, _ := cl.GroupMetadata()
		byMember[id] = ps
	}
	return check.Poll(ctx, 100*time.Millisecond, "DescribeGroups agrees with the members", func() (bool, string, error) {
		dgs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error(), nil
		}
		dg := dgs[group]
		if dg.Err != nil {
			return false, dg.Err.Error(), nil
		}
		if dg.State != "Stable" {
			return false, "state " + dg.State, nil
		}
		if dg.ProtocolType != "consumer" || dg.Protocol != protocol {
			return false, "", fmt.Errorf("protocol type %q protocol %q, want consumer %q", dg.ProtocolType, dg.Protocol, protocol)
		}
		if len(dg.Members) != len(byMember) {
			return false, fmt.Sprintf("%d members", len(dg.Members)), nil
		}
		for _, mem := range dg.Members {
			wantPs, ok := byMember[mem.MemberID]
			if !ok {
				return false, "", fmt.Errorf("member %s is not one of ours (%v)", mem.MemberID, byMember)
			}
			ca, ok := mem.Assigned.AsConsumer()
			if !ok {
				return false, "", fmt.Errorf("member %s: assignment does not decode as a consumer assignment", mem.MemberID)
			}
			var got []int32
			for _, t := range ca.Topics {
				if t.Topic == topic {
					got = append(got, t.Partitions...)
				}
			}
			sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
			if !slices.Equal(got, wantPs) {
				return false, fmt.Sprintf("member %s assigned %v, client has %v", mem.MemberID, got, wantPs), nil
			}
		}
		return true, "", nil
	})
}

// describeConsumerMatches checks a consumer-protocol group (KIP-848) against
// what the clients were assigned: ConsumerGroupDescribe shows it Stable with
// the assignor and each member's assignment equal to its target, and
// ListGroups lists it with group type "consumer".
func describeConsumerMatches(ctx context.Context, adm *admin, group, assignor, topic string, want map[*kgo.Client][]int32) error {
	byMember := map[string][]int32{}
	for cl, ps := range want {
		id, _ := cl.GroupMetadata()
		byMember[id] = ps
	}
	err := check.Poll(ctx, 100*time.Millisecond, "ConsumerGroupDescribe agrees with the members", func() (bool, string, error) {
		dgs, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return false, err.Error(), nil
		}
		dg, ok := dgs[group]
		if !ok {
			return false, "group missing from the response", nil
		}
		if dg.Err != nil {
			return false, dg.Err.Error(), nil
		}
		if dg.State != "Stable" {
			return false, "state " + dg.State, nil
		}
		if dg.AssignorName != assignor {
			return false, "", fmt.Errorf("assignor %q, want %q", dg.AssignorName, assignor)
		}
		if len(dg.Members) != len(byMember) {
			return false, fmt.Sprintf("%d members", len(dg.Members)), nil
		}
		for _, mem := range dg.Members {
			wantPs, ok := byMember[mem.MemberID]
			if !ok {
				return false, "", fmt.Errorf("member %s is not one of ours (%v)", mem.MemberID, byMember)
			}
			got := slices.Sorted(maps.Keys(mem.Assignment[topic]))
			target := slices.Sorted(maps.Keys(mem.TargetAssignment[topic]))
			if !slices.Equal(got, wantPs) || !slices.Equal(target, wantPs) {
				return false, fmt.Sprintf("member %s assigned %v (target %v), client has %v", mem.MemberID, got, target, wantPs), nil
			}
			if !slices.Equal(mem.SubscribedTopics, []string{topic}) {
				return false, "", fmt.Errorf("member %s subscribed to %v, want [%s]", mem.MemberID, mem.SubscribedTopics, topic)
			}
		}
		return true, "", nil
	})
	if err != nil {
		return err
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("ListGroups: %w", err)
	}
	lg, ok := listed[group]
	if !ok {
		return fmt.Errorf("ListGroups does not list %s", group)
	}
	if lg.GroupType != "consumer" || lg.ProtocolType != "consumer" {
		return fmt.Errorf("ListGroups: %s has group type %q protocol type %q, want consumer and consumer", group, lg.GroupType, lg.ProtocolType)
	}
	return nil
}
