package k3smodel

import (
	"maps"
	"strings"
	"testing"
)

func TestSyncMember(t *testing.T) {
	etcd := map[string]string{EtcdRoleLabel: "true"}
	member := map[string]string{EtcdNodeNameAnnotation: "s-1a2b", EtcdNodeAddressAnnotation: "10.0.0.1"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	asked := with(member, EtcdRemoveAnnotation, "true")
	for _, tc := range []struct {
		name, release string
		labels, in    map[string]string
		wantRemove    string
		wantDone      map[string]string
		wantErr       string
	}{
		{name: "not an etcd Node", release: "v1.36.2+k3s1", labels: map[string]string{}, in: asked},
		{name: "not asked", release: "v1.36.2+k3s1", labels: etcd, in: member},
		{name: "asked, up to v1.34.1: remove stays", release: "v1.34.1+k3s1", labels: etcd, in: asked, wantRemove: "s-1a2b",
			wantDone: map[string]string{EtcdRemoveAnnotation: "true", EtcdRemovedNodeNameAnnotation: "s-1a2b"}},
		{name: "asked, v1.34.2: remove is consumed", release: "v1.34.2+k3s1", labels: etcd, in: asked, wantRemove: "s-1a2b",
			wantDone: map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b"}},
		{name: "asked, v1.35", release: "v1.35.0+k3s1", labels: etcd, in: asked, wantRemove: "s-1a2b",
			wantDone: map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b"}},
		{name: "asked, v1.36", release: "v1.36.3+k3s1", labels: etcd, in: with(asked, EtcdRemoveAnnotation, "TRUE"), wantRemove: "s-1a2b",
			wantDone: map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b"}},
		{name: "a remove value other than true", release: "v1.36.2+k3s1", labels: etcd, in: with(member, EtcdRemoveAnnotation, "yes")},
		{name: "asked again after a v1.34.2+ removal: k3s fails on every retry", release: "v1.36.2+k3s1", labels: etcd,
			in: map[string]string{EtcdRemovedNodeNameAnnotation: "s-1a2b", EtcdRemoveAnnotation: "true"}, wantErr: "node name annotation for node s not found"},
		{name: "removed, and its own k3s wrote its name back", release: "v1.34.1+k3s1", labels: etcd,
			in: with(asked, EtcdRemovedNodeNameAnnotation, "s-1a2b")},
		{name: "joined again under a new member name", release: "v1.36.2+k3s1", labels: etcd,
			in: with(asked, EtcdRemovedNodeNameAnnotation, "s-0000"), wantDone: member},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRelease(tc.release)
			if err != nil {
				t.Fatal(err)
			}
			got := r.SyncMember("s", tc.labels, tc.in)
			if (got.Err == nil) != (tc.wantErr == "") || got.Err != nil && !strings.Contains(got.Err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want %q", got.Err, tc.wantErr)
			}
			if got.Remove != tc.wantRemove {
				t.Errorf("removes %q, want %q", got.Remove, tc.wantRemove)
			}
			if !maps.Equal(got.Done, tc.wantDone) || (got.Done == nil) != (tc.wantDone == nil) {
				t.Errorf("annotations after = %v, want %v", got.Done, tc.wantDone)
			}
			if got.Remove != "" && !maps.Equal(got.Rejected, member) {
				t.Errorf("annotations after a refused removal = %v, want the request cleared: %v", got.Rejected, member)
			}
		})
	}
}
