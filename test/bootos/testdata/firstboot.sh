#!/bin/sh
# Runs chrooted after Ignition (ignite.sh): what systemd does on the first boot for
# capk3s's units. systemd enables the units Ignition's preset file names (first boot:
# preset-all) and starts them; capk3s-bootcmd.service is ordered Before= the
# bootstrap unit, so it runs first. Each unit runs as systemd runs a oneshot: skipped
# when its ConditionPathExists= fails, ExecStart, then ExecStartPost only on success.
# Other units (timesyncd, mounts) are checked as written and enabled, not started.
set -u
OUT=/var/log/capk3s
preset=/etc/systemd/system-preset/20-ignition.preset
for u in capk3s-bootcmd.service capk3s-bootstrap.service; do
  f=/etc/systemd/system/$u
  grep -qx "enable $u" "$preset" 2>/dev/null && [ -r "$f" ] || continue
  cond=$(sed -n 's/^ConditionPathExists=!//p' "$f")
  if [ -n "$cond" ] && [ -e "$cond" ]; then echo "$u: condition failed" >> $OUT/units; continue; fi
  rc=0
  $(sed -n 's/^ExecStart=//p' "$f") >> $OUT/units.log 2>&1 || rc=$?
  if [ $rc = 0 ]; then
    $(sed -n 's/^ExecStartPost=//p' "$f") >> $OUT/units.log 2>&1 || rc=$?
  fi
  echo "$u: exit $rc" >> $OUT/units
done
mkdir -p $OUT/run
cp -r /run/cluster-api $OUT/run/ 2>/dev/null
exit 0
