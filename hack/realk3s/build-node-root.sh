#!/bin/sh
# Builds the Debian root that the real-k3s layer (test/realk3s) boots its machines
# from: the same bookworm base as test/bootos's roots (cloud-init 22.4, systemd's
# files, python3), plus what a k3s node takes from its host and a release binary
# does not bundle on a build from source: iptables, ipset, conntrack, iproute2,
# mount and CA certificates. No k3s in it: the layer puts the binary and install.sh
# it is given into each machine, as a user's image would carry them.
# Cached outside the work tree (CAPK3S_ROOTS, default $HOME/.cache/capk3s/roots); a
# root with its .complete marker is never touched again, and machines only ever
# mount it read-only under an overlay.
set -eu
ROOTS=${CAPK3S_ROOTS:-$HOME/.cache/capk3s/roots}
NAME=k3s-node-bookworm
PACKAGES=python3-cffi-backend,cloud-init,systemd,python3,locales,iptables,ipset,conntrack,iproute2,mount,util-linux,procps,kmod,ca-certificates,curl,ethtool,socat
mkdir -p "$ROOTS"
cd "$ROOTS"
[ -e "$NAME/.complete" ] && exit 0
if ! command -v debootstrap >/dev/null; then
  command -v apt-get >/dev/null || { echo "debootstrap is needed to build the $NAME root, and there is no apt-get: install it by hand" >&2; exit 1; }
  echo "[tools] installing debootstrap..." >&2
  apt-get update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >/dev/null
fi
echo "building the $NAME root in $ROOTS/$NAME (a few minutes, once)" >&2
rm -rf "$NAME" "$NAME.log"
if ! nice -n 10 debootstrap --variant=minbase --include=$PACKAGES bookworm "$NAME" http://deb.debian.org/debian > "$NAME.log" 2>&1; then
  tail -20 "$NAME.log" >&2
  exit 1
fi
chroot "$NAME" dpkg-query -W cloud-init iptables >> "$NAME.log"
touch "$NAME/.complete"
