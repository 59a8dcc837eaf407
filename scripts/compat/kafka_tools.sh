#!/usr/bin/env bash
# Apache Kafka 4.4's own command-line tools (kafka-topics, kafka-configs, the
# console producer and consumer, kafka-consumer-groups, kafka-get-offsets,
# kafka-delete-records, kafka-transactions, kafka-log-dirs,
# kafka-broker-api-versions, kafka-dump-log on the broker's own segment files)
# against a running broker, each output checked. The checks are in
# kafka_tools.py; this wrapper runs it with the compat virtualenv's Python.
#
# Usage: scripts/compat/kafka_tools.sh BOOTSTRAP
# Environment: COMPAT_BROKER=fjord|kafka, and FJORD_DATA_DIR (Fjord) or
# KAFKA_PEER_HOME (Kafka) to find the broker's log directory; both are set by
# scripts/compat/run.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PY="${COMPAT_PYTHON:-$ROOT/target/compat-venv/bin/python}"
if [ ! -x "$PY" ]; then
    echo "kafka_tools: $PY not found (run scripts/install-test-deps)" >&2
    exit 2
fi
exec "$PY" "$ROOT/scripts/compat/kafka_tools.py" "$@"
