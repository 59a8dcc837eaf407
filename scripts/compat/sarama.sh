#!/usr/bin/env bash
# Sarama compatibility runner (scripts/compat/go/cmd/sarama): sync and async
# idempotent producers, codecs, ConsumerGroup commit and resume, the offset
# manager; once with the newest Version Sarama knows, once with its default.
#
# Usage: COMPAT_BROKER=fjord|kafka scripts/compat/sarama.sh BOOTSTRAP
#        scripts/compat/sarama.sh --secure   SCRAM over SASL_SSL and mutual TLS (COMPAT_SECURE_*,
#          see scripts/compat/go/internal/secure; scripts/compat/security.py runs it)
#   COMPAT_ONLY=SUBSTRING   only the checks whose name contains it
#   COMPAT_RUN_KNOWN=1      also run the checks skipped as known Fjord differences
#   COMPAT_DEBUG=1          the client's debug log on stderr
set -euo pipefail
cd "$(dirname "$0")/../.."
out="$(scripts/compat/go/build.sh)"
exec "$out/sarama" "$@"
