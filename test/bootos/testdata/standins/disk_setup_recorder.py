

# capk3s test: appended to cc_disk_setup in the throwaway root. The module runs
# as on a machine (aliases, device lookups, layouts) up to the calls that would
# write a partition table or a file system, which are recorded instead.
def _capk3s_record(line):
    with open("/var/log/capk3s/disks", "a") as f:
        f.write(line + "\n")


def mkpart(device, definition):
    _capk3s_record("mkpart %s table=%s layout=%r overwrite=%r" % (
        device, definition.get("table_type"), definition.get("layout"), definition.get("overwrite")))


def mkfs(fs_cfg):
    _capk3s_record("mkfs device=%s partition=%s filesystem=%s label=%s extra_opts=%r" % (
        fs_cfg.get("device"), fs_cfg.get("partition"), fs_cfg.get("filesystem"),
        fs_cfg.get("label"), fs_cfg.get("extra_opts")))
