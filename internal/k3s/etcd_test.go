package k3s

import "testing"

func TestEtcdMemberRemoved(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"a member", map[string]string{EtcdNodeNameAnnotation: "s-1a2b"}, false},
		{"asked, not answered", map[string]string{EtcdRemoveAnnotation: "true", EtcdNodeNameAnnotation: "s-1a2b"}, false},
		{"removed, up to v1.34.1 (remove kept)", map[string]string{EtcdRemoveAnnotation: "true", EtcdRemovedNodeNameAnnotation: "s-1a2b"}, true},
		{"removed, from v1.34.2 (remove deleted)", map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b"}, true},
		{"removed, its own k3s wrote node-name back", map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b", EtcdNodeNameAnnotation: "s-1a2b"}, true},
		{"joined again as a new member", map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b", EtcdNodeNameAnnotation: "s-9f9f"}, false},
	} {
		if got := EtcdMemberRemoved(tc.annotations); got != tc.want {
			t.Errorf("%s: EtcdMemberRemoved = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !EtcdRemovalRequested(map[string]string{EtcdRemoveAnnotation: "True"}) || EtcdRemovalRequested(map[string]string{EtcdRemoveAnnotation: "yes"}) {
		t.Error("EtcdRemovalRequested must take \"true\" in any case, and nothing else")
	}
}

func TestEtcdS3SnapshotName(t *testing.T) {
	for name, want := range map[string]bool{
		"etcd-snapshot-cp-0-1700000000":     true,
		"etcd-snapshot-cp-0-1700000000.zip": true,
		"older/etcd-snapshot-cp-0-1":        true,
		"":                                  false,
		"/var/lib/rancher/k3s/server/db/snapshots/etcd-snapshot-cp-0-1": false,
		"../other/etcd-snapshot-cp-0-1":                                 false,
		"a/../../b":                                                     false,
		"older/":                                                        false,
	} {
		if got := EtcdS3SnapshotName(name); got != want {
			t.Errorf("EtcdS3SnapshotName(%q) = %v, want %v", name, got, want)
		}
	}
}
