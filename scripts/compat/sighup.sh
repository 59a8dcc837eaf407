#!/usr/bin/env bash
# SIGHUP shuts a broker down cleanly: Apache Kafka's JVM runs its shutdown
# hook on SIGHUP (as on SIGTERM), so a broker started from a terminal that
# closes stops in order. Checked against Fjord and against Kafka 4.4 the same
# way: start, produce, send SIGHUP, expect the process to end with the
# broker's own "shutdown done" log line, and a restart that recovers no log.
# Fjord exits with status 0; the JVM with 129 (128 + SIGHUP) after its hook.
#
# Usage: scripts/compat/sighup.sh fjord|kafka
#   FJORD_BIN   the Fjord binary (default target/debug/fjord)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
broker="${1:?fjord or kafka}"
work="$(mktemp -d)"
pid=""
cleanup() {
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: sighup ($broker): $*" >&2; exit 1; }

produce() {
    printf 'a\nb\nc\n' | kcat -b "$1" -P -t hangup -X acks=all 2>/dev/null \
        || fail "produce to $1"
}

# Up to 180 s: the check is that the shutdown hook runs and completes, not
# how fast (Kafka's takes a few seconds).
wait_exit() {
    local i
    for i in $(seq 1 1800); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

case "$broker" in
fjord)
    bin="${FJORD_BIN:-target/debug/fjord}"
    start_fjord() {
        "$bin" serve --listeners PLAINTEXT://127.0.0.1:0 --log-dirs "$work/data" --shards 1 \
            > "$work/out-$1.log" 2> "$work/err-$1.log" &
        pid=$!
        local i
        for i in $(seq 1 300); do
            grep -q " listening on " "$work/out-$1.log" 2>/dev/null && break
            sleep 0.1
        done
        addr="$(grep -o 'listening on [0-9.:]*' "$work/out-$1.log" | awk '{print $3}')"
        [ -n "$addr" ] || fail "no listening line"
    }
    start_fjord 1
    produce "$addr"
    kill -HUP "$pid"
    wait_exit || fail "still running 180 s after SIGHUP"
    status=0; wait "$pid" || status=$?
    pid=""
    [ "$status" = 0 ] || fail "exit status $status after SIGHUP"
    grep -q "shutdown complete" "$work/err-1.log" || fail "no 'shutdown complete' in its log"
    start_fjord 2
    if grep -q "recovered after unclean shutdown" "$work/err-2.log"; then
        fail "the restart recovered a log"
    fi
    kill -TERM "$pid"; wait_exit || true; pid=""
    ;;
kafka)
    PEER="$ROOT/scripts/peers/kafka"
    export KAFKA_PEER_HOME="$work/kafka"
    # The peer script formats the directory and writes server.properties;
    # it starts the JVM under nohup (SIGHUP ignored, as kafka-server-start.sh
    # -daemon does), so the check starts the same JVM as kafka-server-start.sh
    # does from a terminal.
    "$PEER" start >/dev/null || fail "Kafka did not start"
    "$PEER" stop >/dev/null
    cp="$("$PEER" classpath)"
    start_kafka() {
        # SIGHUP back to its default first: a JVM started with SIGHUP
        # ignored (a run under nohup passes that on) installs no handler
        # for it, and a shell cannot undo an ignore it inherited.
        python3 -c 'import os, signal, sys
signal.signal(signal.SIGHUP, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])' \
        java -Xmx512M -Xms512M -server -XX:+UseG1GC -Djava.awt.headless=true \
            -Dlog4j2.configurationFile="$ROOT/scripts/peers/log4j2-server.properties" \
            -cp "$cp" kafka.Kafka "$KAFKA_PEER_HOME/server.properties" \
            > "$work/kafka-$1.log" 2>&1 < /dev/null &
        pid=$!
        local i
        for i in $(seq 1 600); do
            grep -q "Kafka Server started" "$work/kafka-$1.log" 2>/dev/null && return 0
            kill -0 "$pid" 2>/dev/null || fail "Kafka exited at start"
            sleep 0.1
        done
        fail "Kafka did not start"
    }
    start_kafka 1
    addr="127.0.0.1:$(grep -o 'PLAINTEXT://127.0.0.1:[0-9]*' "$KAFKA_PEER_HOME/server.properties" | head -1 | awk -F: '{print $3}')"
    produce "$addr"
    kill -HUP "$pid"
    wait_exit || fail "still running 180 s after SIGHUP"
    status=0; wait "$pid" || status=$?
    pid=""
    # The JVM exits with 128 + the signal number after its shutdown hook.
    echo "kafka exit status after SIGHUP: $status"
    grep -q "shut down completed" "$work/kafka-1.log" || fail "no 'shut down completed' in its log"
    start_kafka 2
    # Kafka recovers its own metadata log at every start; the topic's
    # partition is recovered only after an unclean shutdown.
    if grep -q "partition=hangup-0.*Recovering unflushed segment" "$work/kafka-2.log"; then
        fail "the restart recovered a log"
    fi
    kill -TERM "$pid"; wait_exit || true; pid=""
    ;;
*) fail "unknown broker" ;;
esac
echo "sighup ($broker): orderly shutdown on SIGHUP, restart without recovery"
