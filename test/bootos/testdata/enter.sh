#!/bin/sh
# usage: enter.sh LOWER DIR COMMAND [host]
# Runs COMMAND (sh) chrooted into an overlay of the cached root LOWER, with DIR/upper
# taking every write, in fresh mount, pid, uts, ipc and network namespaces: nothing
# reaches the host or LOWER. DIR/seed is copied to /seed. /run, /tmp and /dev are
# tmpfs (with a few device nodes bound from the host's); what must outlive the run
# goes under /var. With "host", COMMAND runs in the same namespaces but not
# chrooted, with ROOT naming the overlay, as an initramfs (Ignition's) sees the
# machine's root.
set -eu
LOWER=$1 DIR=$2 CMD=$3 MODE=${4:-chroot}
exec unshare --mount --pid --fork --uts --ipc --net /bin/sh -eu -s "$LOWER" "$DIR" "$CMD" "$MODE" <<'INNER'
LOWER=$1 DIR=$2 CMD=$3 MODE=$4
mount --make-rprivate /
mkdir -p "$DIR/upper" "$DIR/work" "$DIR/merged"
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$DIR/upper,workdir=$DIR/work" "$DIR/merged"
M=$DIR/merged
mount -t proc proc "$M/proc"
for d in run tmp dev; do mount -t tmpfs tmpfs "$M/$d"; done
for d in null zero full random urandom tty; do touch "$M/dev/$d"; mount --bind "/dev/$d" "$M/dev/$d"; done
mkdir -p "$M/seed"
cp -r "$DIR/seed/." "$M/seed/"
hostname capk3s-test
[ "$MODE" = host ] && exec env ROOT="$M" /bin/sh -c "$CMD"
exec chroot "$M" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/sh -c "$CMD"
INNER
