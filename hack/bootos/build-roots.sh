#!/bin/sh
# Builds the Debian roots that test/bootos boots bootstrap data in: bookworm
# (cloud-init 22.4) and trixie (cloud-init 25.1), debootstrap minbase plus what
# cloud-init's modules call (systemd, chrony for ntp, fdisk/gdisk/e2fsprogs for
# disk_setup). Cached outside the work tree (CAPK3S_ROOTS, default
# $HOME/.cache/capk3s/roots); a root with its .complete marker is never touched
# again, and the tests only ever mount it read-only under an overlay.
# python3-cffi-backend is named because debootstrap does not resolve the
# virtual package that python3-cryptography depends on.
set -eu
ROOTS=${CAPK3S_ROOTS:-$HOME/.cache/capk3s/roots}
PACKAGES=python3-cffi-backend,cloud-init,systemd,python3,chrony,locales,fdisk,gdisk,e2fsprogs
mkdir -p "$ROOTS"
cd "$ROOTS"
for suite in "$@"; do
  [ -e "$suite/.complete" ] && continue
  if ! command -v debootstrap >/dev/null; then
    # A new machine has none; like PostgreSQL (hack/ensure-postgres.sh) it comes from
    # the distribution's packages, which this script (run as root) may install.
    command -v apt-get >/dev/null || { echo "debootstrap is needed to build the $suite root, and there is no apt-get: install it by hand" >&2; exit 1; }
    echo "[tools] installing debootstrap (test/bootos's roots need it)..." >&2
    apt-get update >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >/dev/null
  fi
  echo "building the $suite root in $ROOTS/$suite (a few minutes, once)" >&2
  rm -rf "$suite" "$suite.log"
  if ! nice -n 10 debootstrap --variant=minbase --include=$PACKAGES "$suite" "$suite" http://deb.debian.org/debian > "$suite.log" 2>&1; then
    tail -20 "$suite.log" >&2
    exit 1
  fi
  chroot "$suite" dpkg-query -W cloud-init >> "$suite.log"
  touch "$suite/.complete"
done
