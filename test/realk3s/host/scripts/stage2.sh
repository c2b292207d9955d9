#!/bin/sh
# usage: stage2.sh NAME DIR LOWER
# PID 1 of the machine until it execs the supervisor: mounts the machine's root (an
# overlay of LOWER taking writes in DIR/upper) with its own /proc, /sys, cgroup
# hierarchies (rooted at the machine's cgroup), /run and /tmp, binds /dev and the
# machine's data folder for k3s (DIR/rancher: containerd's overlay snapshots cannot
# live on an overlay), then starts the supervisor chrooted into it, which runs the
# first boot.
set -eu
NAME=$1 DIR=$2 LOWER=$3
mount --make-rprivate /
M=$DIR/merged
mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$DIR/upper,workdir=$DIR/work" "$M"
mount -t proc proc "$M/proc"
mount -t sysfs sysfs "$M/sys"
mount -t tmpfs -o mode=0755 cgroup "$M/sys/fs/cgroup"
for h in /sys/fs/cgroup/*; do
  [ -d "$h" ] && [ ! -L "$h" ] && mountpoint -q "$h" || continue
  b=$(basename "$h")
  mkdir -p "$M/sys/fs/cgroup/$b"
  case "$b" in
    unified) mount -t cgroup2 cgroup2 "$M/sys/fs/cgroup/$b" ;;
    systemd) mount -t cgroup -o none,name=systemd cgroup "$M/sys/fs/cgroup/$b" ;;
    *) mount -t cgroup -o "$b" cgroup "$M/sys/fs/cgroup/$b" ;;
  esac
done
mount --rbind /dev "$M/dev"
for d in run tmp; do mount -t tmpfs -o mode=1777 tmpfs "$M/$d"; done
chmod 0755 "$M/run"
mkdir -p "$M/var/lib/rancher"
mount --bind "$DIR/rancher" "$M/var/lib/rancher"
# The kubelet's bidirectional volume mounts need shared propagation under the root.
mount --make-rshared "$M"
hostname "$NAME"
exec chroot "$M" /usr/local/sbin/minisystemd init -- /bin/sh /seed/boot.sh
