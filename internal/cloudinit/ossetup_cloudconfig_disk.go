package cloudinit

import (
	"path"
	"strconv"
	"strings"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// ccFilesystemDevice is an fs_setup entry's device and partition, and whether
// the device needs a device_aliases entry naming itself.
//
// The schemas of cloud-init 22.4 and 25.1 take partition as auto, any or none
// only: a number, as a string or an integer, fails validation (and crashes
// 22.4's `schema --annotate`). Both take the device as "<device>.<partition>",
// which cloud-init splits at its last dot, so a number goes there. cloud-init
// then resolves the device through device_aliases and the datasource's names
// (ephemeral0, ...) and, for a name neither knows (any path), keeps the dotted
// name, which does not exist. Aliased to itself, the device is resolved by the
// datasource as before, or else kept as it is: what partition: <n> would do.
//
// cloud-init splits every device that way, also a path with a dot of its own
// (/dev/disk/by-path/pci-0000:00:05.0, /dev/disk/by-id/nvme-eui.00253...),
// which it would take for device and partition "0". Such a path gets its
// partition (or "any", cloud-init's default) after a dot of its own, and an
// alias. A short name with a dot (ephemeral0.1) is cloud-init's own form and
// stays; CheckFilesystemPartition refused one with a partition number too.
func ccFilesystemDevice(fs bootstrapv1.Filesystem) (device, partition string, alias bool) {
	switch {
	case numericID(fs.Partition):
		return fs.Device + "." + fs.Partition, "", true
	case path.IsAbs(fs.Device) && strings.Contains(fs.Device, "."):
		p := fs.Partition
		if p == "" {
			p = "any"
		}
		return fs.Device + "." + p, "", true
	}
	return fs.Device, fs.Partition, false
}

// ccLayout is disk_setup's layout: the bool as given, or each partition's
// percentage, paired with a type code unless it is the table's Linux default.
func ccLayout(p bootstrapv1.Partition) any {
	if len(p.DiskLayout) == 0 {
		if p.Layout == nil {
			return nil
		}
		return *p.Layout
	}
	linux, _ := partitionTypeCode(p.TableType, "")
	layout := make([]any, 0, len(p.DiskLayout))
	for _, ps := range p.DiskLayout {
		// newPlan checked every type.
		code, _ := partitionTypeCode(p.TableType, ps.PartitionType)
		if code == linux {
			layout = append(layout, ps.Percentage)
			continue
		}
		layout = append(layout, []any{ps.Percentage, ccTypeCode(p.TableType, code)})
	}
	return layout
}

// ccTypeCode is a partition type code as cloud-init's schema wants it: an
// integer (22.4 takes nothing else) whenever cloud-init then hands sfdisk or
// sgdisk the same code. It formats the value with %s; sfdisk reads MBR codes
// as hex, where leading zeros do not count ("07" is 7); for GPT it pads the
// digits on the right to four ("82" becomes 8200), so a leading zero would be
// lost ("0700" is not 700). Codes with hex letters, "0700" and GUIDs cannot be
// integers and stay strings: 25.1's schema takes them, 22.4's only warns, and
// both versions partition as asked.
func ccTypeCode(table, code string) any {
	n, err := strconv.Atoi(code)
	if err != nil || !numericID(code) || (table == "gpt" && strconv.Itoa(n) != code) {
		return code
	}
	return n
}
