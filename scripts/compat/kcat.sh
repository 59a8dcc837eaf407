#!/usr/bin/env bash
# Round-trip checks against a running broker using kcat (librdkafka).
#
# Usage: scripts/compat/kcat.sh BOOTSTRAP      (or FJORD_BOOTSTRAP in the environment)
#
# Topics are not created up front (kcat cannot create topics): the producer's
# Metadata request asks for auto-creation, which the broker does by default with
# num.partitions=1, like Kafka.
set -euo pipefail

BOOTSTRAP="${1:-${FJORD_BOOTSTRAP:-}}"
if [ -z "$BOOTSTRAP" ]; then
    echo "usage: $0 BOOTSTRAP" >&2
    exit 2
fi
KCAT="${KCAT:-kcat}"
STEP_TIMEOUT="${KCAT_STEP_TIMEOUT:-30}"
N="${KCAT_MESSAGES:-100}"
# Partition count expected for an auto-created topic (broker default num.partitions).
EXPECT_PARTITIONS="${KCAT_EXPECT_PARTITIONS:-1}"

# Bounded librdkafka settings shared by every invocation.
COMMON=(-b "$BOOTSTRAP" -X socket.timeout.ms=10000 -X topic.metadata.refresh.interval.ms=1000)
PRODUCER=(-X message.timeout.ms=20000 -X enable.idempotence=false)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/fjord-kcat.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

SUFFIX="$(date +%s)-$$"
FAILURES=0
CHECKS=0

fail() {
    echo "FAIL: $*" >&2
    FAILURES=$((FAILURES + 1))
}

ok() {
    echo "ok: $*"
}

# run_kcat NAME ARGS... : run kcat with a deadline, output to $WORK/NAME.out,
# stderr to $WORK/NAME.err. Returns kcat's status (124 on timeout).
run_kcat() {
    local name="$1"
    shift
    local rc=0
    timeout "$STEP_TIMEOUT" "$KCAT" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        if [ "$rc" -eq 124 ]; then
            echo "kcat ($name) timed out after ${STEP_TIMEOUT}s: $KCAT $*" >&2
        else
            echo "kcat ($name) exited with status $rc: $KCAT $*" >&2
        fi
        sed 's/^/    stderr: /' "$WORK/$name.err" >&2
    fi
    return "$rc"
}

# compare NAME EXPECTED_FILE ACTUAL_FILE
compare() {
    local name="$1" expected="$2" actual="$3"
    if diff -u --label "expected ($name)" --label "actual ($name)" "$expected" "$actual" >"$WORK/$name.diff"; then
        return 0
    fi
    echo "mismatch in $name (first 40 lines of the diff):" >&2
    head -n 40 "$WORK/$name.diff" >&2
    echo "    expected $(wc -l <"$expected") lines, got $(wc -l <"$actual")" >&2
    return 1
}

# roundtrip NAME TOPIC COUNT [extra producer args...]
# Produces COUNT keyed messages with two headers to partition 0 (explicitly, so
# the check does not depend on the partition count), consumes partition 0 from the
# beginning and compares key, value, headers and offsets exactly.
roundtrip() {
    local name="$1" topic="$2" count="$3"
    shift 3
    CHECKS=$((CHECKS + 1))
    local i pad
    pad="$(printf 'x%.0s' $(seq 1 64))"
    : >"$WORK/$name.in"
    : >"$WORK/$name.expected"
    for i in $(seq 0 $((count - 1))); do
        # Repetitive values so the compression codecs have something to do.
        printf 'key-%d:value-%d-%s\n' "$i" "$i" "$pad" >>"$WORK/$name.in"
        printf 'key-%d:value-%d-%s:a=b,trace=%s\n' "$i" "$i" "$pad" "$name" >>"$WORK/$name.expected"
    done

    if ! run_kcat "$name-produce" "${COMMON[@]}" "${PRODUCER[@]}" -P -t "$topic" -p 0 -K: \
        -H a=b -H "trace=$name" "$@" <"$WORK/$name.in"; then
        fail "$name: produce to $topic failed"
        return 0
    fi
    if grep -qi 'delivery failed' "$WORK/$name-produce.err"; then
        echo "kcat ($name-produce) reported errors:" >&2
        sed 's/^/    stderr: /' "$WORK/$name-produce.err" >&2
        fail "$name: producer reported errors"
        return 0
    fi

    if ! run_kcat "$name-consume" "${COMMON[@]}" -C -t "$topic" -p 0 -o beginning -e \
        -f '%k:%s:%h\n'; then
        fail "$name: consume from $topic failed"
        return 0
    fi
    if ! compare "$name" "$WORK/$name.expected" "$WORK/$name-consume.out"; then
        fail "$name: consumed messages differ from produced ones"
        return 0
    fi

    # Offsets must be exactly 0..count-1 on partition 0 of a fresh topic.
    seq 0 $((count - 1)) | sed 's/^/0 /' >"$WORK/$name.offsets.expected"
    if ! run_kcat "$name-offsets" "${COMMON[@]}" -C -t "$topic" -p 0 -o beginning -e \
        -f '%p %o\n'; then
        fail "$name: consume (offsets) from $topic failed"
        return 0
    fi
    if ! compare "$name-offsets" "$WORK/$name.offsets.expected" "$WORK/$name-offsets.out"; then
        fail "$name: offsets are not 0..$((count - 1))"
        return 0
    fi
    ok "$name: $count messages round-tripped through $topic"
}

echo "kcat: $("$KCAT" -V 2>&1 | grep -m1 '^Version' || echo 'version unknown')"
echo "bootstrap: $BOOTSTRAP"

# 1. Plain round trip (auto-creates the topic).
TOPIC="fjord-kcat-basic-$SUFFIX"
roundtrip basic "$TOPIC" "$N"

# 2. Metadata listing: the broker and the topic (num.partitions=1 after auto-creation).
CHECKS=$((CHECKS + 1))
if run_kcat list "${COMMON[@]}" -L; then
    if ! grep -qE '^ +broker [0-9-]+ at [^ ]+:[0-9]+' "$WORK/list.out"; then
        echo "kcat -L output:" >&2
        sed 's/^/    /' "$WORK/list.out" >&2
        fail "metadata: no broker listed by kcat -L"
    elif ! grep -qF "topic \"$TOPIC\" with $EXPECT_PARTITIONS partitions" "$WORK/list.out"; then
        echo "kcat -L output:" >&2
        sed 's/^/    /' "$WORK/list.out" >&2
        fail "metadata: topic $TOPIC with $EXPECT_PARTITIONS partition(s) not listed by kcat -L"
    else
        ok "metadata: kcat -L lists $(grep -cE '^ +broker [0-9-]+ at ' "$WORK/list.out") broker(s) and $TOPIC"
    fi
else
    fail "metadata: kcat -L failed"
fi

CHECKS=$((CHECKS + 1))
if run_kcat list-topic "${COMMON[@]}" -L -t "$TOPIC"; then
    if grep -qF "topic \"$TOPIC\" with $EXPECT_PARTITIONS partitions" "$WORK/list-topic.out" \
        && grep -qE '^ +partition 0, leader [0-9]+' "$WORK/list-topic.out"; then
        ok "metadata: kcat -L -t $TOPIC shows partition 0 with a leader"
    else
        echo "kcat -L -t output:" >&2
        sed 's/^/    /' "$WORK/list-topic.out" >&2
        fail "metadata: kcat -L -t $TOPIC does not show partition 0 with a leader"
    fi
else
    fail "metadata: kcat -L -t $TOPIC failed"
fi

# stored_codec NAME TOPIC CODEC: every batch the broker serves for partition 0
# of TOPIC carries CODEC in its attributes (read with a raw Fetch by
# batches.py), so a producer that silently sent its batches uncompressed
# fails here even though its records round-trip.
stored_codec() {
    local name="$1" topic="$2" codec="$3"
    CHECKS=$((CHECKS + 1))
    if ! python3 "$(dirname "$0")/batches.py" "$BOOTSTRAP" "$topic" 0 >"$WORK/$name.batches" 2>&1; then
        sed 's/^/    /' "$WORK/$name.batches" >&2
        fail "$name: cannot read the stored batches of $topic"
        return 0
    fi
    local total wrong
    total="$(wc -l <"$WORK/$name.batches")"
    wrong="$(awk -v c="$codec" '$2 != c' "$WORK/$name.batches" | wc -l)"
    if [ "$total" -eq 0 ] || [ "$wrong" -ne 0 ]; then
        echo "batches of $topic (base offset, codec, records):" >&2
        sed 's/^/    /' "$WORK/$name.batches" >&2
        fail "$name: $wrong of $total stored batches are not $codec (kcat -z $codec)"
        return 0
    fi
    ok "$name: all $total stored batches of $topic are $codec"
}

# 3. Each compression codec: the records round-trip and the broker stored
#    the batches with the codec kcat was asked for (librdkafka before 2.10
#    sends gzip/snappy/lz4 uncompressed to a broker that does not list
#    Produce v0-v2; Debian's kcat 1.7.1 has librdkafka 2.0.2).
for codec in gzip snappy lz4 zstd; do
    roundtrip "compression-$codec" "fjord-kcat-$codec-$SUFFIX" "$N" -z "$codec"
    stored_codec "stored-$codec" "fjord-kcat-$codec-$SUFFIX" "$codec"
done

# 4. The README's group example: a new group reads the topic from the start
#    only with auto.offset.reset=earliest (without it, it starts at the end and
#    prints nothing).
CHECKS=$((CHECKS + 1))
GROUP_TOPIC="$TOPIC"
if run_kcat readme-group "${COMMON[@]}" -G "fjord-kcat-group-$SUFFIX" -X auto.offset.reset=earliest \
    "$GROUP_TOPIC" -e; then
    got="$(wc -l <"$WORK/readme-group.out")"
    if [ "$got" -eq "$N" ]; then
        ok "readme: kcat -G … -X auto.offset.reset=earliest read all $N records of $GROUP_TOPIC"
    else
        fail "readme: the README's group consumer read $got records of $GROUP_TOPIC, expected $N"
    fi
else
    fail "readme: the README's group consumer failed"
fi

echo
if [ "$FAILURES" -ne 0 ]; then
    echo "kcat: $FAILURES of $CHECKS checks failed"
    exit 1
fi
echo "kcat: all $CHECKS checks passed"
