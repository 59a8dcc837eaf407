#!/usr/bin/env bash
# franz-go compatibility runner (scripts/compat/go/cmd/franz-go): every codec,
# the four client-side group balancers, GroupTransactSession exactly-once, and
# kadm admin calls.
#
# Usage: COMPAT_BROKER=fjord|kafka scripts/compat/franz_go.sh BOOTSTRAP
#        scripts/compat/franz_go.sh --secure   SCRAM over SASL_SSL and mutual TLS (COMPAT_SECURE_*,
#          see scripts/compat/go/internal/secure; scripts/compat/security.py runs it)
#   COMPAT_ONLY=SUBSTRING   only the checks whose name contains it
#   COMPAT_RUN_KNOWN=1      also run the checks skipped as known Fjord differences
#   COMPAT_DEBUG=1          the client's debug log on stderr
set -euo pipefail
cd "$(dirname "$0")/../.."
out="$(scripts/compat/go/build.sh)"
exec "$out/franz-go" "$@"
