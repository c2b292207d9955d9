package ownerref

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func sealedSecretRef(controller bool) metav1.OwnerReference {
	return ref("bitnami.com/v1alpha1", "SealedSecret", "c1-token", "sealed-uid", controller)
}

func externalSecretCtl() metav1.OwnerReference {
	return ref("external-secrets.io/v1beta1", "ExternalSecret", "c1-token", "es-uid", true)
}

// The one rule on controllers: only a controller of Cluster API's Cluster or of a
// k3s provider kind (any version) may be replaced; anything else is some other
// software's, and its object is left alone.
func TestExternalController(t *testing.T) {
	tests := []struct {
		name string
		in   []metav1.OwnerReference
		want *metav1.OwnerReference
	}{
		{name: "no references"},
		{name: "only plain owners, one of another software", in: []metav1.OwnerReference{configMapRef(), sealedSecretRef(false)}},
		{name: "KThreesConfig v1beta2 controller", in: []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true)}},
		{name: "KThreesConfig v1beta1 controller", in: []metav1.OwnerReference{kthreesConfigRef(bootAPI1, "cfg-0", true)}},
		{name: "Cluster controller", in: []metav1.OwnerReference{clusterRef(true)}},
		{name: "Cluster v1beta1 controller", in: []metav1.OwnerReference{ref("cluster.x-k8s.io/v1beta1", "Cluster", "c1", "u", true)}},
		{name: "this KThreesControlPlane", in: []metav1.OwnerReference{ownerCtl()}},
		{name: "another KThreesControlPlane, older version", in: []metav1.OwnerReference{ref("controlplane.cluster.x-k8s.io/v1beta1", kcpKind, "old", "u", true)}},
		{
			name: "SealedSecret controller",
			in:   []metav1.OwnerReference{configMapRef(), sealedSecretRef(true)},
			want: new(sealedSecretRef(true)),
		},
		{
			name: "ExternalSecret controller",
			in:   []metav1.OwnerReference{externalSecretCtl()},
			want: new(externalSecretCtl()),
		},
		{
			name: "a Cluster API kind that is not the Cluster",
			in:   []metav1.OwnerReference{machineSetRef(true)},
			want: new(machineSetRef(true)),
		},
		{
			name: "a kind named Cluster in another group",
			in:   []metav1.OwnerReference{ref("postgresql.cnpg.io/v1", "Cluster", "db", "db-uid", true)},
			want: new(ref("postgresql.cnpg.io/v1", "Cluster", "db", "db-uid", true)),
		},
		{
			name: "a core kind",
			in:   []metav1.OwnerReference{ref("v1", "ConfigMap", "cm", "cm-uid", true)},
			want: new(ref("v1", "ConfigMap", "cm", "cm-uid", true)),
		},
		{
			// The apiserver allows one controller; should a list carry two, any
			// external one is enough to keep hands off.
			name: "a provider controller and an external one",
			in:   []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg-0", true), sealedSecretRef(true)},
			want: new(sealedSecretRef(true)),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExternalController(secretWith(tc.in))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ExternalController = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TakeOver refuses an object that other software controls, whatever its caller
// checked before, and leaves it untouched.
func TestTakeOverRefusesExternalController(t *testing.T) {
	for _, in := range [][]metav1.OwnerReference{
		{sealedSecretRef(true)},
		{kthreesConfigRef(bootAPI2, "cfg-0", false), externalSecretCtl(), clusterRef(false)},
		{machineSetRef(true)},
	} {
		obj := secretWith(in)
		snapshot := copyRefs(in)
		changed, err := TakeOver(obj, newOwner(), newScheme(t, true))
		var ext *ExternallyControlledError
		if !errors.As(err, &ext) {
			t.Fatalf("TakeOver(%s) error = %v, want an ExternallyControlledError", dump(in), err)
		}
		if changed {
			t.Error("changed = true")
		}
		if !reflect.DeepEqual(obj.GetOwnerReferences(), snapshot) {
			t.Errorf("references changed: %s", dump(obj.GetOwnerReferences()))
		}
		if !strings.Contains(err.Error(), ext.Controller.Kind+" "+ext.Controller.Name) {
			t.Errorf("error %q does not name the controller", err)
		}
	}
}

// A Secret of CAPI's type is a provider's unless other software controls it; a
// Secret of another type is a provider's only when a k3s provider references it.
func TestMadeByProvider(t *testing.T) {
	const capiType = "cluster.x-k8s.io/secret"
	tests := []struct {
		name string
		typ  string
		in   []metav1.OwnerReference
		want bool
	}{
		{name: "CAPI type, no owners", typ: capiType, want: true},
		{name: "CAPI type, Cluster plain owner", typ: capiType, in: []metav1.OwnerReference{clusterRef(false)}, want: true},
		{name: "CAPI type, KThreesConfig controller", typ: capiType, in: []metav1.OwnerReference{kthreesConfigRef(bootAPI1, "cfg", true)}, want: true},
		{name: "CAPI type, SealedSecret controller", typ: capiType, in: []metav1.OwnerReference{sealedSecretRef(true)}, want: false},
		{name: "Opaque, no owners (the user's)", typ: "Opaque", want: false},
		{name: "kubernetes.io/tls, Cluster plain owner (the user's)", typ: "kubernetes.io/tls", in: []metav1.OwnerReference{clusterRef(false)}, want: false},
		{name: "Opaque, KThreesControlPlane plain owner (cluster-api-k3s)", typ: "Opaque", in: []metav1.OwnerReference{ref("controlplane.cluster.x-k8s.io/v1beta1", kcpKind, kcpName, kcpUID, false)}, want: true},
		{name: "Opaque, KThreesConfig controller (cluster-api-k3s)", typ: "Opaque", in: []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg", true)}, want: true},
		{name: "Opaque, KThreesConfig owner but an ExternalSecret controls it", typ: "Opaque", in: []metav1.OwnerReference{kthreesConfigRef(bootAPI2, "cfg", false), externalSecretCtl()}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := secretWith(tc.in)
			s.Type = corev1.SecretType(tc.typ)
			if got := MadeByProvider(s); got != tc.want {
				t.Errorf("MadeByProvider = %v, want %v", got, tc.want)
			}
		})
	}
}
