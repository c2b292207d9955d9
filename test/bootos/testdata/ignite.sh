#!/bin/sh
# usage (enter.sh's host mode, ROOT set): ignite.sh IGNITION DIR
# The first boot of an Ignition machine. Ignition runs as in the initramfs, outside
# the machine's root and pointed at it (--root), with the config from DIR/seed
# (platform "file"): the stages that need no disks, fetch-offline and files (users,
# groups, files, units and their presets). disks and mount would partition and mount
# block devices, which do not exist here. If Ignition succeeded, what systemd would
# then start on the first boot runs chrooted (firstboot.sh); on a failure the
# initramfs goes to emergency.target and nothing more runs.
set -u
IGN=$1 DIR=$2
OUT=$ROOT/var/log/capk3s
mkdir -p "$OUT" "$DIR/ign" "$ROOT/var/lib/capk3s-standin" "$ROOT/usr/local/share/capk3s" "$ROOT/usr/local/bin" "$ROOT/usr/local/sbin"
for f in systemctl curl mount; do install -m 0755 "$DIR/seed/standins/$f" "$ROOT/usr/local/bin/$f"; done
install -m 0755 "$DIR/seed/standins/service" "$ROOT/usr/local/sbin/service"
install -m 0755 "$DIR/seed/standins/install.sh" "$ROOT/usr/local/share/capk3s/install.sh"
install -m 0755 "$DIR/seed/standins/install.sh" "$ROOT/opt/install.sh"
# The groups the users name that the image is taken to ship (seed/image-groups):
# Ignition, unlike cloud-init, never creates a missing group for a user.
[ -r "$DIR/seed/image-groups" ] && while read -r g; do groupadd --root "$ROOT" "$g" || exit 1; done < "$DIR/seed/image-groups"
ok=true
for stage in fetch-offline files; do
  IGNITION_CONFIG_FILE="$DIR/seed/config.ign" "$IGN" --platform=file --stage=$stage --root="$ROOT" --log-to-stdout \
    --config-cache="$DIR/ign/config.json" --state-file="$DIR/ign/state" --neednet="$DIR/ign/neednet" >> "$OUT/ignition.log" 2>&1
  rc=$?
  echo "$stage: exit $rc" >> "$OUT/stage-exits"
  [ $rc = 0 ] || { ok=false; break; }
done
$ok || exit 0
chroot "$ROOT" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/sh /seed/firstboot.sh
exit 0
