#!/usr/bin/env bash
# Java client 4.4 compatibility runner: the Apache Kafka Java client
# (kafka-clients 4.4.0) against the broker at BOOTSTRAP. The checks are in
# scripts/compat/java/ (a Maven module); this script builds it into
# target/compat-java/ when the jar is missing or older than its sources, then
# runs it. Exit status 0 only when every check passes.
#
# Usage: scripts/compat/java.sh BOOTSTRAP [CHECK...]   run all (or the named) checks
#        scripts/compat/java.sh --build                 only build, if not up to date
#        scripts/compat/java.sh --list                  list the checks
#        scripts/compat/java.sh --secure | --oauth      secured listeners (COMPAT_SECURE_*, COMPAT_OAUTH_*)
#   COMPAT_BROKER=fjord|kafka   known Fjord differences (FINDINGS.md) are skipped for fjord
#   COMPAT_RUN_KNOWN=1          run those too
#   COMPAT_JAVA_BUDGET=270      seconds for all checks (scripts/compat/run gives this runner 300 s)
#   COMPAT_JAVA_OPTS            more JVM options (e.g. -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=…)
#   JAVA, MVN                   the java and mvn binaries
set -euo pipefail

cd "$(dirname "$0")/../.."
MODULE=scripts/compat/java
OUT=target/compat-java
JAR="$OUT/java-client-compat.jar"
STAMP="$OUT/.built"
JAVA="${JAVA:-java}"
MVN="${MVN:-mvn}"

up_to_date() {
    [ -f "$STAMP" ] && [ -f "$JAR" ] && [ -d "$OUT/lib" ] \
        && [ -z "$(find "$MODULE" -type f -newer "$STAMP" -print -quit)" ]
}

build() {
    up_to_date && return 0
    mkdir -p "$OUT"
    # One build at a time (two runners may start together).
    exec 9>"$OUT.lock"
    flock 9
    if ! up_to_date; then
        command -v "$MVN" >/dev/null || { echo "java-client: Maven ($MVN) is needed to build $MODULE" >&2; return 1; }
        echo "java-client: building $MODULE into $OUT" >&2
        rm -f "$STAMP"
        rm -rf "$OUT/lib"
        # (Maven 3.8 prints colour resets even with -B; they are dropped.)
        "$MVN" -q -B -Dstyle.color=never -f "$MODULE/pom.xml" package 2>&1 \
            | sed 's/\x1b\[[0-9;]*m//g' >&2 \
            || { echo "java-client: the Maven build failed" >&2; return 1; }
        touch "$STAMP"
    fi
    flock -u 9
}

case "${1:-}" in
    "") sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    --build) build; exit 0 ;;
    --list) build; exec "$JAVA" -cp "$JAR" dev.fjord.compat.Main --list ;;
esac

build
# Small heap and a quick-starting JIT: the machine is shared.
# shellcheck disable=SC2086  # COMPAT_JAVA_OPTS is a list of options
exec "$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    ${COMPAT_JAVA_OPTS:-} -jar "$JAR" "$@"
