package controlplane

import (
	"context"
	"strings"
	"testing"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func TestEtcdSnapshotDefaultsTheClusterLabel(t *testing.T) {
	s := &controlplanev1.KThreesEtcdSnapshot{Spec: controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: "c1"}}
	if err := (&KThreesEtcdSnapshot{}).Default(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if s.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Fatalf("labels = %v", s.Labels)
	}
	if _, err := (&KThreesEtcdSnapshot{}).ValidateCreate(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	s.Labels[clusterv1.ClusterNameLabel] = "c2"
	if _, err := (&KThreesEtcdSnapshot{}).ValidateCreate(context.Background(), s); err == nil || !strings.Contains(err.Error(), "spec.clusterName") {
		t.Fatalf("a label naming another cluster: %v", err)
	}
}

func TestEtcdSnapshotSpecIsImmutable(t *testing.T) {
	old := &controlplanev1.KThreesEtcdSnapshot{Spec: controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: "c1"}}
	for name, edit := range map[string]func(*controlplanev1.KThreesEtcdSnapshot){
		"cluster": func(s *controlplanev1.KThreesEtcdSnapshot) { s.Spec.ClusterName = "c2" },
		"prefix":  func(s *controlplanev1.KThreesEtcdSnapshot) { s.Spec.NamePrefix = "nightly" },
		"location": func(s *controlplanev1.KThreesEtcdSnapshot) {
			s.Spec.Location = controlplanev1.EtcdSnapshotLocationLocal
		},
	} {
		changed := old.DeepCopy()
		edit(changed)
		if _, err := (&KThreesEtcdSnapshot{}).ValidateUpdate(context.Background(), old, changed); err == nil || !strings.Contains(err.Error(), "immutable") {
			t.Errorf("%s changed: %v", name, err)
		}
	}
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"team": "a"}
	if _, err := (&KThreesEtcdSnapshot{}).ValidateUpdate(context.Background(), old, relabelled); err != nil {
		t.Errorf("a metadata change: %v", err)
	}
}
