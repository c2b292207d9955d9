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
