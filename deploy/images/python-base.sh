#!/usr/bin/env bash
# Build the Python base image from the machine's own Debian mirror, without any image registry:
#   debootstrap --variant=minbase (python3 + python3-venv) into a folder, then `docker import`.
#
# Usage: python-base.sh IMAGE_TAG
# Cached: when IMAGE_TAG already exists nothing is done. The suite and mirror are the host's
# (/etc/os-release, the first deb.debian.org-style URI apt is configured with), overridable with
# SCOPE_TOOL_DEBIAN_SUITE and SCOPE_TOOL_DEBIAN_MIRROR. Needs root (or sudo) for debootstrap.
set -euo pipefail

TAG=${1:?usage: python-base.sh IMAGE_TAG}
DOCKER=${DOCKER:-docker}

if "$DOCKER" image inspect "$TAG" >/dev/null 2>&1; then
    exit 0
fi

fail() { echo "python-base: $*" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null; then SUDO=(sudo -n); else
    fail "building $TAG runs debootstrap, which needs root (or sudo)"
fi

suite=${SCOPE_TOOL_DEBIAN_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-}")}
[ -n "$suite" ] || fail "cannot tell the Debian suite from /etc/os-release; set SCOPE_TOOL_DEBIAN_SUITE"
mirror=${SCOPE_TOOL_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
    mirror=$(grep -hoE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | head -n1 | sed -E 's/^URIs: *//') || true
fi
if [ -z "$mirror" ]; then
    mirror=$(grep -hoE '^deb +[^ ]+/debian/? ' /etc/apt/sources.list 2>/dev/null \
        | head -n1 | awk '{print $2}') || true
fi
mirror=${mirror:-http://deb.debian.org/debian}

if ! command -v debootstrap >/dev/null; then
    echo "python-base: installing debootstrap (apt-get)" >&2
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        debootstrap >/dev/null || fail "apt-get install debootstrap failed"
fi

rootfs=$(mktemp -d /tmp/scope-tool-rootfs.XXXXXX)
trap '"${SUDO[@]}" rm -rf "$rootfs"' EXIT
started=$SECONDS
echo "python-base: debootstrap $suite from $mirror" >&2
"${SUDO[@]}" debootstrap --variant=minbase --include=python3,python3-venv \
    "$suite" "$rootfs" "$mirror" >"$rootfs.log" 2>&1 \
    || { tail -n 20 "$rootfs.log" >&2; fail "debootstrap failed (log above)"; }
rm -f "$rootfs.log"
# Package caches and lists are not needed at run time (nothing installs from apt in the image).
"${SUDO[@]}" rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
# mktemp made the folder 0700; as the image's / it would lock every non-root user out.
"${SUDO[@]}" chmod 0755 "$rootfs"
"${SUDO[@]}" tar -C "$rootfs" -c . | "$DOCKER" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$TAG" >/dev/null
echo "python-base: $TAG built in $((SECONDS - started)) s" \
    "($("$DOCKER" image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}'))" >&2
