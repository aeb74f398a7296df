#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info`, setting one up from nothing if need be.
#
# 1. No `dockerd` and no reachable engine: install Debian's docker.io with apt (needs root or sudo).
# 2. No engine answering: start dockerd in the background (its own session, so it outlives make),
#    logging to $SCOPE_TOOL_DOCKERD_LOG, with the storage driver $SCOPE_TOOL_DOCKERD_STORAGE, by
#    default overlay2 and, if dockerd cannot use it (inside some containers, on some file
#    systems), vfs, which works anywhere but copies whole file systems and is several times slower.
# 3. Wait until `docker info` answers.
#
# Idempotent: with an engine already answering it only checks that. Every way of failing ends with
# one line saying what is wrong and exit status 1, so `make test-containers` fails loudly.
set -euo pipefail

DOCKER=${DOCKER:-docker}
LOG=${SCOPE_TOOL_DOCKERD_LOG:-/var/log/scope-tool-dockerd.log}
STORAGE=${SCOPE_TOOL_DOCKERD_STORAGE:-}
WAIT_SECONDS=${SCOPE_TOOL_DOCKERD_WAIT:-60}

fail() {
    echo "docker-engine: $*" >&2
    echo "docker-engine: the container images and tests need a Docker engine; see docs/deploy.md" >&2
    exit 1
}

answers() { "$DOCKER" info >/dev/null 2>&1; }

if command -v "$DOCKER" >/dev/null && answers; then
    exit 0
fi

if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo -n); else SUDO=(); fi
root() {
    if [ "$(id -u)" != 0 ] && [ ${#SUDO[@]} = 0 ]; then
        fail "no Docker engine answers and setting one up needs root (or sudo): $*"
    fi
    "${SUDO[@]}" "$@"
}

if ! command -v dockerd >/dev/null || ! command -v "$DOCKER" >/dev/null; then
    command -v apt-get >/dev/null || fail "dockerd is not installed and there is no apt-get to install docker.io"
    echo "docker-engine: installing Debian's docker.io (apt-get)" >&2
    started=$SECONDS
    root apt-get update -qq || fail "apt-get update failed"
    root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        docker.io iptables ca-certificates >/dev/null || fail "apt-get install docker.io failed"
    echo "docker-engine: docker.io installed in $((SECONDS - started)) s" >&2
fi

# Start dockerd with storage driver $1 and wait for it; status 1 when it exits at start.
start_dockerd() {
    echo "docker-engine: starting dockerd (storage driver $1, log $LOG)" >&2
    root mkdir -p "$(dirname "$LOG")"
    # setsid + nohup: dockerd survives this script and make; its stdio goes to the log only.
    root setsid nohup dockerd --storage-driver="$1" >>"$LOG" 2>&1 </dev/null &
    local deadline=$((SECONDS + WAIT_SECONDS))
    until answers; do
        if [ $SECONDS -ge $deadline ]; then
            tail -n 15 "$LOG" >&2 2>/dev/null || true
            fail "dockerd did not answer \`docker info\` within ${WAIT_SECONDS} s (log: $LOG)"
        fi
        sleep 1
        pgrep -x dockerd >/dev/null || return 1
    done
}

if pgrep -x dockerd >/dev/null; then
    # A dockerd is starting (or hung): give it the same time to answer.
    deadline=$((SECONDS + WAIT_SECONDS))
    until answers; do
        [ $SECONDS -lt $deadline ] || fail "a dockerd runs but \`docker info\` fails:" \
            "$("$DOCKER" info 2>&1 >/dev/null | grep -v '^$' | tail -n 1)"
        sleep 1
    done
elif [ -n "$STORAGE" ]; then
    start_dockerd "$STORAGE" || {
        tail -n 15 "$LOG" >&2 2>/dev/null || true
        fail "dockerd exited at start with storage driver $STORAGE (log: $LOG)"
    }
elif ! start_dockerd overlay2; then
    echo "docker-engine: dockerd cannot use overlay2 here; falling back to vfs" >&2
    start_dockerd vfs || {
        tail -n 15 "$LOG" >&2 2>/dev/null || true
        fail "dockerd exited at start (log: $LOG); this machine cannot run a Docker engine"
    }
fi
echo "docker-engine: $("$DOCKER" version --format 'engine {{.Server.Version}}') answers" \
    "($("$DOCKER" info --format '{{.Driver}}'))" >&2
