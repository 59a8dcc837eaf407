#!/usr/bin/env bash
# Builds the Go compatibility runners (franz-go, Sarama) and the franz-go
# producer latency run of scripts/bench-compare into target/compat-go/.
# Idempotent and incremental: `go build` only relinks what changed (about half a
# second when nothing did). Modules come through Go's usual module download,
# pinned by go.mod/go.sum; GOCACHE and GOMODCACHE stay at Go's defaults.
#
# Usage: scripts/compat/go/build.sh        (prints the binaries' directory)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUT="$ROOT/target/compat-go"

GO="${GO:-go}"
if ! command -v "$GO" >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
        GO=/usr/local/go/bin/go
    else
        echo "compat-go: no Go toolchain (go) on PATH; run scripts/install-test-deps" >&2
        exit 1
    fi
fi

mkdir -p "$OUT"
cd "$HERE"
"$GO" build -buildvcs=false -trimpath -o "$OUT/" ./cmd/franz-go ./cmd/sarama ./cmd/franz-go-producer-perf
echo "$OUT"
