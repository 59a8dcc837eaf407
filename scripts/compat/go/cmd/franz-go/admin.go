package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"fjord/compat-go/internal/check"
)

const adminTimeout = 30 * time.Second

// adminChecks runs the kadm checks. Some share a fixture (a group with an
// active member); a check whose fixture failed fails too.
func (f *fg) adminChecks() {
	r := f.r
	adm, closeAdm, err := f.admin("admin")
	if err != nil {
		r.Check("admin: client", time.Second, func(context.Context) error { return err })
		return
	}
	defer closeAdm()

	r.Check("admin create-topics: ids, partitions, validate_only, invalid config, CreatePartitions, already-exists error", adminTimeout, func(ctx context.Context) error {
		return f.adminCreateTopics(ctx, adm)
	})
	r.Check("admin describe-configs: override and default with their sources, missing topic", adminTimeout, func(ctx context.Context) error {
		return f.adminDescribeConfigs(ctx, adm)
	})
	r.Check("admin alter-configs: incremental set/delete, non-incremental replace, invalid value", adminTimeout, func(ctx context.Context) error {
		return f.adminAlterConfigs(ctx, adm)
	})
	r.Check("admin list-offsets: start, end, after timestamp, max timestamp, after DeleteRecords", adminTimeout, func(ctx context.Context) error {
		return f.adminListOffsets(ctx, adm)
	})
	r.Check("offset commit to an unknown group with a generation: ILLEGAL_GENERATION below v9, GROUP_ID_NOT_FOUND at v9, no group created", adminTimeout, func(ctx context.Context) error {
		return f.commitUnknownGroup(ctx, adm, r.Name("fg-unknown-group"))
	})
	simpleGroup := r.Name("fg-admin-simple")
	r.Check("admin commit/fetch offsets: a group without members, metadata, moving back", adminTimeout, func(ctx context.Context) error {
		return f.adminCommitFetch(ctx, adm, simpleGroup)
	})

	fx := &lagFixture{group: r.Name("fg-admin-lag"), topic: r.Name("fg-admin-lag")}
	defer fx.close()
	if r.Check("admin group fixture: a member reads 100 records and commits 30+20", adminTimeout, func(ctx context.Context) error {
		return f.lagSetup(ctx, adm, fx)
	}) {
		r.Check("admin describe-groups: the active member and its assignment", adminTimeout, func(ctx context.Context) error {
			return fx.describe(ctx, adm)
		})
		r.Check("admin lag: kadm.Lag of an active member", adminTimeout, func(ctx context.Context) error {
			return fx.lag(ctx, adm, false)
		})
		r.Check("admin list-groups: all, by state Stable, by state Empty", adminTimeout, func(ctx context.Context) error {
			return fx.list(ctx, adm, simpleGroup)
		})
		r.Check("admin DeleteGroups / OffsetDelete of an active group: NON_EMPTY_GROUP, GROUP_SUBSCRIBED_TO_TOPIC", adminTimeout, func(ctx context.Context) error {
			return fx.deleteWhileActive(ctx, adm)
		})
		r.Check("admin lag after the member left, OffsetDelete, then DeleteGroups", adminTimeout, func(ctx context.Context) error {
			return fx.afterLeave(ctx, adm)
		})
	}
	r.Check("admin delete-topics: gone from metadata, second delete UNKNOWN_TOPIC_OR_PARTITION", adminTimeout, func(ctx context.Context) error {
		return f.adminDeleteTopics(ctx, adm)
	})
}

func (f *fg) adminCreateTopics(ctx context.Context, adm *admin) error {
	t1, t2 := f.r.Name("fg-admin-create-a"), f.r.Name("fg-admin-create-b")
	resps, err := adm.CreateTopics(ctx, 3, -1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, t1, t2)
	if err != nil {
		return fmt.Errorf("CreateTopics: %w", err)
	}
	ids := map[string]kadm.TopicID{}
	for _, t := range []string{t1, t2} {
		resp, ok := resps[t]
		if !ok {
			return fmt.Errorf("no CreateTopics result for %s", t)
		}
		if resp.Err != nil {
			return fmt.Errorf("CreateTopics %s: %w (%s)", t, resp.Err, resp.ErrMessage)
		}
		if resp.ID == (kadm.TopicID{}) {
			return fmt.Errorf("CreateTopics %s: no topic id", t)
		}
		if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 {
			return fmt.Errorf("CreateTopics %s: %d partitions, replication factor %d; want 3 and 1", t, resp.NumPartitions, resp.ReplicationFactor)
		}
		if c, ok := resp.Configs["retention.ms"]; !ok || c.Value == nil || *c.Value != "3600000" {
			return fmt.Errorf("CreateTopics %s: retention.ms in the response is %+v (found %v), want 3600000", t, c, ok)
		}
		ids[t] = resp.ID
		if err := waitLeaders(ctx, adm, t, 3); err != nil {
			return err
		}
	}
	tds, err := adm.ListTopics(ctx, t1, t2)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	for _, t := range []string{t1, t2} {
		if tds[t].ID != ids[t] {
			return fmt.Errorf("Metadata gives %s id %v, CreateTopics gave %v", t, tds[t].ID, ids[t])
		}
	}
	// validate_only creates nothing.
	t3 := f.r.Name("fg-admin-create-validate")
	val, err := adm.ValidateCreateTopics(ctx, 2, -1, nil, t3)
	if err != nil || val.Error() != nil {
		return fmt.Errorf("CreateTopics validate_only: %v / %v", err, val.Error())
	}
	if md, err := adm.metadata(ctx, t3); err != nil || md.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		return fmt.Errorf("after a validate_only CreateTopics, Metadata for %s: %+v %v, want UNKNOWN_TOPIC_OR_PARTITION", t3, md, err)
	}
	// An invalid topic config is refused.
	bad, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("bogus")}, f.r.Name("fg-admin-create-bad"))
	if !errors.Is(bad.Err, kerr.InvalidConfig) {
		return fmt.Errorf("CreateTopics with cleanup.policy=bogus: %v / %v, want INVALID_CONFIG", err, bad.Err)
	}
	// CreatePartitions: 3 -> 5.
	cps, err := adm.CreatePartitions(ctx, 2, t2)
	if err != nil || cps.Error() != nil {
		return fmt.Errorf("CreatePartitions +2: %v / %v", err, cps.Error())
	}
	if err := waitLeaders(ctx, adm, t2, 5); err != nil {
		return fmt.Errorf("after CreatePartitions: %w", err)
	}
	// kadm.CreateTopic returns the topic's error as its error too.
	again, err := adm.CreateTopic(ctx, 3, -1, nil, t1)
	if !errors.Is(again.Err, kerr.TopicAlreadyExists) || !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("CreateTopics of an existing topic: %v / %v, want TOPIC_ALREADY_EXISTS", err, again.Err)
	}
	return nil
}

func describeTopic(ctx context.Context, adm *admin, topic string) (map[string]kadm.Config, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("DescribeConfigs: %w", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return nil, fmt.Errorf("DescribeConfigs %s: %w", topic, err)
	}
	if rc.Err != nil {
		return nil, fmt.Errorf("DescribeConfigs %s: %w (%s)", topic, rc.Err, rc.ErrMessage)
	}
	m := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		m[c.Key] = c
	}
	return m, nil
}

type wantCfg struct {
	key, value string
	source     kmsg.ConfigSource
}

// waitConfigs describes the topic until every wanted value and source is
// there: Kafka applies a config change to its brokers' view asynchronously
// (through the metadata log), so a describe right after an alter may still
// show the old value.
func waitConfigs(ctx context.Context, adm *admin, topic, what string, wants ...wantCfg) error {
	return check.Poll(ctx, 50*time.Millisecond, what, func() (bool, string, error) {
		cs, err := describeTopic(ctx, adm, topic)
		if err != nil {
			return false, "", err
		}
		for _, w := range wants {
			c, ok := cs[w.key]
			if !ok {
				return false, w.key + " not described", nil
			}
			if c.Value == nil || *c.Value != w.value || c.Source != w.source {
				return false, fmt.Sprintf("%s = %s (source %v), want %s (source %v)", w.key, c.MaybeValue(), c.Source, w.value, w.source), nil
			}
		}
		return true, "", nil
	})
}

func (f *fg) adminDescribeConfigs(ctx context.Context, adm *admin) error {
	topic := f.r.Name("fg-admin-describe")
	if err := createTopic(ctx, adm, topic, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}); err != nil {
		return err
	}
	if err := waitConfigs(ctx, adm, topic, "DescribeConfigs of a new topic",
		wantCfg{"retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig},
		wantCfg{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		wantCfg{"max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig},
	); err != nil {
		return err
	}
	missing := f.r.Name("fg-admin-describe-missing")
	rcs, err := adm.DescribeTopicConfigs(ctx, missing)
	if err != nil {
		return fmt.Errorf("DescribeConfigs of a missing topic: %w", err)
	}
	rc, err := rcs.On(missing, nil)
	if err != nil || !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("DescribeConfigs of a missing topic: %v / %v, want UNKNOWN_TOPIC_OR_PARTITION", err, rc.Err)
	}
	return nil
}

func (f *fg) adminAlterConfigs(ctx context.Context, adm *admin) error {
	topic := f.r.Name("fg-admin-alter")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return err
	}
	alter := func(what string, state bool, cfgs ...kadm.AlterConfig) error {
		var resps kadm.AlterConfigsResponses
		var err error
		if state {
			resps, err = adm.AlterTopicConfigsState(ctx, cfgs, topic)
		} else {
			resps, err = adm.AlterTopicConfigs(ctx, cfgs, topic)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		resp, err := resps.On(topic, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if resp.Err != nil {
			return fmt.Errorf("%s: %w (%s)", what, resp.Err, resp.ErrMessage)
		}
		return nil
	}
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}
	dynamic, dflt := kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigSourceDefaultConfig

	if err := alter("IncrementalAlterConfigs SET", false, set("retention.ms", "7200000"), set("max.message.bytes", "2097152")); err != nil {
		return err
	}
	if err := waitConfigs(ctx, adm, topic, "after IncrementalAlterConfigs SET",
		wantCfg{"retention.ms", "7200000", dynamic}, wantCfg{"max.message.bytes", "2097152", dynamic}); err != nil {
		return err
	}
	if err := alter("IncrementalAlterConfigs DELETE", false, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}); err != nil {
		return err
	}
	if err := waitConfigs(ctx, adm, topic, "after IncrementalAlterConfigs DELETE",
		wantCfg{"retention.ms", "7200000", dynamic}, wantCfg{"max.message.bytes", "1048588", dflt}); err != nil {
		return err
	}
	// AlterConfigs (not incremental) replaces the whole set of overrides.
	if err := alter("AlterConfigs", true, set("segment.ms", "3600000")); err != nil {
		return err
	}
	if err := waitConfigs(ctx, adm, topic, "after AlterConfigs (replaces all overrides)",
		wantCfg{"segment.ms", "3600000", dynamic}, wantCfg{"retention.ms", "604800000", dflt}); err != nil {
		return err
	}
	err := alter("IncrementalAlterConfigs SET retention.ms=not-a-number", false, set("retention.ms", "not-a-number"))
	if !errors.Is(err, kerr.InvalidConfig) {
		return fmt.Errorf("an invalid value: %v, want INVALID_CONFIG", err)
	}
	return waitConfigs(ctx, adm, topic, "after the invalid value",
		wantCfg{"segment.ms", "3600000", dynamic}, wantCfg{"retention.ms", "604800000", dflt})
}

func wantOffset(l kadm.ListedOffsets, what, topic string, p int32, offset, ts int64) error {
	o, ok := l.Lookup(topic, p)
	if !ok {
		return fmt.Errorf("%s: partition %d not listed", what, p)
	}
	if o.Err != nil {
		return fmt.Errorf("%s: partition %d: %w", what, p, o.Err)
	}
	if o.Offset != offset || (ts != 0 && o.Timestamp != ts) {
		return fmt.Errorf("%s: partition %d offset %d timestamp %d, want offset %d timestamp %d", what, p, o.Offset, o.Timestamp, offset, ts)
	}
	return nil
}

func (f *fg) adminListOffsets(ctx context.Context, adm *admin) error {
	topic := f.r.Name("fg-admin-offsets")
	if err := createTopic(ctx, adm, topic, 2, nil); err != nil {
		return err
	}
	prod, err := f.client("producer", kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer prod.Close()
	base := time.Now().UnixMilli() - 3_600_000
	// Five batches of 20, so a timestamp lookup has to look inside batches.
	for b := 0; b < 5; b++ {
		var recs []*kgo.Record
		for i := b * 20; i < (b+1)*20; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i)), Timestamp: time.UnixMilli(base + int64(i)*10)})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
	}
	type lookup struct {
		what      string
		list      func() (kadm.ListedOffsets, error)
		p         int32
		offset    int64
		timestamp int64
	}
	after := func(ms int64) func() (kadm.ListedOffsets, error) {
		return func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, ms, topic) }
	}
	start := func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) }
	end := func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) }
	maxTs := func() (kadm.ListedOffsets, error) { return adm.ListMaxTimestampOffsets(ctx, topic) }
	for _, l := range []lookup{
		{"start", start, 0, 0, 0},
		{"start (empty partition)", start, 1, 0, 0},
		{"end", end, 0, 100, 0},
		{"end (empty partition)", end, 1, 0, 0},
		{"after base+255ms", after(base + 255), 0, 26, base + 260},
		{"after base+260ms (exact)", after(base + 260), 0, 26, base + 260},
		{"after a time before the first record", after(base - 60_000), 0, 0, base},
		{"after a time past the last record (kadm: the end offset)", after(base + 60_000), 0, 100, 0},
		{"after base (empty partition: the end offset)", after(base), 1, 0, 0},
		{"max timestamp", maxTs, 0, 99, base + 990},
	} {
		ls, err := l.list()
		if err != nil {
			return fmt.Errorf("%s: %w", l.what, err)
		}
		if err := wantOffset(ls, l.what, topic, l.p, l.offset, l.timestamp); err != nil {
			return err
		}
	}
	drs, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 40}}})
	if err != nil {
		return fmt.Errorf("DeleteRecords: %w", err)
	}
	if err := drs.Error(); err != nil {
		return fmt.Errorf("DeleteRecords: %w", err)
	}
	for _, l := range []lookup{
		{"start after DeleteRecords(40)", start, 0, 40, 0},
		{"after a time before the first record, after DeleteRecords(40)", after(base - 60_000), 0, 40, base + 400},
		{"end after DeleteRecords(40)", end, 0, 100, 0},
	} {
		ls, err := l.list()
		if err != nil {
			return fmt.Errorf("%s: %w", l.what, err)
		}
		if err := wantOffset(ls, l.what, topic, l.p, l.offset, l.timestamp); err != nil {
			return err
		}
	}
	return nil
}

func (f *fg) adminCommitFetch(ctx context.Context, adm *admin, group string) error {
	topic := f.r.Name("fg-admin-commit")
	if err := createTopic(ctx, adm, topic, 2, nil); err != nil {
		return err
	}
	commit := func(o0, o1 int64) error {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: o0, LeaderEpoch: -1, Metadata: fmt.Sprintf("m0-%d", o0)})
		os.Add(kadm.Offset{Topic: topic, Partition: 1, At: o1, LeaderEpoch: -1, Metadata: fmt.Sprintf("m1-%d", o1)})
		resps, err := adm.CommitOffsets(ctx, group, os)
		if err != nil {
			return fmt.Errorf("OffsetCommit: %w", err)
		}
		if err := resps.Error(); err != nil {
			return fmt.Errorf("OffsetCommit: %w", err)
		}
		return nil
	}
	fetch := func(what string, o0, o1 int64, byTopic bool) error {
		var resps kadm.OffsetResponses
		var err error
		if byTopic {
			resps, err = adm.FetchOffsetsForTopics(ctx, group, topic)
		} else {
			resps, err = adm.FetchOffsets(ctx, group)
		}
		if err != nil {
			return fmt.Errorf("%s: OffsetFetch: %w", what, err)
		}
		for p, want := range map[int32]int64{0: o0, 1: o1} {
			o, ok := resps.Lookup(topic, p)
			wantMeta := fmt.Sprintf("m%d-%d", p, want)
			if !ok || o.Err != nil || o.At != want || o.Metadata != wantMeta {
				return fmt.Errorf("%s: partition %d: %+v (found %v), want offset %d metadata %q", what, p, o, ok, want, wantMeta)
			}
		}
		return nil
	}
	if err := commit(3, 7); err != nil {
		return err
	}
	if err := fetch("all topics", 3, 7, false); err != nil {
		return err
	}
	if err := fetch("by topic", 3, 7, true); err != nil {
		return err
	}
	if err := commit(2, 9); err != nil {
		return err
	}
	return fetch("after committing a lower offset", 2, 9, false)
}

type lagFixture struct {
	group, topic string
	member       *kgo.Client
}

func (fx *lagFixture) close() {
	if fx.member != nil {
		fx.member.Close()
		fx.member = nil
	}
}

func (f *fg) lagSetup(ctx context.Context, adm *admin, fx *lagFixture) error {
	if err := createTopic(ctx, adm, fx.topic, 2, nil); err != nil {
		return err
	}
	prod, err := f.client("producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer prod.Close()
	if err := produceToPartitions(ctx, prod, fx.topic, 2, 50, "lag"); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cl, err := f.client("lag-member",
		kgo.ConsumerGroup(fx.group),
		kgo.ConsumeTopics(fx.topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.SessionTimeout(10*time.Second),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return err
	}
	fx.member = cl
	if _, err := pollUntil(ctx, cl, "member reads", func(rs []*kgo.Record) bool { return len(rs) >= 100 }); err != nil {
		return err
	}
	var commitErr error
	cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{fx.topic: {0: {Epoch: -1, Offset: 30}, 1: {Epoch: -1, Offset: 20}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				commitErr = err
				return
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if e := kerr.ErrorForCode(p.ErrorCode); e != nil && commitErr == nil {
						commitErr = fmt.Errorf("partition %d: %w", p.Partition, e)
					}
				}
			}
		})
	if commitErr != nil {
		return fmt.Errorf("OffsetCommit: %w", commitErr)
	}
	return nil
}

func (fx *lagFixture) describe(ctx context.Context, adm *admin) error {
	memberID, _ := fx.member.GroupMetadata()
	return check.Poll(ctx, 100*time.Millisecond, "DescribeGroups", func() (bool, string, error) {
		dgs, err := adm.DescribeGroups(ctx, fx.group)
		if err != nil {
			return false, "", err
		}
		dg := dgs[fx.group]
		if dg.Err != nil {
			return false, "", dg.Err
		}
		if dg.State != "Stable" {
			return false, "state " + dg.State, nil
		}
		if dg.ProtocolType != "consumer" || dg.Protocol == "" {
			return false, "", fmt.Errorf("protocol type %q protocol %q", dg.ProtocolType, dg.Protocol)
		}
		if len(dg.Members) != 1 {
			return false, "", fmt.Errorf("%d members, want 1", len(dg.Members))
		}
		m := dg.Members[0]
		// Kafka gives the client's address as "/" + IP.
		if m.MemberID != memberID || m.ClientID != "fjord-compat-franz-go" || m.ClientHost != "/127.0.0.1" {
			return false, "", fmt.Errorf("member %q client %q host %q, want %q fjord-compat-franz-go /127.0.0.1", m.MemberID, m.ClientID, m.ClientHost, memberID)
		}
		meta, ok := m.Join.AsConsumer()
		if !ok || len(meta.Topics) != 1 || meta.Topics[0] != fx.topic {
			return false, "", fmt.Errorf("member metadata %+v (decoded %v), want a subscription to %s", meta, ok, fx.topic)
		}
		a, ok := m.Assigned.AsConsumer()
		if !ok || len(a.Topics) != 1 || a.Topics[0].Topic != fx.topic || len(a.Topics[0].Partitions) != 2 {
			return false, "", fmt.Errorf("member assignment %+v (decoded %v), want both partitions of %s", a, ok, fx.topic)
		}
		return true, "", nil
	})
}

func (fx *lagFixture) lag(ctx context.Context, adm *admin, empty bool) error {
	lags, err := adm.Lag(ctx, fx.group)
	if err != nil {
		return fmt.Errorf("Lag: %w", err)
	}
	l, ok := lags[fx.group]
	if !ok {
		return fmt.Errorf("Lag: group %s missing", fx.group)
	}
	if err := l.Error(); err != nil {
		return fmt.Errorf("Lag: %w", err)
	}
	wantState := "Stable"
	if empty {
		wantState = "Empty"
	}
	if l.State != wantState {
		return fmt.Errorf("Lag: state %s, want %s", l.State, wantState)
	}
	for p, want := range map[int32][2]int64{0: {30, 20}, 1: {20, 30}} {
		ml, ok := l.Lag.Lookup(fx.topic, p)
		if !ok {
			return fmt.Errorf("Lag: partition %d missing", p)
		}
		if ml.Err != nil || ml.Commit.At != want[0] || ml.End.Offset != 50 || ml.Lag != want[1] {
			return fmt.Errorf("Lag: partition %d: commit %d end %d lag %d err %v; want commit %d end 50 lag %d", p, ml.Commit.At, ml.End.Offset, ml.Lag, ml.Err, want[0], want[1])
		}
		if ml.IsEmpty() != empty {
			return fmt.Errorf("Lag: partition %d: member %v, want an assigned member %v", p, ml.Member, !empty)
		}
	}
	if total := l.Lag.Total(); total != 50 {
		return fmt.Errorf("Lag: total %d, want 50", total)
	}
	return nil
}

func (fx *lagFixture) list(ctx context.Context, adm *admin, simpleGroup string) error {
	all, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("ListGroups: %w", err)
	}
	g, ok := all[fx.group]
	if !ok {
		return fmt.Errorf("ListGroups: %s not listed (%d groups)", fx.group, len(all))
	}
	if g.ProtocolType != "consumer" || g.State != "Stable" || g.GroupType != "classic" {
		return fmt.Errorf("ListGroups: %s protocol type %q state %q type %q, want consumer Stable classic", fx.group, g.ProtocolType, g.State, g.GroupType)
	}
	if _, ok := all[simpleGroup]; !ok {
		return fmt.Errorf("ListGroups: the group with only committed offsets (%s) is not listed", simpleGroup)
	}
	stable, err := adm.ListGroups(ctx, "Stable")
	if err != nil {
		return fmt.Errorf("ListGroups(Stable): %w", err)
	}
	if _, ok := stable[fx.group]; !ok {
		return fmt.Errorf("ListGroups(Stable): %s not listed", fx.group)
	}
	if _, ok := stable[simpleGroup]; ok {
		return fmt.Errorf("ListGroups(Stable): lists %s, which has no members", simpleGroup)
	}
	empty, err := adm.ListGroups(ctx, "Empty")
	if err != nil {
		return fmt.Errorf("ListGroups(Empty): %w", err)
	}
	if _, ok := empty[simpleGroup]; !ok {
		return fmt.Errorf("ListGroups(Empty): %s not listed", simpleGroup)
	}
	if _, ok := empty[fx.group]; ok {
		return fmt.Errorf("ListGroups(Empty): lists %s, which has a member", fx.group)
	}
	return nil
}

func (fx *lagFixture) deleteWhileActive(ctx context.Context, adm *admin) error {
	resp, err := adm.DeleteGroup(ctx, fx.group)
	if !errors.Is(resp.Err, kerr.NonEmptyGroup) {
		return fmt.Errorf("DeleteGroups of a group with a member: %v / %v, want NON_EMPTY_GROUP", err, resp.Err)
	}
	dels, err := adm.DeleteOffsets(ctx, fx.group, kadm.TopicsSet{fx.topic: {0: {}}})
	if err != nil && !errors.Is(err, kerr.GroupSubscribedToTopic) {
		return fmt.Errorf("OffsetDelete of a subscribed topic: %w", err)
	}
	e, _ := dels.Lookup(fx.topic, 0)
	if !errors.Is(e, kerr.GroupSubscribedToTopic) && !errors.Is(err, kerr.GroupSubscribedToTopic) {
		return fmt.Errorf("OffsetDelete of a subscribed topic: %v / %v, want GROUP_SUBSCRIBED_TO_TOPIC", err, e)
	}
	// Nothing changed.
	return fx.lag(ctx, adm, false)
}

func (fx *lagFixture) afterLeave(ctx context.Context, adm *admin) error {
	fx.close()
	if err := check.Poll(ctx, 100*time.Millisecond, "group Empty after the member left", func() (bool, string, error) {
		empty, err := adm.ListGroups(ctx, "Empty")
		if err != nil {
			return false, "", err
		}
		_, ok := empty[fx.group]
		return ok, "not listed as Empty", nil
	}); err != nil {
		return err
	}
	if err := fx.lag(ctx, adm, true); err != nil {
		return err
	}
	// OffsetDelete is allowed once nobody subscribes to the topic.
	dels, err := adm.DeleteOffsets(ctx, fx.group, kadm.TopicsSet{fx.topic: {0: {}}})
	if err != nil {
		return fmt.Errorf("OffsetDelete: %w", err)
	}
	if e, ok := dels.Lookup(fx.topic, 0); !ok || e != nil {
		return fmt.Errorf("OffsetDelete of partition 0: %v (answered %v)", e, ok)
	}
	left, err := adm.FetchOffsets(ctx, fx.group)
	if err != nil {
		return fmt.Errorf("OffsetFetch after OffsetDelete: %w", err)
	}
	if o, ok := left.Lookup(fx.topic, 0); ok && o.At >= 0 {
		return fmt.Errorf("OffsetFetch after OffsetDelete still has partition 0 at %d", o.At)
	}
	if o, ok := left.Lookup(fx.topic, 1); !ok || o.At != 20 {
		return fmt.Errorf("OffsetFetch after OffsetDelete of partition 0: partition 1 is %+v (found %v), want 20", o, ok)
	}
	resp, err := adm.DeleteGroup(ctx, fx.group)
	if err != nil {
		return fmt.Errorf("DeleteGroups: %w", err)
	}
	if resp.Err != nil {
		return fmt.Errorf("DeleteGroups: %w", resp.Err)
	}
	all, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("ListGroups: %w", err)
	}
	if _, ok := all[fx.group]; ok {
		return fmt.Errorf("ListGroups still lists %s after DeleteGroups", fx.group)
	}
	offs, err := adm.FetchOffsets(ctx, fx.group)
	if err != nil {
		return fmt.Errorf("OffsetFetch after DeleteGroups: %w", err)
	}
	if len(offs) != 0 {
		return fmt.Errorf("OffsetFetch after DeleteGroups: %v, want no offsets", offs)
	}
	return nil
}

func (f *fg) adminDeleteTopics(ctx context.Context, adm *admin) error {
	topic := f.r.Name("fg-admin-delete")
	if err := createTopic(ctx, adm, topic, 2, nil); err != nil {
		return err
	}
	resps, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		return fmt.Errorf("DeleteTopics: %w", err)
	}
	if err := resps.Error(); err != nil {
		return fmt.Errorf("DeleteTopics: %w", err)
	}
	if err := check.Poll(ctx, 100*time.Millisecond, "topic gone from metadata", func() (bool, string, error) {
		t, err := adm.metadata(ctx, topic)
		if err != nil {
			return false, err.Error(), nil
		}
		if t.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			return false, fmt.Sprintf("still listed (%v, %d partitions)", kerr.ErrorForCode(t.ErrorCode), len(t.Partitions)), nil
		}
		return true, "", nil
	}); err != nil {
		return err
	}
	// kadm.DeleteTopic returns the topic's error as its error too.
	again, err := adm.DeleteTopic(ctx, topic)
	if !errors.Is(again.Err, kerr.UnknownTopicOrPartition) || !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("DeleteTopics of a deleted topic: %v / %v, want UNKNOWN_TOPIC_OR_PARTITION", err, again.Err)
	}
	return nil
}

// commitUnknownGroup sends OffsetCommit v8 and v9 for a group nobody joined,
// naming generation 1 and a member id: Kafka 4 answers v9 with
// GROUP_ID_NOT_FOUND and older versions with ILLEGAL_GENERATION, and does not
// create the group (a generation of -1 would).
func (f *fg) commitUnknownGroup(ctx context.Context, adm *admin, group string) error {
	topic := group
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return err
	}
	want := map[int16]int16{8: kerr.IllegalGeneration.Code, 9: kerr.GroupIDNotFound.Code}
	for _, v := range []int16{8, 9} {
		// The client negotiates the version itself: cap OffsetCommit at v.
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), v)
		cl, err := f.client(fmt.Sprintf("offset-commit-v%d", v), kgo.MaxVersions(vs))
		if err != nil {
			return err
		}
		defer cl.Close()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = group
		req.Generation = 1
		req.MemberID = "not-a-member"
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = 0
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("OffsetCommit v%d: %w", v, err)
		}
		if resp.Version != v {
			return fmt.Errorf("OffsetCommit sent as v%d, asked v%d", resp.Version, v)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("OffsetCommit v%d: answer has %d topics", v, len(resp.Topics))
		}
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != want[v] {
			return fmt.Errorf("OffsetCommit v%d to an unknown group: error %v, want %v", v, kerr.ErrorForCode(got), kerr.ErrorForCode(want[v]))
		}
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("DescribeGroups: %w", err)
	}
	if g, ok := described[group]; ok && g.State != "Dead" && g.Err == nil {
		return fmt.Errorf("the commits created group %s (state %s)", group, g.State)
	}
	return nil
}
