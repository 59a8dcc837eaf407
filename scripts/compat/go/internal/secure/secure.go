// Package secure is what the Go runners' `--secure` mode shares: the secured
// listeners and credentials from the environment (scripts/compat/security.py
// sets them, against Fjord and against Apache Kafka 4.4 configured the same
// way), the TLS configuration built from them, and the records a round trip
// writes and expects back.
//
// Environment (the same names for every runner's secured mode):
//
//	COMPAT_SECURE_SASL_SSL   host:port of the SASL_SSL listener
//	COMPAT_SECURE_SSL        host:port of the SSL listener (ssl.client.auth=required)
//	COMPAT_SECURE_CA         the CA certificate (PEM) the broker's certificate is checked against
//	COMPAT_SECURE_CERT       the client certificate (PEM) for mutual TLS
//	COMPAT_SECURE_KEY        its private key (PEM, unencrypted)
//	COMPAT_SECURE_SCRAM      MECHANISM:USER:PASSWORD[,MECHANISM:USER:PASSWORD...]; the first
//	                         one's user also tries a wrong password
package secure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// Records is how many records each round trip produces and reads back.
const Records = 20

// Cred is one SCRAM login: its mechanism (SCRAM-SHA-256 or SCRAM-SHA-512),
// user and password.
type Cred struct {
	Mechanism, User, Password string
}

// Settings are the secured listeners and the files and credentials to use.
type Settings struct {
	SASLSSL, SSL  string
	CA, Cert, Key string
	Creds         []Cred
}

// FromEnv reads the COMPAT_SECURE_* variables; every one is required.
func FromEnv() (*Settings, error) {
	s := &Settings{}
	for _, v := range []struct {
		name string
		dst  *string
	}{
		{"COMPAT_SECURE_SASL_SSL", &s.SASLSSL},
		{"COMPAT_SECURE_SSL", &s.SSL},
		{"COMPAT_SECURE_CA", &s.CA},
		{"COMPAT_SECURE_CERT", &s.Cert},
		{"COMPAT_SECURE_KEY", &s.Key},
	} {
		*v.dst = os.Getenv(v.name)
		if *v.dst == "" {
			return nil, fmt.Errorf("%s is not set", v.name)
		}
	}
	for _, c := range strings.Split(os.Getenv("COMPAT_SECURE_SCRAM"), ",") {
		parts := strings.SplitN(c, ":", 3)
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
			return nil, fmt.Errorf("COMPAT_SECURE_SCRAM: %q is not MECHANISM:USER:PASSWORD", c)
		}
		if parts[0] != "SCRAM-SHA-256" && parts[0] != "SCRAM-SHA-512" {
			return nil, fmt.Errorf("COMPAT_SECURE_SCRAM: mechanism %q is neither SCRAM-SHA-256 nor SCRAM-SHA-512", parts[0])
		}
		s.Creds = append(s.Creds, Cred{parts[0], parts[1], parts[2]})
	}
	return s, nil
}

// TLS is a client TLS configuration trusting only the test CA, with the
// client certificate when clientCert is true. ServerName stays empty: both
// clients set it from the address they dial, so the broker's certificate is
// checked against the host name (here the IP address 127.0.0.1, which its
// subjectAltName lists) as a user's client would check it.
func (s *Settings) TLS(clientCert bool) (*tls.Config, error) {
	ca, err := os.ReadFile(s.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", s.CA)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if clientCert {
		pair, err := tls.LoadX509KeyPair(s.Cert, s.Key)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Values are the record values a round trip tagged tag produces, in order.
func Values(tag string) []string {
	out := make([]string, Records)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", tag, i)
	}
	return out
}

// Same reports how got differs from want (nil when equal, element for element).
func Same(got, want []string) error {
	if len(got) != len(want) {
		return fmt.Errorf("read %d records %q, want %d %q", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("record %d is %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
	return nil
}

// RefusedByTLSAlert checks that err, a request's error on a TLS listener that
// requires a client certificate when none was given, is the broker's TLS
// alert (rustls answers certificate_required, Kafka's JSSE bad_certificate)
// and came before ctx's deadline.
func RefusedByTLSAlert(ctx context.Context, err error) error {
	if err == nil {
		return fmt.Errorf("answered without a client certificate")
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no answer before the deadline (%v), want a TLS alert", err)
	}
	if !strings.Contains(err.Error(), "remote error: tls: ") {
		return fmt.Errorf("%v, want the broker's TLS alert", err)
	}
	return nil
}
