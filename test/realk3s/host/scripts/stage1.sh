#!/bin/sh
# usage: stage1.sh NAME DIR LOWER
# Runs in the machine's network namespace (nsenter), still in the host's mount
# namespace: puts itself into the machine's own cgroup in every hierarchy the host
# has mounted, so that the cgroup namespace made next has that cgroup as its root,
# then enters the machine's other namespaces. --kill-child: when this process is
# killed, the machine's PID 1 is too, and with it every process of the machine.
set -eu
NAME=$1 DIR=$2 LOWER=$3
for h in /sys/fs/cgroup/*; do
  [ -d "$h" ] && [ ! -L "$h" ] && mountpoint -q "$h" || continue
  parent=$h/capk3s-realk3s
  mkdir -p "$parent/$NAME"
  # cpuset cgroups of cgroup v1 start with no CPUs or memory nodes.
  if [ -f "$h/cpuset.cpus" ]; then
    for f in cpuset.cpus cpuset.mems; do
      [ -n "$(cat "$parent/$f")" ] || cat "$h/$f" > "$parent/$f"
      [ -n "$(cat "$parent/$NAME/$f")" ] || cat "$parent/$f" > "$parent/$NAME/$f"
    done
  fi
  echo $$ > "$parent/$NAME/cgroup.procs"
done
exec unshare --mount --pid --fork --kill-child --uts --ipc --cgroup /bin/sh "$DIR/stage2.sh" "$NAME" "$DIR" "$LOWER"
