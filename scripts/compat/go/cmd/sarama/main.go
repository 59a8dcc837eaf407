// Sarama compatibility runner: sync and async idempotent acks=all producers
// (every codec), the partition consumer, a ConsumerGroup that marks, commits
// and resumes after a restart, and the offset manager. Everything runs twice:
// with Version set to the newest Kafka version Sarama knows, and with Sarama's
// default Version (the older protocol path). Run against Fjord and against
// Apache Kafka (the oracle):
//
//	COMPAT_BROKER=fjord|kafka target/compat-go/sarama 127.0.0.1:PORT
//
// With `--secure` instead of the address it runs the secured checks of
// secure.go (SCRAM over SASL_SSL, mutual TLS), as scripts/compat/security.py
// does on both brokers.
//
// See scripts/compat/FINDINGS.md ("Sarama") for what it checks and what
// differs on Fjord.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/IBM/sarama"

	"fjord/compat-go/internal/check"
)

type sr struct {
	r       *check.Runner
	version sarama.KafkaVersion
	label   string // "newest" / "default", part of check and topic names
}

func main() {
	r := check.New("sarama")
	if r.Debug {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	registerKnown(r)
	if r.Secure {
		secureChecks(r)
		r.Finish()
	}
	for _, v := range []struct {
		label   string
		version sarama.KafkaVersion
	}{
		{"newest", sarama.MaxVersion},
		{"default", sarama.DefaultVersion},
	} {
		s := &sr{r: r, version: v.version, label: v.label}
		s.checks()
	}
	r.Finish()
}

// registerKnown lists the checks that behave differently on Fjord, each with
// its FINDINGS.md entry ("Sarama" section), e.g.
//
//	r.Known("CHECK NAME", "what differs")
//
// None as of 2026-12-01.
func registerKnown(r *check.Runner) {
	_ = r
}

func (s *sr) name(what string) string {
	return fmt.Sprintf("[Version %s (%s)] %s", s.version, s.label, what)
}

func (s *sr) topic(prefix string) string {
	return s.r.Name("sarama-" + s.label + "-" + prefix)
}

func (s *sr) checks() {
	r := s.r
	const t = 30 * time.Second
	r.Check(s.name("admin CreateTopic, metadata with leaders"), t, s.adminCreate)
	r.Check(s.name("sync producer (idempotent, acks=all): keys, headers, timestamps, partition consumer reads them back"), t, s.syncProducer)
	for _, c := range []struct {
		name  string
		codec sarama.CompressionCodec
	}{
		{"gzip", sarama.CompressionGZIP},
		{"snappy", sarama.CompressionSnappy},
		{"lz4", sarama.CompressionLZ4},
		{"zstd", sarama.CompressionZSTD},
	} {
		r.Check(s.name("sync producer "+c.name+" round trip"), t, func(ctx context.Context) error {
			return s.codecRoundTrip(ctx, c.name, c.codec)
		})
	}
	r.Check(s.name("async producer (idempotent, acks=all): a success for every message, offsets contiguous"), t, s.asyncProducer)
	r.Check(s.name("ConsumerGroup: handler marks and commits half, a restarted group resumes at the committed offsets"), 45*time.Second, s.consumerGroup)
	r.Check(s.name("offset manager: mark/commit/fetch with metadata, reset to a lower offset"), t, s.offsetManager)
}

func (s *sr) config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = s.version
	c.ClientID = "fjord-compat-sarama"
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Metadata.Retry.Max = 20
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Retry.Max = 10
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Consumer.Return.Errors = true
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.MaxWaitTime = 500 * time.Millisecond
	c.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Rebalance.Timeout = 10 * time.Second
	return c
}

func (s *sr) client(c *sarama.Config) (sarama.Client, error) {
	if c == nil {
		c = s.config()
	}
	cl, err := sarama.NewClient([]string{s.r.Bootstrap}, c)
	if err != nil {
		return nil, fmt.Errorf("NewClient: %w", err)
	}
	return cl, nil
}

// createTopic creates a topic with ClusterAdmin and waits until the client's
// metadata has a leader for every partition.
func (s *sr) createTopic(ctx context.Context, topic string, partitions int32) error {
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		cl.Close()
		return fmt.Errorf("NewClusterAdmin: %w", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	return check.Poll(ctx, 50*time.Millisecond, "metadata for "+topic, func() (bool, string, error) {
		if err := cl.RefreshMetadata(topic); err != nil {
			return false, err.Error(), nil
		}
		ps, err := cl.Partitions(topic)
		if err != nil {
			return false, err.Error(), nil
		}
		if int32(len(ps)) != partitions {
			return false, fmt.Sprintf("%d of %d partitions", len(ps), partitions), nil
		}
		for _, p := range ps {
			if _, err := cl.Leader(topic, p); err != nil {
				return false, fmt.Sprintf("partition %d: %v", p, err), nil
			}
		}
		return true, "", nil
	})
}

func (s *sr) adminCreate(ctx context.Context) error {
	topic := s.topic("create")
	if err := s.createTopic(ctx, topic, 3); err != nil {
		return err
	}
	cl, err := s.client(nil)
	if err != nil {
		return err
	}
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		cl.Close()
		return err
	}
	defer adm.Close()
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		return fmt.Errorf("DescribeTopics: %w", err)
	}
	if len(md) != 1 || md[0].Err != sarama.ErrNoError || len(md[0].Partitions) != 3 {
		return fmt.Errorf("DescribeTopics: %+v, want one topic with 3 partitions", md)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false)
	if !errorIs(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("CreateTopic of an existing topic: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	return nil
}
