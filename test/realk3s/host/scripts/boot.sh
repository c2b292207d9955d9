#!/bin/sh
# The machine's first boot: cloud-init's four stages from the NoCloud seed, in the
# order systemd runs them. What the bootstrap data installs (k3s, through its
# install.sh and systemctl) keeps running under the supervisor afterwards.
OUT=/var/log/realk3s
mkdir -p $OUT /var/lib/cloud/seed/nocloud
cp /seed/user-data /seed/meta-data /var/lib/cloud/seed/nocloud/
for stage in "init --local" "init" "modules --mode config" "modules --mode final"; do
  cloud-init $stage >> $OUT/cloud-init-stages.log 2>&1
  echo "$stage: exit $?" >> $OUT/stage-exits
done
cloud-init status --long > $OUT/cloud-init-status 2>&1
echo "exit $?" >> $OUT/cloud-init-status
