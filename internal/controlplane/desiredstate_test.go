package controlplane

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A server's KThreesConfig carries the control plane's k3s configuration, without
// the version (the Machine's) and without cluster-api-k3s's ignored etcdProxyImage,
// which would draw an admission warning on every server created.
func TestDesiredKThreesConfigLeavesOutWhatIsNotRendered(t *testing.T) {
	kcp := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "ns", UID: "u"}}
	kcp.Spec.KThreesConfigSpec.Version = "v1.31.4+k3s1"
	kcp.Spec.KThreesConfigSpec.ServerConfig.ClusterDomain = "site.local"
	kcp.Spec.KThreesConfigSpec.ServerConfig.DeprecatedEtcdProxyImage = "registry.example.org/socat:1" //nolint:staticcheck // the ignored field is what is tested
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}

	got := desiredKThreesConfig(kcp, cluster, "cp-abcde")
	if got.Spec.ServerConfig.ClusterDomain != "site.local" {
		t.Errorf("clusterDomain = %q, want the control plane's", got.Spec.ServerConfig.ClusterDomain)
	}
	if got.Spec.Version != "" || got.Spec.ServerConfig.DeprecatedEtcdProxyImage != "" { //nolint:staticcheck // the ignored field is what is tested
		t.Errorf("version %q, etcdProxyImage %q: want both empty", got.Spec.Version, got.Spec.ServerConfig.DeprecatedEtcdProxyImage) //nolint:staticcheck // the ignored field is what is tested
	}
	if kcp.Spec.KThreesConfigSpec.ServerConfig.DeprecatedEtcdProxyImage == "" { //nolint:staticcheck // the ignored field is what is tested
		t.Error("the control plane's own spec was changed")
	}
}

// A control plane's shard (its watch-filter label) is its servers': a filtered
// manager hears of a server's Machine and KThreesConfig only if they carry it.
func TestDesiredLabelsCarryTheControlPlanesShard(t *testing.T) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	for _, tt := range []struct {
		name          string
		kcp, template map[string]string
		want          string
		wantLabelled  bool
	}{
		{name: "unlabelled", wantLabelled: false},
		{name: "the control plane's label", kcp: map[string]string{clusterv1.WatchLabel: "shard-a"}, want: "shard-a", wantLabelled: true},
		{name: "the template's label alone", template: map[string]string{clusterv1.WatchLabel: "shard-b"}, want: "shard-b", wantLabelled: true},
		{name: "the control plane's label wins",
			kcp: map[string]string{clusterv1.WatchLabel: "shard-a"}, template: map[string]string{clusterv1.WatchLabel: "shard-b"},
			want: "shard-a", wantLabelled: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kcp := &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Labels: tt.kcp}}
			kcp.Spec.MachineTemplate.ObjectMeta.Labels = tt.template
			got, ok := desiredLabels(kcp, cluster)[clusterv1.WatchLabel]
			if ok != tt.wantLabelled || got != tt.want {
				t.Errorf("watch-filter label = %q (set: %v), want %q (set: %v)", got, ok, tt.want, tt.wantLabelled)
			}
		})
	}
}

// An existing server's infrastructure machine loses what its old template set and the
// new one does not, in nested maps too; what the provider wrote and what the new
// template sets stay, and lists are the new template's whole.
func TestDesiredExistingInfraMachineDropsWhatTheOldTemplateSet(t *testing.T) {
	current := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"providerID": "sim://a",
		"tier":       "gold",
		"network":    map[string]any{"vlan": int64(7), "mtu": int64(9000), "assigned": "10.0.0.4"},
		"disks":      []any{"root", "data"},
	}}}
	previous := map[string]any{"tier": "gold", "network": map[string]any{"vlan": int64(7), "mtu": int64(9000)}, "disks": []any{"root", "data"}}
	fromTemplate := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"network": map[string]any{"mtu": int64(1500)},
		"disks":   []any{"root"},
	}}}
	got := desiredExistingInfraMachine(current, fromTemplate, previous)
	want := map[string]any{
		"providerID": "sim://a",
		"network":    map[string]any{"mtu": int64(1500), "assigned": "10.0.0.4"},
		"disks":      []any{"root"},
	}
	if !equality.Semantic.DeepEqual(got.Object["spec"], want) {
		t.Errorf("spec %v, want %v", got.Object["spec"], want)
	}
	if _, kept := current.Object["spec"].(map[string]any)["tier"]; !kept {
		t.Error("the current machine was changed")
	}
	// Without an old template to go by, nothing is dropped.
	if spec := desiredExistingInfraMachine(current, fromTemplate, nil).Object["spec"].(map[string]any); spec["tier"] != "gold" {
		t.Errorf("spec %v without an old template, want tier gold kept", spec)
	}
}
