// franz-go compatibility runner: produce/consume with every codec, consumer
// groups with each client-side balancer, a share group (KIP-932),
// GroupTransactSession exactly-once, and
// kadm admin calls. Run against Fjord and against Apache Kafka (the oracle):
//
//	COMPAT_BROKER=fjord|kafka target/compat-go/franz-go 127.0.0.1:PORT
//
// With `--secure` instead of the address it runs the secured checks of
// secure.go (SCRAM over SASL_SSL, mutual TLS), as scripts/compat/security.py
// does on both brokers.
//
// See scripts/compat/FINDINGS.md ("franz-go") for what it checks and what
// differs on Fjord.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"fjord/compat-go/internal/check"
)

type fg struct {
	r *check.Runner
}

func main() {
	r := check.New("franz-go")
	f := &fg{r: r}
	registerKnown(r)
	if r.Secure {
		secureChecks(r)
		r.Finish()
	}

	for _, c := range codecs {
		c := c
		r.Check("produce-consume "+c.name+": keys, headers, timestamps, batch codec", 30*time.Second, func(ctx context.Context) error {
			return f.produceConsume(ctx, c)
		})
	}
	for _, b := range balancers {
		b := b
		r.Check("group "+b.ProtocolName()+": two members share 6 partitions, handover on leave, no loss or duplicate", 40*time.Second, func(ctx context.Context) error {
			return f.groupBalancer(ctx, groupMode{bal: b})
		})
	}
	// The consumer group protocol (KIP-848): the broker assigns, with the
	// assignor franz-go derives from the first balancer.
	for _, b := range []kgo.GroupBalancer{kgo.RangeBalancer(), kgo.StickyBalancer()} {
		mode := groupMode{bal: b, serverSide: true}
		r.Check("group "+mode.name()+" (KIP-848 ServerSideBalancer): two members share 6 partitions, handover on leave, no loss or duplicate, ConsumerGroupDescribe and ListGroups show a consumer group", 60*time.Second, func(ctx context.Context) error {
			return f.groupBalancer(ctx, mode)
		})
	}
	r.Check("transactions: GroupTransactSession consume-transform-produce exactly once, aborted round hidden from read_committed, no AddPartitionsToTxn/AddOffsetsToTxn on the wire with transaction.version 2", 60*time.Second, f.groupTransactSession)
	r.Check("share group (KIP-932): two share consumers read one partition, every record delivered and accepted once", 60*time.Second, f.shareTwoConsumers)
	f.adminChecks()
	r.Finish()
}

// registerKnown lists the checks that behave differently on Fjord, each with
// its FINDINGS.md entry ("franz-go" section), e.g.
//
//	r.Known("CHECK NAME", "what differs")
//
// None as of 2026-12-01.
func registerKnown(r *check.Runner) {
	_ = r
}

func (f *fg) opts(label string, extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{
		kgo.SeedBrokers(f.r.Bootstrap),
		kgo.ClientID("fjord-compat-franz-go"),
		kgo.RetryTimeout(30 * time.Second),
	}
	if f.r.Debug {
		o = append(o, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string { return "[" + label + "] " })))
	}
	return append(o, extra...)
}

func (f *fg) client(label string, extra ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(f.opts(label, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("new client %s: %w", label, err)
	}
	return cl, nil
}

// admin is a kadm client with its kgo client, for direct requests.
type admin struct {
	*kadm.Client
	cl *kgo.Client
}

func (f *fg) admin(label string) (*admin, func(), error) {
	cl, err := f.client(label)
	if err != nil {
		return nil, nil, err
	}
	return &admin{kadm.NewClient(cl), cl}, cl.Close, nil
}

// createTopic creates a topic (replication factor -1: the broker's default)
// and waits until every partition has a leader.
func createTopic(ctx context.Context, adm *admin, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err != nil {
		return fmt.Errorf("CreateTopics %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("CreateTopics %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return waitLeaders(ctx, adm, topic, partitions)
}

// metadata sends a Metadata request for one topic directly (kadm.ListTopics
// answers from the client's metadata cache, which may be up to 5 s old).
func (adm *admin) metadata(ctx context.Context, topic string) (*kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, adm.cl)
	if err != nil {
		return nil, err
	}
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.Topic != nil && *t.Topic == topic {
			return t, nil
		}
	}
	return nil, fmt.Errorf("metadata response without %s", topic)
}

func waitLeaders(ctx context.Context, adm *admin, topic string, partitions int32) error {
	return check.Poll(ctx, 50*time.Millisecond, "metadata for "+topic, func() (bool, string, error) {
		t, err := adm.metadata(ctx, topic)
		if err != nil {
			return false, err.Error(), nil
		}
		if t.ErrorCode != 0 {
			return false, fmt.Sprintf("topic error %v", kerr.ErrorForCode(t.ErrorCode)), nil
		}
		if int32(len(t.Partitions)) != partitions {
			return false, fmt.Sprintf("%d of %d partitions", len(t.Partitions), partitions), nil
		}
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false, fmt.Sprintf("partition %d: leader %d, %v", p.Partition, p.Leader, kerr.ErrorForCode(p.ErrorCode)), nil
			}
		}
		return true, "", nil
	})
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// fetchErr returns the first fetch error that is not a poll deadline.
func fetchErr(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(t string, p int32, err error) {
		if first == nil && !isCtxErr(err) {
			first = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		}
	})
	return first
}

// pollUntil polls cl until done(all records so far) is true.
func pollUntil(ctx context.Context, cl *kgo.Client, what string, done func([]*kgo.Record) bool) ([]*kgo.Record, error) {
	var all []*kgo.Record
	for !done(all) {
		if ctx.Err() != nil {
			return all, fmt.Errorf("%s: %d records after the deadline: %w", what, len(all), ctx.Err())
		}
		fs := cl.PollFetches(ctx)
		if err := fetchErr(fs); err != nil {
			return all, fmt.Errorf("%s: %w", what, err)
		}
		all = append(all, fs.Records()...)
	}
	return all, nil
}

func allPartitionsAtStart(topic string, partitions int32) map[string]map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		m[p] = kgo.NewOffset().AtStart()
	}
	return map[string]map[int32]kgo.Offset{topic: m}
}

func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}
