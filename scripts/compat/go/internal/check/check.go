// Package check is the small harness the Go compatibility runners share: named
// checks with a deadline each, "ok: …" / "FAIL: …" lines, known Fjord
// differences printed as skips, unique names per run, and polling helpers.
//
// Runner contract (scripts/compat/run): `RUNNER BOOTSTRAP`, COMPAT_BROKER set
// to fjord or kafka; exit status 0 only if every check passed. `RUNNER
// --secure` runs the secured checks instead (scripts/compat/security.py; the
// listeners and credentials come from the environment, see package secure).
//
// Environment:
//
//	COMPAT_BROKER=fjord|kafka   the broker under test (default fjord)
//	COMPAT_RUN_KNOWN=1          run checks listed as known differences anyway
//	COMPAT_ONLY=SUBSTRING       run only checks whose name contains SUBSTRING
//	COMPAT_DEBUG=1              client debug logging to stderr
package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// Runner runs checks in order and counts the results.
type Runner struct {
	Client    string // "franz-go", "sarama"
	Bootstrap string
	Broker    string // COMPAT_BROKER
	RunID     string // unique per run, for topic and group names
	Debug     bool
	Secure    bool // `--secure`: Bootstrap is empty, the listeners are in the environment

	known   map[string]string // check name -> reason (only when Broker == fjord)
	runKnow bool
	only    string
	start   time.Time

	passed, failed, skipped int
	failures                []string
}

// New reads the command line and environment. It exits with status 2 on a
// usage error.
func New(client string) *Runner {
	if len(os.Args) != 2 || os.Args[1] == "" {
		fmt.Fprintf(os.Stderr, "usage: %s BOOTSTRAP | --secure   (env COMPAT_BROKER=fjord|kafka)\n", os.Args[0])
		os.Exit(2)
	}
	broker := os.Getenv("COMPAT_BROKER")
	if broker == "" {
		broker = "fjord"
	}
	if broker != "fjord" && broker != "kafka" {
		fmt.Fprintf(os.Stderr, "COMPAT_BROKER must be fjord or kafka, not %q\n", broker)
		os.Exit(2)
	}
	secure := os.Args[1] == "--secure"
	bootstrap := os.Args[1]
	if secure {
		bootstrap = ""
	}
	return &Runner{
		Client:    client,
		Bootstrap: bootstrap,
		Secure:    secure,
		Broker:    broker,
		RunID:     fmt.Sprintf("%x%04x", time.Now().UnixNano()/int64(time.Millisecond)%0xffffffff, os.Getpid()%0xffff),
		Debug:     os.Getenv("COMPAT_DEBUG") == "1",
		known:     map[string]string{},
		runKnow:   os.Getenv("COMPAT_RUN_KNOWN") == "1",
		only:      os.Getenv("COMPAT_ONLY"),
		start:     time.Now(),
	}
}

// Known registers a check that is known to behave differently on Fjord; the
// reason names the FINDINGS.md entry. Against Kafka the check always runs.
func (r *Runner) Known(name, reason string) { r.known[name] = reason }

// Name returns a name unique to this run: "<prefix>-<runid>".
func (r *Runner) Name(prefix string) string { return prefix + "-" + r.RunID }

// Check runs fn with a context that expires after timeout. A panic or an
// error fails the check; a check that ignores its context is abandoned 5 s
// after the deadline and counts as failed.
func (r *Runner) Check(name string, timeout time.Duration, fn func(ctx context.Context) error) bool {
	if r.only != "" && !strings.Contains(name, r.only) {
		return true
	}
	if reason, ok := r.known[name]; ok && r.Broker == "fjord" && !r.runKnow {
		fmt.Printf("KNOWN DIFFERENCE: %s: %s (FINDINGS.md)\n", name, reason)
		r.skipped++
		return false
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		done <- fn(ctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout + 5*time.Second):
		err = fmt.Errorf("abandoned: still running 5s after its %v deadline", timeout)
	}
	if err == nil && ctx.Err() != nil && time.Since(started) > timeout {
		err = fmt.Errorf("deadline of %v exceeded", timeout)
	}
	took := time.Since(started).Round(10 * time.Millisecond)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (deadline %v)", err, timeout)
		}
		fmt.Printf("FAIL: %s (%v): %v\n", name, took, err)
		r.failed++
		r.failures = append(r.failures, name)
		return false
	}
	fmt.Printf("ok: %s (%v)\n", name, took)
	r.passed++
	return true
}

// Note prints an informational line (not a check).
func (r *Runner) Note(format string, args ...any) {
	fmt.Printf("note: "+format+"\n", args...)
}

// Finish prints the summary and exits: 0 only if no check failed.
func (r *Runner) Finish() {
	fmt.Printf("%s against %s: %d checks passed, %d failed, %d skipped as known differences (%.1fs)\n",
		r.Client, r.Broker, r.passed, r.failed, r.skipped, time.Since(r.start).Seconds())
	if r.failed > 0 {
		fmt.Printf("failed checks: %s\n", strings.Join(r.failures, "; "))
		os.Exit(1)
	}
	if r.passed == 0 && r.skipped == 0 {
		fmt.Println("no check ran")
		os.Exit(1)
	}
	os.Exit(0)
}

// Poll calls cond every interval until it returns true or an error, or ctx
// ends; the last "not yet" reason is part of the timeout error.
func Poll(ctx context.Context, interval time.Duration, what string, cond func() (bool, string, error)) error {
	last := ""
	for {
		ok, why, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			if last != "" {
				return fmt.Errorf("%s: gave up at the deadline: %s", what, last)
			}
			return fmt.Errorf("%s: gave up at the deadline", what)
		case <-time.After(interval):
		}
	}
}
