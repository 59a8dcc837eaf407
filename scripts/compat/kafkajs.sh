#!/usr/bin/env bash
# kafkajs (pure JavaScript client) against a running broker: admin, produce
# (uncompressed and gzip), a consumer group stopped and resumed from its
# committed offsets. The checks are in node/kafkajs_runner.js; kafkajs is
# installed under scripts/compat/node/node_modules by scripts/install-test-deps
# (npm ci from the committed package-lock.json).
#
# Usage: scripts/compat/kafkajs.sh BOOTSTRAP     (COMPAT_BROKER=fjord|kafka)
#        scripts/compat/kafkajs.sh --secure      SCRAM over SASL_SSL and mutual TLS
#          (node/kafkajs_secure.js; the listeners come from COMPAT_SECURE_*, as
#          scripts/compat/security.py sets them)
set -euo pipefail

DIR="$(cd "$(dirname "$0")/node" && pwd)"
if [ ! -f "$DIR/node_modules/kafkajs/package.json" ]; then
    echo "kafkajs: $DIR/node_modules/kafkajs is missing (run scripts/install-test-deps)" >&2
    exit 2
fi
# kafkajs 2 warns on every producer that its default partitioner changed in 2.0.
export KAFKAJS_NO_PARTITIONER_WARNING=1
if [ "${1:-}" = "--secure" ]; then
    exec node "$DIR/kafkajs_secure.js"
fi
exec node "$DIR/kafkajs_runner.js" "$@"
