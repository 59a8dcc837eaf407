"""What the Python compatibility runners share: the failure type, logging,
and running a list of named checks within a time budget."""

import sys
import time


class CheckFailed(Exception):
    """A check saw the broker behave other than Kafka would."""


def log(msg):
    print(msg, flush=True)


def run_checks(label, checks, budget, notes=()):
    """Runs each (name, fn) of `checks` in order; a check that raises
    CheckFailed or any client exception fails, and checks left when `budget`
    seconds are used up are reported as not run. Prints `notes`, then the
    summary; gives the exit code (0 when every check passed, 1 otherwise)."""
    failed = []
    started = time.monotonic()
    for name, fn in checks:
        if time.monotonic() - started > budget:
            print(f"FAIL: {name}: not run, {budget:.0f}s budget used up", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        try:
            fn()
        except CheckFailed as exc:
            print(f"FAIL: {name}: {exc}", file=sys.stderr, flush=True)
            failed.append(name)
        except Exception as exc:  # unexpected client exception
            print(f"FAIL: {name}: unexpected {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            failed.append(name)
    for note in notes:
        log(note)
    if failed:
        log(f"{label}: {len(failed)} of {len(checks)} checks failed: {', '.join(failed)}")
        return 1
    log(f"{label}: all {len(checks)} checks passed")
    return 0
