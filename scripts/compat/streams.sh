#!/usr/bin/env bash
# Kafka Streams 4.4 compatibility runner: an exactly-once (exactly_once_v2)
# word count with a persistent store and a repartition topic, stopped and
# killed partway through its input and restarted; the counts must stay exact.
# The Java code is in scripts/compat/streams/ (built into target/compat-streams
# by scripts/install-test-deps, or here when missing or out of date).
#
# Usage: scripts/compat/streams.sh BOOTSTRAP      (env COMPAT_BROKER=fjord|kafka)
#   STREAMS_WORK_DIR   application logs and state (default
#                      target/compat-logs/$COMPAT_BROKER/kafka-streams, emptied first)
#   STREAMS_CLIENT_LOG_LEVEL=DEBUG   log the clients' requests in the app logs
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BOOTSTRAP" >&2; exit 2; }
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export COMPAT_BROKER="${COMPAT_BROKER:-fjord}"
WORK="${STREAMS_WORK_DIR:-$ROOT/target/compat-logs/$COMPAT_BROKER/kafka-streams}"
rm -rf "$WORK"
mkdir -p "$WORK"

CP="$("$ROOT/scripts/compat/streams/build")"
level=()
[ -n "${STREAMS_CLIENT_LOG_LEVEL:-}" ] && level=("-Dcompat.clients.level=$STREAMS_CLIENT_LOG_LEVEL")
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${level[@]}" \
    -cp "$CP" dev.fjord.compat.streams.StreamsCompat "$1" "$WORK"
