package main

// The early-ack scenario: a check that the checker fires. Both followers of
// the only partition are cut off from its leader (their fetches
// black-holed), a burst of acks=all records is produced, and the leader is
// killed with SIGKILL. A broker that keeps acks=all's promise cannot answer
// the burst (the ISR never gets it): those produces time out, their outcome
// unknown. A broker that answers at the leader's own append acknowledges
// records that exist only on the killed leader; a follower takes over
// without them, the next records take their offsets, and the checker must
// report lost acknowledged writes. No timing decides which: the followers
// cannot have the burst while they are cut off.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func earlyAck(c *Cluster, a *Admin, w *Workload, h *History) error {
	newProducer := func() (*kgo.Client, error) {
		return kgo.NewClient(append(w.producerOpts(),
			kgo.ProduceRequestTimeout(3*time.Second), kgo.RecordDeliveryTimeout(5*time.Second))...)
	}
	pcl, err := newProducer()
	if err != nil {
		return err
	}
	for i := 0; i < 10; i++ {
		if err := w.produceOne(pcl, 1, 0, fmt.Sprintf("before-%d", i), OpAppend, 0); err != nil {
			return fmt.Errorf("a produce before the fault failed: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	ps, err := a.Partitions(ctx, w.Topic)
	cancel()
	if err != nil {
		return err
	}
	st := ps[0]
	leader := st.Leader
	var followers []int
	for _, r := range st.Replicas {
		if r != leader {
			followers = append(followers, r)
		}
	}
	logf("leader %d, followers %v: cutting the followers' fetches off", leader, followers)
	ev := FaultEvent{Kind: "cut-followers", Node: leader, Start: h.Now(), Detail: fmt.Sprintf("fetches of %v black-holed", followers)}
	for _, f := range followers {
		c.Node(leader).ClientProxy.Set(f, Link{Mode: BlackHole})
	}
	time.Sleep(500 * time.Millisecond)
	// A broker that keeps the promise never answers these while the
	// followers are cut off (an idempotent producer retries a timed-out
	// batch until it has an answer), so the leader is killed after 3 s
	// whatever came back; a broker with the planted bug answers in
	// milliseconds.
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if w.produceOne(pcl, 2+i, 0, fmt.Sprintf("burst-%d", i), OpAppend, 0) == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			}
		}(i)
	}
	burst := make(chan struct{})
	go func() { wg.Wait(); close(burst) }()
	select {
	case <-burst:
	case <-time.After(3 * time.Second):
	}
	mu.Lock()
	n := acked
	mu.Unlock()
	logf("burst: %d of 20 acknowledged after 3 s at most; killing the leader %d", n, leader)
	kev := FaultEvent{Kind: "kill-leader", Node: leader, Start: h.Now()}
	c.Kill(leader)
	kev.End = h.Now()
	h.AddFault(kev)
	c.HealAll()
	ev.End = h.Now()
	h.AddFault(ev)
	// A new leader among the followers.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ps, err := a.Partitions(ctx, w.Topic)
		cancel()
		if err == nil && ps[0].Leader > 0 && ps[0].Leader != leader {
			logf("new leader %d", ps[0].Leader)
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no new leader within 60 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	acl, err := newProducer()
	if err != nil {
		return err
	}
	for i := 0; i < 20; i++ {
		w.produceOne(acl, 30, 0, fmt.Sprintf("after-%d", i), OpAppend, 0)
	}
	acl.Close()
	// The burst's producer delivers what it still retries to the new
	// leader (or gives up); its outcome stays pending if it does not.
	select {
	case <-burst:
	case <-time.After(30 * time.Second):
		h.Note("the burst's produces were still unanswered 30 s after the new leader took over (left pending)")
	}
	go pcl.Close()
	if err := c.StartNode(leader); err != nil {
		return err
	}
	if ok, why := a.WaitHealthy(120 * time.Second); !ok {
		h.Note("not recovered within 120 s: " + why)
	}
	return w.FinalRead(a.adm, 31, 120*time.Second)
}
