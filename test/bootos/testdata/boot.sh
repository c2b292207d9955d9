#!/bin/sh
# Runs inside the root (enter.sh): a first boot of /seed/user-data from a NoCloud
# seed, cloud-init's four stages in systemd's order, with stand-ins for what
# cannot run here. Everything the test reads afterwards is under /var/log/capk3s
# (/run is a tmpfs that ends with the run).
set -u
OUT=/var/log/capk3s
mkdir -p $OUT /var/lib/cloud/seed/nocloud /var/lib/capk3s-standin /usr/local/share/capk3s
cp /seed/user-data /var/lib/cloud/seed/nocloud/user-data
printf 'instance-id: iid-capk3s\nlocal-hostname: capk3s-test\n' > /var/lib/cloud/seed/nocloud/meta-data
printf 'datasource_list: [NoCloud, None]\nlocale: C.UTF-8\n' > /etc/cloud/cloud.cfg.d/99-capk3s-test.cfg
for f in systemctl curl ssh-keygen mount; do install -m 0755 /seed/standins/$f /usr/local/bin/$f; done
install -m 0755 /seed/standins/service /usr/local/sbin/service
install -m 0755 /seed/standins/install.sh /usr/local/share/capk3s/install.sh
install -m 0755 /seed/standins/install.sh /opt/install.sh
# disk_setup and fs_setup run for real up to the partitioning and mkfs calls,
# which are recorded instead (there are no disks to spare here).
ds=$(python3 -c 'import cloudinit.config.cc_disk_setup as m; print(m.__file__)')
cat /seed/standins/disk_setup_recorder.py >> "$ds"
rm -rf "$(dirname "$ds")/__pycache__"

for stage in "init --local" "init" "modules --mode config" "modules --mode final"; do
  cloud-init $stage >> $OUT/stages.log 2>&1
  echo "$stage: exit $?" >> $OUT/stage-exits
done
cloud-init status --long > $OUT/status 2>&1
echo "exit $?" >> $OUT/status
cloud-init schema --config-file /seed/user-data > $OUT/schema 2>&1
echo "exit $?" >> $OUT/schema
mkdir -p $OUT/run
cp -r /run/cluster-api $OUT/run/ 2>/dev/null
cp /run/cloud-init/result.json /run/cloud-init/status.json $OUT/run/ 2>/dev/null
cp /var/log/cloud-init.log /var/log/cloud-init-output.log $OUT/ 2>/dev/null
exit 0
