#!/usr/bin/env bash
# Installs libblkid's headers when they are missing: Ignition (built by
# hack/ensure-tools.sh for test/bootos) is cgo code that links against libblkid, and
# the library cannot come through the Go module proxy, so it comes from the
# distribution's packages (Debian/Ubuntu, as this project's CI machines run).
set -euo pipefail
if pkg-config --exists blkid 2>/dev/null || [[ -e /usr/include/blkid/blkid.h ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[tools] libblkid's headers are missing and there is no apt-get: install them by hand" >&2
	exit 1
fi
echo "[tools] installing libblkid-dev (Ignition links against it)..." >&2
sudo=()
if [[ $EUID -ne 0 ]]; then sudo=(sudo); fi
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y libblkid-dev
