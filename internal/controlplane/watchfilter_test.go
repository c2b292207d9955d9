package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func TestHandlesOnlyItsShardsControlPlanes(t *testing.T) {
	labelled := func(v string) *controlplanev1.KThreesControlPlane {
		return &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{clusterv1.WatchLabel: v}}}
	}
	unlabelled := &controlplanev1.KThreesControlPlane{}
	for _, tt := range []struct {
		filter string
		kcp    *controlplanev1.KThreesControlPlane
		want   bool
	}{
		{"", unlabelled, true},
		{"", labelled("shard-a"), true},
		{"shard-a", labelled("shard-a"), true},
		{"shard-a", labelled("shard-b"), false},
		{"shard-a", unlabelled, false},
	} {
		if got := (&Reconciler{WatchFilterValue: tt.filter}).handles(tt.kcp); got != tt.want {
			t.Errorf("--watch-filter=%q, labels %v: handles = %v, want %v", tt.filter, tt.kcp.Labels, got, tt.want)
		}
	}
}
