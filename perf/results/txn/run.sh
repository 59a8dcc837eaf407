#!/usr/bin/env bash
# Transactions session: plain produce acks=all vs transactional produce with
# 1, 10 and 100 batches per transaction; 3 rounds alternating, a fresh
# broker (core 0) per run, client on core 1. Waits for a 1-minute load
# average <= 0.7 (max 120 s) before each run and logs the load it started at.
# usage: perf/results/txn/run.sh OUT_DIR   (env BIN: dir with fjord, fjord-perf)
set -uo pipefail
OUT=${1:?out dir}; BIN=${BIN:-target/release}; PORT=${PORT:-39092}
mkdir -p "$OUT"
B=127.0.0.1:$PORT
D=/tmp/perf-txn/data
COMMON="--partitions 2 --record-size 1024 --batch-size 16384 --connections 2 --inflight 5 --duration 5 --client-cores 1"
[ -f "$OUT/limits.json" ] || taskset -c 0,1 "$BIN/fjord-perf" limits --duration 5 --server-core 0 --client-core 1 --json "$OUT/limits.json" > "$OUT/limits.txt" 2>&1
wait_quiet() {
  for _ in $(seq 24); do
    l=$(cut -d' ' -f1 /proc/loadavg)
    awk -v l="$l" 'BEGIN{exit !(l<=0.7)}' && break
    sleep 5
  done
  cut -d' ' -f1 /proc/loadavg
}
run() {  # name, fjord-perf args...
  local name=$1; shift
  local load; load=$(wait_quiet)
  rm -rf "$D"; mkdir -p "$D"
  taskset -c 0 "$BIN/fjord" serve --log-dirs "$D" --listeners PLAINTEXT://$B --shards 1 > "$OUT/$name.broker.log" 2>&1 &
  local bpid=$!
  sleep 1.5
  echo "== $name (load1 $load)" | tee -a "$OUT/session.log"
  taskset -c 1 "$BIN/fjord-perf" "$@" -b $B --broker-pid $bpid --ceiling-json "$OUT/limits.json" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  echo "rc=$? load1-at-start=$load" >> "$OUT/$name.txt"
  kill "$bpid"; wait "$bpid" 2>/dev/null
  grep -E "^(MB/s|records/s|transactions/s|retries|latency|broker CPU s/GB|error)" "$OUT/$name.txt" | tee -a "$OUT/session.log"
}
for r in 1 2 3; do
  run produce-acksall-r$r produce --topic plain --acks all $COMMON
  run txn-1-r$r   txn --topic tx --txn-batches 1   $COMMON
  run txn-10-r$r  txn --topic tx --txn-batches 10  $COMMON
  run txn-100-r$r txn --topic tx --txn-batches 100 $COMMON
done
