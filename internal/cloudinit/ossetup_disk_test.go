package cloudinit

import (
	"reflect"
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// TestRenderFilesystemPartition: the schemas of cloud-init 22.4 and 25.1 take
// partition as one of auto/any/none only, neither as a string of digits nor as an
// integer (22.4's `schema --annotate` crashes on either). A partition number
// therefore goes into the device as cloud-init's own "<device>.<partition>",
// which both versions' schemas take and split at the last dot; device_aliases
// maps the device to itself, or cloud-init, finding no alias and no datasource
// name for a path, would keep the dotted name. A path with a dot of its own is
// written the same way, or cloud-init would split it.
func TestRenderFilesystemPartition(t *testing.T) {
	const (
		byPath  = "/dev/disk/by-path/pci-0000:00:05.0"
		byPath2 = "/dev/disk/by-path/pci-0000:00:06.0"
		byID    = "/dev/disk/by-id/nvme-eui.0025388b91b0a123"
	)
	in := minimal(Agent)
	in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Filesystems: []bootstrapv1.Filesystem{
		{Device: "/dev/sdb", Partition: "1", Filesystem: "ext4"},
		{Device: "/dev/nvme1n1", Partition: "12", Filesystem: "xfs"},
		{Device: byPath, Partition: "2", Filesystem: "ext4"},
		{Device: "/dev/sdc", Partition: "none", Filesystem: "ext4"},
		{Device: "/dev/sdd", Partition: "auto", Filesystem: "ext4", Label: "data"},
		{Device: "/dev/sde", Partition: "any", Filesystem: "ext4"},
		{Device: "/dev/sdf", Filesystem: "ext4"},
		{Device: "ephemeral0", Partition: "1", Filesystem: "ext4"},
		{Device: byPath2, Partition: "none", Filesystem: "ext4"},
		{Device: byID, Filesystem: "ext4"},
	}}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawCloudConfig(t, out)
	fsSetup, _ := raw["fs_setup"].([]any)
	want := []struct{ device, partition string }{
		{"/dev/sdb.1", ""},
		{"/dev/nvme1n1.12", ""},
		{byPath + ".2", ""},
		{"/dev/sdc", "none"},
		{"/dev/sdd", "auto"},
		{"/dev/sde", "any"},
		{"/dev/sdf", ""},
		{"ephemeral0.1", ""},
		{byPath2 + ".none", ""},
		// cloud-init's default partition.
		{byID + ".any", ""},
	}
	if len(fsSetup) != len(want) {
		t.Fatalf("fs_setup = %v", fsSetup)
	}
	for i, w := range want {
		e, _ := fsSetup[i].(map[string]any)
		part, hasPart := e["partition"]
		if e["device"] != w.device || (w.partition == "" && hasPart) || (w.partition != "" && part != w.partition) {
			t.Errorf("fs_setup[%d] = %v, want device %s, partition %q", i, e, w.device, w.partition)
		}
	}
	wantAliases := map[string]any{"/dev/sdb": "/dev/sdb", "/dev/nvme1n1": "/dev/nvme1n1", byPath: byPath, byPath2: byPath2, byID: byID, "ephemeral0": "ephemeral0"}
	if got := raw["device_aliases"]; !reflect.DeepEqual(got, wantAliases) {
		t.Errorf("device_aliases = %v\nwant %v", got, wantAliases)
	}
}

// TestRenderLayoutTypeCodes: cloud-init 22.4's schema takes a partition type
// only as an integer; cloud-init formats it with %s for sfdisk (MBR, hex) and
// pads it on the right to four digits for sgdisk (GPT). A code is an integer
// whenever that gives sfdisk/sgdisk the same code; the others (hex letters, a
// GPT code with a leading zero, a GUID) cannot be, and stay strings.
func TestRenderLayoutTypeCodes(t *testing.T) {
	in := minimal(Agent)
	in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Partitions: []bootstrapv1.Partition{
		{Device: "/dev/sdb", DiskLayout: []bootstrapv1.PartitionSpec{
			{Percentage: 10, PartitionType: "LinuxSwap"}, {Percentage: 10, PartitionType: "NTFS"},
			{Percentage: 10, PartitionType: "LVM"}, {Percentage: 10, PartitionType: "LinuxExtended"}, {Percentage: 60},
		}},
		{Device: "/dev/sdc", TableType: "gpt", DiskLayout: []bootstrapv1.PartitionSpec{
			{Percentage: 10, PartitionType: "LinuxSwap"}, {Percentage: 10, PartitionType: "Fat32"},
			{Percentage: 10, PartitionType: "LinuxRAID"}, {Percentage: 10, PartitionType: "0FC63DAF-8483-4772-8E79-3D69D8477DE4"},
			{Percentage: 60, PartitionType: "Linux"},
		}},
	}}
	out, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	disks, _ := rawCloudConfig(t, out)["disk_setup"].(map[string]any)
	layout := func(dev string) any { d, _ := disks[dev].(map[string]any); return d["layout"] }
	wantMBR := []any{[]any{10.0, 82.0}, []any{10.0, 7.0}, []any{10.0, "8e"}, []any{10.0, 85.0}, 60.0}
	if got := layout("/dev/sdb"); !reflect.DeepEqual(got, wantMBR) {
		t.Errorf("MBR layout = %#v\nwant %#v", got, wantMBR)
	}
	wantGPT := []any{[]any{10.0, 8200.0}, []any{10.0, "0700"}, []any{10.0, "fd00"}, []any{10.0, "0FC63DAF-8483-4772-8E79-3D69D8477DE4"}, 60.0}
	if got := layout("/dev/sdc"); !reflect.DeepEqual(got, wantGPT) {
		t.Errorf("GPT layout = %#v\nwant %#v", got, wantGPT)
	}
	if !strings.Contains(string(out), "- - 10\n      - 82\n") {
		t.Errorf("the swap code is not a plain YAML integer:\n%s", out)
	}
}

// A partition cloud-init would not read as a partition is refused, naming it.
func TestRenderFilesystemPartitionErrors(t *testing.T) {
	for _, tc := range []struct {
		device, partition, want string
	}{
		{"/dev/sdb", "first", `"first" is not a partition number or auto, any or none`},
		{"/dev/sdb", "0", `"0" is not a partition number or auto, any or none`},
		{"/dev/sdb", "01", `"01" is not a partition number or auto, any or none`},
		{"/dev/sdb", "Auto", `"Auto" is not a partition number or auto, any or none`},
		{"/dev/sdb", "-1", `"-1" is not a partition number or auto, any or none`},
		{"ephemeral0.1", "2", `device "ephemeral0.1" already names partition 1`},
	} {
		in := minimal(Agent)
		in.Spec.DiskSetup = &bootstrapv1.DiskSetup{Filesystems: []bootstrapv1.Filesystem{
			{Device: tc.device, Partition: tc.partition, Filesystem: "ext4"},
		}}
		_, err := Render(in)
		if err == nil || !strings.Contains(err.Error(), "spec.diskSetup.filesystems[0].partition") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s partition %q: Render error = %v, want %q", tc.device, tc.partition, err, tc.want)
		}
		if CheckFilesystemPartition(tc.device, tc.partition) == nil {
			t.Errorf("%s partition %q: CheckFilesystemPartition takes it", tc.device, tc.partition)
		}
	}
}
