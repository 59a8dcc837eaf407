#!/usr/bin/env bash
# Kafka Connect 4.4 (standalone) compatibility runner: FileStreamSource reads
# an input file into a topic, FileStreamSink writes the topic to an output
# file. The output must equal the input; after Connect is stopped, more lines
# appended and Connect started again, the output must hold every line exactly
# once. The source's offsets are in the standalone worker's offsets file, the
# sink's consumer group commits its offsets to the broker.
#
# Connect runs as `scripts/peers/kafka tool connect-standalone` would run it
# (ConnectStandalone on the peer's class path), with two additions: the
# AppInfoParser shim in scripts/compat/connect/shim (connect-file 4.3.1, the
# newest published, calls a class Kafka 4.4 moved; without the shim both
# connectors fail with NoClassDefFoundError), and INFO logging
# (scripts/compat/connect/log4j2.properties) so the worker's logs show the
# clients' errors.
#
# Usage: scripts/compat/connect.sh BOOTSTRAP      (env COMPAT_BROKER=fjord|kafka)
#   CONNECT_WORK_DIR   worker config, files and logs (default
#                      target/compat-logs/$COMPAT_BROKER/kafka-connect, emptied first)
#   CONNECT_WAIT       seconds to wait for each condition (default 60)
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 BOOTSTRAP" >&2; exit 2; }
BOOTSTRAP="$1"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
export COMPAT_BROKER="${COMPAT_BROKER:-fjord}"
WORK="${CONNECT_WORK_DIR:-$ROOT/target/compat-logs/$COMPAT_BROKER/kafka-connect}"
WAIT="${CONNECT_WAIT:-60}"
PEER="$ROOT/scripts/peers/kafka"
rm -rf "$WORK"
mkdir -p "$WORK"

# The class path: Kafka 4.4's jars, then the compiled shim (rebuilt only
# when its source changes).
PEER_CP="$("$PEER" classpath)"
SHIM_SRC="$ROOT/scripts/compat/connect/shim"
SHIM_OUT="$ROOT/target/compat-connect/shim"
shim_hash="$( (cd "$SHIM_SRC" && find . -name '*.java' | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$SHIM_OUT/.built" 2>/dev/null)" != "$shim_hash" ]; then
    rm -rf "$SHIM_OUT"
    mkdir -p "$SHIM_OUT"
    javac -nowarn -d "$SHIM_OUT" -cp "$PEER_CP" $(find "$SHIM_SRC" -name '*.java') \
        || { echo "FAIL: could not compile $SHIM_SRC"; exit 1; }
    echo "$shim_hash" >"$SHIM_OUT/.built"
fi
CONNECT_CP="$PEER_CP:$SHIM_OUT"

RUN_ID="$(date +%s)$$"
TOPIC="fjc-connect-$RUN_ID"
SOURCE="fjc-file-source-$RUN_ID"
SINK="fjc-file-sink-$RUN_ID"
GROUP="connect-$SINK"
INPUT="$WORK/input.txt"
OUTPUT="$WORK/output.txt"
REST_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
REST="http://127.0.0.1:$REST_PORT"

FAILURES=0
CONNECT_PID=""
RUNS=0

ok() { echo "ok: $*"; }
note() { echo "note: $*"; }
fail() {
    echo "FAIL: $*"
    FAILURES=$((FAILURES + 1))
}
# A check that fails against Fjord for a documented reason
# (FINDINGS.md, "Kafka Connect 4.4"): known_fjord CHECK-NAME REASON
declare -A KNOWN_FJORD=()
fail_check() {
    local name="$1"; shift
    if [ "$COMPAT_BROKER" = fjord ] && [ -n "${KNOWN_FJORD[$name]:-}" ]; then
        echo "KNOWN DIFFERENCE: $name: ${KNOWN_FJORD[$name]} (FINDINGS.md) -- got: $*"
    else
        fail "$name: $*"
    fi
}
cleanup() {
    if [ -n "$CONNECT_PID" ] && kill -0 "$CONNECT_PID" 2>/dev/null; then
        kill -KILL "$CONNECT_PID" 2>/dev/null || true
        wait "$CONNECT_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

finish() {
    cleanup
    CONNECT_PID=""
    if [ "$FAILURES" -eq 0 ]; then
        echo "connect: every check passed"
        exit 0
    fi
    echo "connect: $FAILURES check(s) failed (logs in $WORK)"
    exit 1
}

# poll SECONDS COMMAND...: run COMMAND until it succeeds or SECONDS pass.
poll() {
    local secs="$1"; shift
    local deadline=$((SECONDS + secs))
    while ! "$@"; do
        if [ -n "$CONNECT_PID" ] && ! kill -0 "$CONNECT_PID" 2>/dev/null; then
            echo "connect: the worker exited; last lines of its log:" >&2
            tail -n 30 "$WORK/connect-$RUNS.log" | sed 's/^/    /' >&2
            return 1
        fi
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

# --- configuration -------------------------------------------------------------
cat >"$WORK/worker.properties" <<EOF
bootstrap.servers=$BOOTSTRAP
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
# Standalone keeps source offsets in this file; sink offsets are the sink
# consumer group's, committed to the broker.
offset.storage.file.filename=$WORK/connect.offsets
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:$REST_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$REST_PORT
# connect-file is on the class path (scripts/peers/pom.xml); no plugin.path.
# Its ServiceLoader manifests are enough (no slow class scan).
plugin.discovery=service_load
EOF
cat >"$WORK/source.properties" <<EOF
name=$SOURCE
connector.class=org.apache.kafka.connect.file.FileStreamSourceConnector
tasks.max=1
file=$INPUT
topic=$TOPIC
# Connect creates the topic (KIP-158): one partition keeps the lines in order.
topic.creation.default.partitions=1
topic.creation.default.replication.factor=-1
EOF
cat >"$WORK/sink.properties" <<EOF
name=$SINK
connector.class=org.apache.kafka.connect.file.FileStreamSinkConnector
tasks.max=1
file=$OUTPUT
topics=$TOPIC
EOF

# write_lines FROM TO: lines FROM..TO of the known text (unique lines).
# ASCII only: FileStreamSourceTask counts the characters it has read as its
# offset and skips that many bytes on restart, so multi-byte UTF-8 would
# make it resume early even against Kafka (FINDINGS.md, "Kafka Connect 4.4").
write_lines() {
    python3 - "$1" "$2" >>"$INPUT" <<'PY'
import random, sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
words = ["fjord", "kafka", "connect", "sink", "source", "offset", "tab\there", "quote\"d",
         "back\\slash", "semi;colon", "{\"json\": [1, 2]}", "x" * 300, "<tag attr='v'/>"]
for n in range(lo, hi + 1):
    r = random.Random(n)
    print("line %06d %s" % (n, " ".join(r.choice(words) for _ in range(r.randint(0, 12)))))
PY
}

start_connect() {
    RUNS=$((RUNS + 1))
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
        -Dlog4j2.configurationFile="$ROOT/scripts/compat/connect/log4j2.properties" \
        -cp "$CONNECT_CP" org.apache.kafka.connect.cli.ConnectStandalone \
        "$WORK/worker.properties" "$WORK/source.properties" "$WORK/sink.properties" \
        >"$WORK/connect-$RUNS.log" 2>&1 </dev/null &
    CONNECT_PID=$!
    note "Connect standalone run $RUNS started (pid $CONNECT_PID, REST $REST, log $WORK/connect-$RUNS.log)"
}

# Stop with SIGTERM (Connect's shutdown hook stops the connectors, which
# commit their offsets) and wait for the JVM to exit.
stop_connect() {
    local pid="$CONNECT_PID" status=0 deadline=$((SECONDS + WAIT))
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
    wait "$pid" 2>/dev/null || status=$?
    CONNECT_PID=""
    # 143: ended by SIGTERM after the shutdown hook ran.
    if { [ "$status" -eq 0 ] || [ "$status" -eq 143 ]; } && grep -q "Kafka Connect stopped" "$WORK/connect-$RUNS.log"; then
        ok "Connect stopped cleanly on SIGTERM (exit status $status, \"Kafka Connect stopped\")"
    else
        fail_check stop "Connect exited with status $status after SIGTERM (log $WORK/connect-$RUNS.log)"
    fi
}

connectors_running() {
    local c s
    for c in "$SOURCE" "$SINK"; do
        s="$(curl -fsS "$REST/connectors/$c/status" 2>/dev/null)" || return 1
        python3 - "$s" <<'PY' || return 1
import json, sys
s = json.loads(sys.argv[1])
ok = s["connector"]["state"] == "RUNNING" and len(s["tasks"]) == 1 and all(t["state"] == "RUNNING" for t in s["tasks"])
sys.exit(0 if ok else 1)
PY
    done
}

output_equals_input() { [ -f "$OUTPUT" ] && cmp -s "$INPUT" "$OUTPUT"; }

# The sink connector's committed offset of partition 0 (Connect's REST API
# reads the sink group's offsets from the broker, KIP-875), or "-".
sink_offset() {
    local j
    j="$(curl -fsS "$REST/connectors/$SINK/offsets" 2>/dev/null)" || { echo "-"; return; }
    python3 - "$j" "$TOPIC" <<'PY'
import json, sys
o = [e["offset"]["kafka_offset"] for e in json.loads(sys.argv[1])["offsets"]
     if e["partition"]["kafka_topic"] == sys.argv[2] and e["partition"]["kafka_partition"] == 0]
print(o[0] if o else "-")
PY
}
sink_at() { [ "$(sink_offset)" = "$1" ]; }

# The topic's partitions and end offsets, "PARTITION:OFFSET" each.
end_offsets() {
    "$PEER" tool kafka-get-offsets --bootstrap-server "$BOOTSTRAP" --topic "$TOPIC" --time latest 2>/dev/null \
        | awk -F: -v t="$TOPIC" '$1 == t { printf "%s%s:%s", sep, $2, $3; sep = " " }'
}

# check_round LINES WHAT: output == input, the topic and the group's offset at LINES.
check_round() {
    local lines="$1" what="$2"
    if poll "$WAIT" output_equals_input; then
        ok "$what: output file equals the input file ($lines lines, $(wc -c <"$INPUT") bytes)"
    else
        local got=0
        [ -f "$OUTPUT" ] && got="$(wc -l <"$OUTPUT")"
        fail_check output "$what: output file ($got lines) differs from the input ($lines lines) after ${WAIT}s; first difference: $(diff "$INPUT" "$OUTPUT" 2>&1 | head -3 | tr '\n' ' ')"
    fi
    if poll "$WAIT" sink_at "$lines"; then
        ok "$what: the sink's group committed offset $lines to the broker (REST /connectors/$SINK/offsets)"
    else
        fail_check group-offset "$what: the sink's committed offset is $(sink_offset), expected $lines"
    fi
    local ends
    ends="$(end_offsets)"
    if [ "$ends" = "0:$lines" ]; then
        ok "$what: topic $TOPIC has 1 partition holding exactly $lines records"
    else
        fail_check topic-records "$what: topic partitions:end offsets are '${ends}', expected '0:$lines'"
    fi
}

echo "note: broker $COMPAT_BROKER at $BOOTSTRAP, topic $TOPIC, work dir $WORK"

# --- 1. first run ----------------------------------------------------------------
: >"$INPUT"
write_lines 1 2000
start_connect
if poll "$WAIT" connectors_running; then
    ok "REST on $REST: $SOURCE and $SINK and their tasks are RUNNING"
else
    fail_check running "connectors not RUNNING within ${WAIT}s: $(curl -sS "$REST/connectors?expand=status" 2>&1 | head -c 600)"
fi
check_round 2000 "first run"
if grep -q "Created topic (name=$TOPIC, numPartitions=1, replicationFactor=-1" "$WORK/connect-1.log"; then
    ok "the source task created $TOPIC through the admin client (numPartitions=1, replicationFactor=-1)"
else
    fail_check topic-created "no \"Created topic (name=$TOPIC\" in $WORK/connect-1.log: $(grep -i "topic '$TOPIC'" "$WORK/connect-1.log" | head -3 | tr '\n' ' ')"
fi

stop_connect
if [ -s "$WORK/connect.offsets" ]; then
    ok "the source's offsets are in the standalone offsets file ($(wc -c <"$WORK/connect.offsets") bytes)"
else
    fail_check source-offsets "no source offsets in $WORK/connect.offsets"
fi

# --- 2. more input while Connect is down, then a restart ---------------------------
write_lines 2001 3000
start_connect
check_round 3000 "after the restart"
stop_connect
if output_equals_input; then
    ok "after the final stop the output still holds every one of the 3000 lines exactly once, in order"
else
    fail_check output "output changed after the final stop: $(diff "$INPUT" "$OUTPUT" | head -3 | tr '\n' ' ')"
fi
dups="$(sort "$OUTPUT" | uniq -d | wc -l)"
[ "$dups" -eq 0 ] || fail_check output "$dups lines appear more than once in the output"
# With Connect stopped: the group has no members left and keeps its offset.
desc="$("$PEER" tool kafka-consumer-groups --bootstrap-server "$BOOTSTRAP" --describe --group "$GROUP" 2>&1 || true)"
committed="$(awk -v t="$TOPIC" '$2 == t && $3 == 0 { print $4 }' <<<"$desc")"
if [ "$committed" = 3000 ] && grep -q "has no active members" <<<"$desc"; then
    ok "kafka-consumer-groups: $GROUP has no active members after the stop, committed offset 3000"
else
    fail_check group-after-stop "kafka-consumer-groups --describe --group $GROUP: $(tr '\n' ' ' <<<"$desc" | head -c 500)"
fi

finish
