package scheme

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

func TestSchemesKnowKinds(t *testing.T) {
	tests := []struct {
		kind           string
		obj            runtime.Object
		want           schema.GroupVersionKind
		inBootstrap    bool
		inControlPlane bool
	}{
		{
			kind: "KThreesConfig", obj: &bootstrapv1.KThreesConfig{},
			want:        schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KThreesConfig"},
			inBootstrap: true, inControlPlane: true,
		},
		{
			kind: "KThreesControlPlane", obj: &controlplanev1.KThreesControlPlane{},
			want:        schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KThreesControlPlane"},
			inBootstrap: false, inControlPlane: true,
		},
		{
			kind: "Cluster", obj: &clusterv1.Cluster{},
			want:        schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"},
			inBootstrap: true, inControlPlane: true,
		},
		{
			kind: "Machine", obj: &clusterv1.Machine{},
			want:        schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"},
			inBootstrap: true, inControlPlane: true,
		},
		{
			kind: "Secret", obj: &corev1.Secret{},
			want:        schema.GroupVersionKind{Group: "", Version: "v1", Kind: "Secret"},
			inBootstrap: true, inControlPlane: true,
		},
	}

	bootstrap, controlPlane := ForBootstrap(), ForControlPlane()
	for _, tt := range tests {
		t.Run("bootstrap/"+tt.kind, func(t *testing.T) { checkKind(t, bootstrap, tt.obj, tt.want, tt.inBootstrap) })
		t.Run("controlplane/"+tt.kind, func(t *testing.T) { checkKind(t, controlPlane, tt.obj, tt.want, tt.inControlPlane) })
	}
}

func checkKind(t *testing.T, s *runtime.Scheme, obj runtime.Object, want schema.GroupVersionKind, known bool) {
	t.Helper()
	gvks, _, err := s.ObjectKinds(obj)
	if !known {
		if err == nil {
			t.Fatalf("scheme unexpectedly knows %s as %v", want.Kind, gvks)
		}
		return
	}
	if err != nil {
		t.Fatalf("scheme does not know %s: %v", want.Kind, err)
	}
	if len(gvks) != 1 || gvks[0] != want {
		t.Fatalf("got %v, want [%v]", gvks, want)
	}
}
