# shellcheck shell=bash
# Helpers for the compatibility runners: start a Fjord broker on an ephemeral
# port with a throw-away data directory, and stop it again on exit.
#
# Usage (from a bash script with `set -euo pipefail`):
#   source scripts/compat/lib.sh
#   fjord_start [BINARY] [-- EXTRA SERVE ARGS...]
#   ... use "$FJORD_BOOTSTRAP" ...
#   # fjord_stop runs automatically on exit (trap); it may also be called directly.
#
# Environment:
#   FJORD_BIN              default binary (default: target/debug/fjord)
#   FJORD_START_TIMEOUT    seconds to wait for the "listening on" line (default 30)
#   FJORD_STOP_TIMEOUT     seconds to wait after SIGTERM before SIGKILL (default 15)
#   FJORD_SHARDS           --shards value (default 2)
#   FJORD_BROKER_LOG       where to write the broker's stdout/stderr (default: a
#                          file in the temporary directory, removed on stop)
#   FJORD_KEEP_DATA=1      keep the temporary data directory after stop
#
# Exports after fjord_start: FJORD_BOOTSTRAP=127.0.0.1:<port>, FJORD_PID,
# FJORD_DATA_DIR, FJORD_BROKER_LOG.

FJORD_PID=""
FJORD_TMP=""

fjord_log() {
    echo "[fjord-compat] $*" >&2
}

# fjord_start [BINARY] [-- EXTRA ARGS...]
fjord_start() {
    local bin="${FJORD_BIN:-target/debug/fjord}"
    if [ $# -gt 0 ] && [ "$1" != "--" ]; then
        bin="$1"
        shift
    fi
    if [ $# -gt 0 ] && [ "$1" = "--" ]; then
        shift
    fi
    local start_timeout="${FJORD_START_TIMEOUT:-30}"
    local shards="${FJORD_SHARDS:-2}"

    if [ ! -x "$bin" ]; then
        fjord_log "broker binary not found or not executable: $bin"
        return 1
    fi
    if [ -n "$FJORD_PID" ]; then
        fjord_log "a broker is already running (pid $FJORD_PID)"
        return 1
    fi

    FJORD_TMP="$(mktemp -d "${TMPDIR:-/tmp}/fjord-compat.XXXXXX")"
    FJORD_DATA_DIR="$FJORD_TMP/data"
    mkdir -p "$FJORD_DATA_DIR"
    FJORD_BROKER_LOG="${FJORD_BROKER_LOG:-$FJORD_TMP/broker.log}"
    mkdir -p "$(dirname "$FJORD_BROKER_LOG")"
    : >"$FJORD_BROKER_LOG"
    export FJORD_DATA_DIR FJORD_BROKER_LOG

    trap fjord_stop EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    fjord_log "starting $bin (log: $FJORD_BROKER_LOG, data: $FJORD_DATA_DIR)"
    "$bin" serve \
        --listeners PLAINTEXT://127.0.0.1:0 \
        --log-dirs "$FJORD_DATA_DIR" \
        --shards "$shards" \
        "$@" >>"$FJORD_BROKER_LOG" 2>&1 </dev/null &
    FJORD_PID=$!
    export FJORD_PID

    local deadline=$((SECONDS + start_timeout))
    local port=""
    while :; do
        port="$(grep -m1 -oE 'listening on 127\.0\.0\.1:[0-9]+' "$FJORD_BROKER_LOG" 2>/dev/null \
            | grep -oE '[0-9]+$' || true)"
        if [ -n "$port" ] && [ "$port" != "0" ]; then
            break
        fi
        if ! kill -0 "$FJORD_PID" 2>/dev/null; then
            local rc=0
            wait "$FJORD_PID" || rc=$?
            FJORD_PID=""
            fjord_log "broker exited with status $rc before listening; log follows:"
            sed 's/^/    /' "$FJORD_BROKER_LOG" >&2
            return 1
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
            fjord_log "broker did not print 'listening on 127.0.0.1:<port>' within ${start_timeout}s; log follows:"
            sed 's/^/    /' "$FJORD_BROKER_LOG" >&2
            fjord_stop
            return 1
        fi
        sleep 0.1
    done

    FJORD_BOOTSTRAP="127.0.0.1:$port"
    export FJORD_BOOTSTRAP
    fjord_log "broker pid $FJORD_PID listening on $FJORD_BOOTSTRAP"
}

# fjord_stop: SIGTERM, wait up to FJORD_STOP_TIMEOUT seconds, then SIGKILL.
# Returns non-zero if the broker had to be killed or exited with an error
# status other than the one caused by SIGTERM.
fjord_stop() {
    local rc=0
    if [ -n "$FJORD_PID" ]; then
        local pid="$FJORD_PID"
        local stop_timeout="${FJORD_STOP_TIMEOUT:-15}"
        FJORD_PID=""
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            local deadline=$((SECONDS + stop_timeout))
            while kill -0 "$pid" 2>/dev/null; do
                if [ "$SECONDS" -ge "$deadline" ]; then
                    fjord_log "broker pid $pid still running ${stop_timeout}s after SIGTERM; sending SIGKILL"
                    kill -KILL "$pid" 2>/dev/null || true
                    rc=1
                    break
                fi
                sleep 0.1
            done
        fi
        local status=0
        wait "$pid" 2>/dev/null || status=$?
        # 143 = terminated by SIGTERM (no handler); 0 = clean shutdown.
        if [ "$rc" -eq 0 ] && [ "$status" -ne 0 ] && [ "$status" -ne 143 ]; then
            fjord_log "broker pid $pid exited with status $status"
            rc=1
        else
            fjord_log "broker pid $pid stopped (status $status)"
        fi
    fi
    if [ -n "$FJORD_TMP" ] && [ -d "$FJORD_TMP" ]; then
        if [ "${FJORD_KEEP_DATA:-0}" = "1" ]; then
            fjord_log "keeping $FJORD_TMP"
        else
            case "$FJORD_BROKER_LOG" in
                "$FJORD_TMP"/*)
                    if [ "$rc" -ne 0 ]; then
                        fjord_log "last lines of the broker log:"
                        tail -n 50 "$FJORD_BROKER_LOG" | sed 's/^/    /' >&2
                    fi
                    ;;
            esac
            rm -rf "$FJORD_TMP"
        fi
    fi
    FJORD_TMP=""
    return "$rc"
}
