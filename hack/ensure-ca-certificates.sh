#!/usr/bin/env bash
# Installs Debian's ca-certificates package when the CA bundle is missing: the manager
# images ship this machine's /etc/ssl/certs/ca-certificates.crt instead of a base image
# from a registry (internal/imagebuild), and test/release builds those images.
set -euo pipefail

BUNDLE=/etc/ssl/certs/ca-certificates.crt
if [[ -s $BUNDLE ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "[tools] $BUNDLE is missing and there is no apt-get: install your distribution's CA certificates by hand" >&2
	exit 1
fi
echo "[tools] installing ca-certificates ($BUNDLE, shipped in the manager images)..." >&2
sudo=()
if [[ $EUID -ne 0 ]]; then sudo=(sudo); fi
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y ca-certificates
# The package's postinst builds the bundle; run it again in case triggers were deferred.
"${sudo[@]}" update-ca-certificates >/dev/null
[[ -s $BUNDLE ]] || { echo "[tools] ca-certificates installed but $BUNDLE is still missing" >&2; exit 1; }
