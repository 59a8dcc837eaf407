#!/usr/bin/env bash
# Records the fuzz seed material from real clients and real brokers, then
# derives the committed seed set (tests/fuzz/seeds/<target>/) from it.
#
#   tests/fuzz/capture/capture.sh [WORK_DIR]
#
# 1. Starts Fjord (target/debug/fjord, built first) on a loopback port with
#    record_proxy.py in front of it (the broker advertises the proxy), and
#    runs real clients through the proxy: kcat (librdkafka, also forced to
#    Produce v1/v2 with magic 0/1 message sets, every codec), the
#    confluent-kafka round-trip and transaction checks, franz-go, and Apache
#    Kafka 4.4's command-line tools (scripts/compat/*). Each request frame a
#    client sent lands in WORK_DIR/requests/.
# 2. Starts a two-node Fjord cluster (one voter, one broker-only node) with
#    a recording proxy in front of the voter's controller listener: the
#    controller-listener frames in both directions land in WORK_DIR/quorum/.
# 3. Starts Apache Kafka 4.4 (scripts/peers/kafka) and runs the same
#    librdkafka clients against it, for Kafka-written segments, indexes and
#    checkpoints.
# 4. Stops every broker cleanly, copies their data directories to WORK_DIR,
#    and runs derive_seeds.py WORK_DIR tests/fuzz/seeds (which replaces the
#    seed directories).
#
# Needs scripts/install-test-deps (kcat, target/compat-venv, the Kafka jars,
# the franz-go runner). A client check that fails still leaves its frames;
# the run goes on.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$ROOT"
WORK="${1:-$ROOT/target/fuzz-capture}"
HERE="$ROOT/tests/fuzz/capture"
PY="$ROOT/target/compat-venv/bin/python"
GO_RUNNER="${FRANZ_GO_RUNNER:-$ROOT/target/compat-go/franz-go}"
STEP="${CAPTURE_STEP_TIMEOUT:-240}"
rm -rf "$WORK"
mkdir -p "$WORK/requests" "$WORK/quorum/1" "$WORK/quorum/2"

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # file pattern seconds
    for _ in $(seq 1 $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "capture: '$2' not in $1" >&2; return 1
}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

cargo build --bin fjord || exit 1
FJORD="$ROOT/target/debug/fjord"

# 1. One Fjord broker behind the recording proxy ------------------------------
BPORT=$(free_port); PPORT=$(free_port)
DATA="$WORK/fjord-run"; mkdir -p "$DATA"
"$FJORD" serve --listeners "PLAINTEXT://127.0.0.1:$BPORT" --log-dirs "$DATA" --shards 1 \
    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$PPORT" \
    --override log.segment.bytes=16384 \
    --override log.cleaner.backoff.ms=500 \
    >"$WORK/fjord.log" 2>&1 &
FJORD_PID=$!; pids+=("$FJORD_PID")
wait_for "$WORK/fjord.log" "listening on" 30 || exit 1
"$PY" "$HERE/record_proxy.py" "$PPORT" "127.0.0.1:$BPORT" "$WORK/requests" &
pids+=("$!")
sleep 0.5
B="127.0.0.1:$PPORT"
run() { echo "capture: $*" >&2; timeout "$STEP" "$@" >>"$WORK/clients.log" 2>&1 || echo "capture: ($1 failed; frames kept)" >&2; }

export COMPAT_BROKER=fjord FJORD_DATA_DIR="$DATA" FJORD_BOOTSTRAP="$B"
"$PY" "$HERE/drive_clients.py" "$B" >>"$WORK/clients.log" 2>&1 || echo "capture: (drive_clients failed)" >&2
run scripts/compat/kcat.sh "$B"
run "$PY" scripts/compat/confluent_kafka_roundtrip.py "$B"
run "$PY" scripts/compat/confluent_kafka_transactions.py "$B"
[ -x "$GO_RUNNER" ] && run "$GO_RUNNER" "$B"
run scripts/compat/kafka_tools.sh "$B"
# Produce v1/v2 (magic 0/1 message sets), plain and compressed: librdkafka
# told the broker is 0.9 / 0.10, so it uses no ApiVersions.
for fallback in 0.9.0 0.10.0; do
    for codec in none gzip snappy lz4; do
        seq 1 5 | timeout 20 kcat -P -b "$B" -t legacy -z "$codec" \
            -X api.version.request=false -X broker.version.fallback="$fallback" \
            >>"$WORK/clients.log" 2>&1
    done
done
sleep 2
kill -TERM "$FJORD_PID"; wait "$FJORD_PID" 2>/dev/null
cp -a "$DATA" "$WORK/fjord-data"

# 2. Two voters and a broker-only node, the controller listeners recorded ---
# Each voter reaches the other through a recording proxy, and the
# broker-only node reaches both through them: every controller-listener
# frame (Raft votes and appends, hellos, forwarded controller requests,
# log fetches, and the answers) lands in WORK_DIR/quorum/{1,2}/.
CID=$("$FJORD" random-uuid)
C1=$(free_port); C2=$(free_port); X1=$(free_port); X2=$(free_port)
K1=$(free_port); K2=$(free_port); K3=$(free_port)
for n in 1 2 3; do
    d="$WORK/quorum-n$n"; mkdir -p "$d/data"
    case $n in
        1) roles="broker,controller"; voters="1@127.0.0.1:$C1,2@127.0.0.1:$X2"
           listeners="PLAINTEXT://127.0.0.1:$K1,CONTROLLER://127.0.0.1:$C1" ;;
        2) roles="broker,controller"; voters="1@127.0.0.1:$X1,2@127.0.0.1:$C2"
           listeners="PLAINTEXT://127.0.0.1:$K2,CONTROLLER://127.0.0.1:$C2" ;;
        3) roles="broker"; voters="1@127.0.0.1:$X1,2@127.0.0.1:$X2"
           listeners="PLAINTEXT://127.0.0.1:$K3" ;;
    esac
    cat >"$d/server.properties" <<PROPS
process.roles=$roles
node.id=$n
controller.quorum.voters=$voters
listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$d/data
PROPS
    "$FJORD" format --config "$d/server.properties" --cluster-id "$CID" >/dev/null || exit 1
done
"$PY" "$HERE/record_proxy.py" "$X1" "127.0.0.1:$C1" "$WORK/quorum/1" --quorum &
pids+=("$!")
"$PY" "$HERE/record_proxy.py" "$X2" "127.0.0.1:$C2" "$WORK/quorum/2" --quorum &
pids+=("$!")
qpids=()
for n in 1 2 3; do
    "$FJORD" serve --config "$WORK/quorum-n$n/server.properties" --shards 1 >"$WORK/quorum-n$n.log" 2>&1 &
    qpids+=("$!"); pids+=("$!")
done
wait_for "$WORK/quorum-n3.log" "listening on" 60
"$PY" "$HERE/drive_clients.py" "127.0.0.1:$K3" --small >>"$WORK/clients.log" 2>&1
sleep 3
for p in "${qpids[@]}"; do kill -TERM "$p"; done
for p in "${qpids[@]}"; do wait "$p" 2>/dev/null; done
cp -a "$WORK/quorum-n1/data" "$WORK/fjord-quorum-data"

# 3. Apache Kafka 4.4 ---------------------------------------------------------
export KAFKA_PEER_HOME="$WORK/kafka-run"
KB=$(scripts/peers/kafka start log.cleaner.backoff.ms=500) || KB=""
if [ -n "$KB" ]; then
    export COMPAT_BROKER=kafka
    "$PY" "$HERE/drive_clients.py" "$KB" >>"$WORK/clients.log" 2>&1
    run "$PY" scripts/compat/confluent_kafka_transactions.py "$KB"
    sleep 2
    scripts/peers/kafka stop
    cp -a "$(scripts/peers/kafka logdir | cut -d, -f1)" "$WORK/kafka-data"
fi

# 4. The seed set -------------------------------------------------------------
"$PY" "$HERE/derive_seeds.py" "$WORK" "$ROOT/tests/fuzz/seeds"
