package k3smodel

import (
	"maps"
	"testing"
)

func TestServerRoleLabelsHaveNoMasterLabel(t *testing.T) {
	got := ServerRoleLabels(true)
	want := map[string]string{ControlPlaneRoleLabel: "true", EtcdRoleLabel: "true"}
	if !maps.Equal(got, want) {
		t.Errorf("etcd server: %v, want %v", got, want)
	}
	if got := ServerRoleLabels(false); !maps.Equal(got, map[string]string{ControlPlaneRoleLabel: "true"}) {
		t.Errorf("datastore server: %v, want the control-plane role alone", got)
	}
}
