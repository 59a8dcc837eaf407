package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"fjord/compat-go/internal/check"
)

// enableShareVersion finalizes share.version 1 unless a level >= 1 is
// finalized (Kafka 4.4 finalizes it; Fjord does not by default), as
// `kafka-features upgrade --feature share.version=1` does.
func enableShareVersion(ctx context.Context, adm *admin) error {
	finalized := func() (int16, error) {
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, adm.cl)
		if err != nil {
			return 0, err
		}
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "share.version" {
				return f.MaxVersionLevel, nil
			}
		}
		return 0, nil
	}
	if v, err := finalized(); err != nil || v >= 1 {
		return err
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 15000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature = "share.version"
	u.MaxVersionLevel = 1
	u.UpgradeType = 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	resp, err := req.RequestWith(ctx, adm.cl)
	if err != nil {
		return fmt.Errorf("UpdateFeatures: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("UpdateFeatures: %w", err)
	}
	return check.Poll(ctx, 50*time.Millisecond, "share.version 1 finalized", func() (bool, string, error) {
		v, err := finalized()
		if err != nil {
			return false, err.Error(), nil
		}
		return v >= 1, fmt.Sprintf("share.version %d", v), nil
	})
}

// setGroupConfig sets a group config (IncrementalAlterConfigs, GROUP resource).
func setGroupConfig(ctx context.Context, adm *admin, group, name, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name = name
	c.Value = kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, adm.cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs %s: %w", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("IncrementalAlterConfigs %s %s=%s: %w", group, name, value, err)
		}
	}
	return nil
}

// shareTwoConsumers: two share consumers of one group read a partition;
// every record is delivered once (delivery count 1) and accepted without
// an acknowledgement error.
func (f *fg) shareTwoConsumers(ctx context.Context) error {
	adm, done, err := f.admin("share-admin")
	if err != nil {
		return err
	}
	defer done()
	if err := enableShareVersion(ctx, adm); err != nil {
		return err
	}
	topic := f.r.Name("share")
	group := f.r.Name("share-group")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return err
	}
	if err := setGroupConfig(ctx, adm, group, "share.auto.offset.reset", "earliest"); err != nil {
		return err
	}
	const n = 200
	prod, err := f.client("share-producer")
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))}, nil)
	}
	err = prod.Flush(ctx)
	prod.Close()
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}

	var mu sync.Mutex
	seen := map[string]int{}
	var ackErr, badCount error
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		cl, err := f.client("share-"+name, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(20),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				if err := rs.Error(); err != nil {
					mu.Lock()
					ackErr = err
					mu.Unlock()
				}
			}))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				for _, r := range fs.Records() {
					mu.Lock()
					seen[string(r.Value)]++
					if r.DeliveryCount() != 1 && badCount == nil {
						badCount = fmt.Errorf("%s delivered with count %d", r.Value, r.DeliveryCount())
					}
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				}
				fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
				_ = cl.FlushAcks(fctx)
				fcancel()
			}
		}()
	}
	err = check.Poll(ctx, 50*time.Millisecond, "every record read", func() (bool, string, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= n, fmt.Sprintf("%d of %d records", len(seen), n), nil
	})
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if ackErr != nil {
		return fmt.Errorf("acknowledgement: %w", ackErr)
	}
	if badCount != nil {
		return badCount
	}
	for v, c := range seen {
		if c != 1 {
			return fmt.Errorf("%s delivered %d times", v, c)
		}
	}
	return nil
}
