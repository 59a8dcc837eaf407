package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"fjord/compat-go/internal/check"
	"fjord/compat-go/internal/secure"
)

// secureChecks is `sarama --secure`, for the newest and the default Version
// (SaslHandshake v1 with SaslAuthenticate v2, and v1 with v0): SCRAM over
// SASL_SSL for each credential of COMPAT_SECURE_SCRAM (a topic created,
// records produced and read back exactly), a wrong password refused with
// SASL_AUTHENTICATION_FAILED, SSL without a client certificate refused with
// the broker's TLS alert, and mutual TLS with the client certificate
// (package secure has the environment).
func secureChecks(r *check.Runner) {
	s, err := secure.FromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sarama --secure: %v\n", err)
		os.Exit(2)
	}
	const t = 30 * time.Second
	for _, v := range []struct {
		label   string
		version sarama.KafkaVersion
	}{
		{"newest", sarama.MaxVersion},
		{"default", sarama.DefaultVersion},
	} {
		sv := &sr{r: r, version: v.version, label: v.label}
		for _, c := range s.Creds {
			c := c
			r.Check(sv.name(fmt.Sprintf("SASL_SSL %s as %s: produce %d records and read them back", c.Mechanism, c.User, secure.Records)), t, func(ctx context.Context) error {
				cfg, err := sv.secureConfig(s, &c, false)
				if err != nil {
					return err
				}
				return sv.secureRoundTrip(ctx, strings.ToLower(c.Mechanism), s.SASLSSL, cfg)
			})
		}
		first := s.Creds[0]
		r.Check(sv.name(fmt.Sprintf("SASL_SSL %s as %s with a wrong password: refused with SASL_AUTHENTICATION_FAILED", first.Mechanism, first.User)), t, func(ctx context.Context) error {
			wrong := secure.Cred{Mechanism: first.Mechanism, User: first.User, Password: first.Password + "-wrong"}
			cfg, err := sv.secureConfig(s, &wrong, false)
			if err != nil {
				return err
			}
			err, answered := connectWithin(ctx, s.SASLSSL, cfg)
			if !answered {
				return fmt.Errorf("NewClient with a wrong password: no answer before the deadline, want an authentication error")
			}
			if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
				return fmt.Errorf("NewClient with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			return nil
		})
		r.Check(sv.name("SSL without a client certificate (ssl.client.auth=required): refused with a TLS alert"), t, func(ctx context.Context) error {
			cfg, err := sv.secureConfig(s, nil, false)
			if err != nil {
				return err
			}
			err, _ = connectWithin(ctx, s.SSL, cfg)
			return secure.RefusedByTLSAlert(ctx, err)
		})
		r.Check(sv.name(fmt.Sprintf("SSL with a client certificate (mutual TLS): produce %d records and read them back", secure.Records)), t, func(ctx context.Context) error {
			cfg, err := sv.secureConfig(s, nil, true)
			if err != nil {
				return err
			}
			return sv.secureRoundTrip(ctx, "mtls", s.SSL, cfg)
		})
	}
}

// secureConfig is the runner's usual configuration over TLS trusting the
// test CA, with SCRAM as c when c is set (SASL_SSL) and the client
// certificate when clientCert is true (SSL).
func (s *sr) secureConfig(st *secure.Settings, c *secure.Cred, clientCert bool) (*sarama.Config, error) {
	tlsCfg, err := st.TLS(clientCert)
	if err != nil {
		return nil, err
	}
	cfg := s.config()
	cfg.Metadata.Retry.Max = 3
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = tlsCfg
	if c != nil {
		cfg.Net.SASL.Enable = true
		cfg.Net.SASL.Handshake = true
		cfg.Net.SASL.Version = sarama.SASLHandshakeV1
		cfg.Net.SASL.User = c.User
		cfg.Net.SASL.Password = c.Password
		hashed := scram.Auth{User: c.User, Pass: c.Password}
		var mech func() sasl.Mechanism
		if c.Mechanism == "SCRAM-SHA-256" {
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
			mech = hashed.AsSha256Mechanism
		} else {
			cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
			mech = hashed.AsSha512Mechanism
		}
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{mech: mech()} }
	}
	return cfg, nil
}

// scramClient is the SCRAM conversation Sarama asks its user for
// (sarama.SCRAMClient), carried out by franz-go's RFC 5802 implementation
// (already a module of this runner). Begin is given the configured user and
// password, which the mechanism was built with.
type scramClient struct {
	mech    sasl.Mechanism
	session sasl.Session
	first   []byte
	done    bool
}

func (c *scramClient) Begin(_, _, _ string) error {
	session, first, err := c.mech.Authenticate(context.Background(), "")
	c.session, c.first = session, first
	return err
}

func (c *scramClient) Step(challenge string) (string, error) {
	if c.first != nil {
		first := c.first
		c.first = nil
		return string(first), nil
	}
	done, resp, err := c.session.Challenge([]byte(challenge))
	c.done = done
	return string(resp), err
}

func (c *scramClient) Done() bool { return c.done }

// secureRoundTrip creates a one-partition topic through bootstrap with cfg,
// produces secure.Records records with the sync producer and reads them back
// with the partition consumer from the oldest offset.
func (s *sr) secureRoundTrip(ctx context.Context, tag, bootstrap string, cfg *sarama.Config) error {
	topic := s.topic("sec-" + tag)
	cl, err := sarama.NewClient([]string{bootstrap}, cfg)
	if err != nil {
		return fmt.Errorf("NewClient: %w", err)
	}
	defer cl.Close()
	adm, err := sarama.NewClusterAdminFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewClusterAdmin: %w", err)
	}
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	if err := check.Poll(ctx, 50*time.Millisecond, "leader of "+topic, func() (bool, string, error) {
		if err := cl.RefreshMetadata(topic); err != nil {
			return false, err.Error(), nil
		}
		if _, err := cl.Leader(topic, 0); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	}); err != nil {
		return err
	}
	prod, err := sarama.NewSyncProducerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewSyncProducer: %w", err)
	}
	defer prod.Close()
	want := secure.Values(tag)
	var msgs []*sarama.ProducerMessage
	for _, v := range want {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)})
	}
	if err := prod.SendMessages(msgs); err != nil {
		return fmt.Errorf("SendMessages: %w", err)
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		return fmt.Errorf("NewConsumer: %w", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return fmt.Errorf("ConsumePartition: %w", err)
	}
	defer pc.Close()
	var got []string
	for len(got) < len(want) {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case e := <-pc.Errors():
			return fmt.Errorf("partition consumer: %w", e)
		case <-ctx.Done():
			return fmt.Errorf("read back: %d of %d records before the deadline: %q", len(got), len(want), got)
		}
	}
	if err := secure.Same(got, want); err != nil {
		return err
	}
	end, err := cl.GetOffset(topic, 0, sarama.OffsetNewest)
	if err != nil {
		return fmt.Errorf("GetOffset: %w", err)
	}
	if end != int64(len(want)) {
		return fmt.Errorf("end offset %d, want %d", end, len(want))
	}
	return nil
}

// connectWithin opens (and closes) a client of addr with cfg; gives
// NewClient's error and true, or nil and false when ctx ends first.
func connectWithin(ctx context.Context, addr string, cfg *sarama.Config) (error, bool) {
	done := make(chan error, 1)
	go func() {
		cl, err := sarama.NewClient([]string{addr}, cfg)
		if err == nil {
			cl.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err, true
	case <-ctx.Done():
		return nil, false
	}
}
