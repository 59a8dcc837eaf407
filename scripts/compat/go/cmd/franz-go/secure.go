package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"fjord/compat-go/internal/check"
	"fjord/compat-go/internal/secure"
)

// secureChecks is `franz-go --secure`: SCRAM over SASL_SSL for each
// credential of COMPAT_SECURE_SCRAM (a topic created, records produced and
// read back exactly), a wrong password refused with SASL_AUTHENTICATION_FAILED,
// SSL without a client certificate refused with the broker's TLS alert, and
// mutual TLS with the client certificate (package secure has the
// environment).
func secureChecks(r *check.Runner) {
	s, err := secure.FromEnv()
	if err != nil {
		fmt.Fprintf(os.Stderr, "franz-go --secure: %v\n", err)
		os.Exit(2)
	}
	const t = 30 * time.Second
	for _, c := range s.Creds {
		c := c
		r.Check(fmt.Sprintf("SASL_SSL %s as %s: produce %d records and read them back", c.Mechanism, c.User, secure.Records), t, func(ctx context.Context) error {
			tlsCfg, err := s.TLS(false)
			if err != nil {
				return err
			}
			return secureRoundTrip(ctx, r, strings.ToLower(c.Mechanism), s.SASLSSL, kgo.DialTLSConfig(tlsCfg), kgo.SASL(scramMechanism(c)))
		})
	}
	first := s.Creds[0]
	r.Check(fmt.Sprintf("SASL_SSL %s as %s with a wrong password: refused with SASL_AUTHENTICATION_FAILED", first.Mechanism, first.User), t, func(ctx context.Context) error {
		tlsCfg, err := s.TLS(false)
		if err != nil {
			return err
		}
		wrong := secure.Cred{Mechanism: first.Mechanism, User: first.User, Password: first.Password + "-wrong"}
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.SASLSSL), kgo.DialTLSConfig(tlsCfg), kgo.SASL(scramMechanism(wrong)))
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if ctx.Err() != nil {
			return fmt.Errorf("no answer before the deadline (%v), want an authentication error", err)
		}
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			return fmt.Errorf("Metadata with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		return nil
	})
	r.Check("SSL without a client certificate (ssl.client.auth=required): refused with a TLS alert", t, func(ctx context.Context) error {
		tlsCfg, err := s.TLS(false)
		if err != nil {
			return err
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.SSL), kgo.DialTLSConfig(tlsCfg))
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return secure.RefusedByTLSAlert(ctx, err)
	})
	r.Check(fmt.Sprintf("SSL with a client certificate (mutual TLS): produce %d records and read them back", secure.Records), t, func(ctx context.Context) error {
		tlsCfg, err := s.TLS(true)
		if err != nil {
			return err
		}
		return secureRoundTrip(ctx, r, "mtls", s.SSL, kgo.DialTLSConfig(tlsCfg))
	})
}

func scramMechanism(c secure.Cred) sasl.Mechanism {
	a := scram.Auth{User: c.User, Pass: c.Password}
	if c.Mechanism == "SCRAM-SHA-256" {
		return a.AsSha256Mechanism()
	}
	return a.AsSha512Mechanism()
}

// secureRoundTrip creates a one-partition topic through bootstrap with the
// given security options, produces secure.Records records (acks=all,
// idempotent: franz-go's defaults) and reads them back from the start.
func secureRoundTrip(ctx context.Context, r *check.Runner, tag, bootstrap string, sec ...kgo.Opt) error {
	topic := r.Name("sec-franz-go-" + tag)
	base := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.ClientID("fjord-compat-franz-go"), kgo.RetryTimeout(20 * time.Second)}
	cl, err := kgo.NewClient(append(base, sec...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := &admin{kadm.NewClient(cl), cl}
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return err
	}
	want := secure.Values(tag)
	var recs []*kgo.Record
	for _, v := range want {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cons, err := kgo.NewClient(append(append(base, sec...),
		kgo.ConsumePartitions(allPartitionsAtStart(topic, 1)), kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return err
	}
	defer cons.Close()
	got, err := pollUntil(ctx, cons, "read back", func(rs []*kgo.Record) bool { return len(rs) >= len(want) })
	if err != nil {
		return err
	}
	var values []string
	for _, rec := range got {
		values = append(values, string(rec.Value))
	}
	if err := secure.Same(values, want); err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("ListEndOffsets: %w", err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != int64(len(want)) {
		return fmt.Errorf("end offset %+v, want %d", o, len(want))
	}
	return nil
}
