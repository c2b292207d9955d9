package conversion

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
)

// versionGetter is an apiVersion getter whose every group serves version v.
func versionGetter(v string) APIVersionGetter {
	return func(_ context.Context, gk schema.GroupKind) (string, error) { return gk.Group + "/" + v, nil }
}

// Two managers in one process (the sandbox, tests) each build their converters at
// webhook setup, as controller-runtime's builder asks for them; each converter must
// read through its own manager's lookups, whichever manager was set up last and
// however their requests interleave.
func TestTwoManagersKeepTheirOwnAPIVersionGetter(t *testing.T) {
	s := scheme.ForControlPlane()
	versions := []string{"v1alpha1", "v1beta9"}
	var converters []Converter
	for _, v := range versions {
		converters = append(converters, Lookups{APIVersion: versionGetter(v)}.KThreesControlPlane())
	}
	var wg sync.WaitGroup
	for i, factory := range converters {
		c, err := factory(s)
		if err != nil {
			t.Fatal(err)
		}
		want := "infra.example.com/" + versions[i]
		for range 20 {
			wg.Go(func() {
				hub := &controlplanev1.KThreesControlPlane{Spec: controlplanev1.KThreesControlPlaneSpec{
					MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infra.example.com", Kind: "XMachineTemplate", Name: "cp"},
					}},
				}}
				hub.SetGroupVersionKind(controlplanev1.GroupVersion.WithKind("KThreesControlPlane"))
				spoke := &controlplanev1beta1.KThreesControlPlane{}
				spoke.SetGroupVersionKind(controlplanev1beta1.GroupVersion.WithKind("KThreesControlPlane"))
				if err := c.ConvertObject(t.Context(), hub, spoke); err != nil {
					t.Error(err)
					return
				}
				if got := spoke.Spec.InfrastructureTemplate.APIVersion; got != want {
					t.Errorf("manager %d's converter wrote apiVersion %q, want its own getter's %q", i, got, want)
				}
			})
		}
	}
	wg.Wait()
}

// The same for the stored object reader: the bootstrap and the control-plane manager
// each read stored objects as their own ServiceAccount, so a converter must never
// read through another manager's reader, nor lose its own when another is set up.
func TestTwoManagersKeepTheirOwnStoredObjectReader(t *testing.T) {
	s := scheme.ForBootstrap()
	var mine, other Lookups
	stored := useStoredObjects(&mine)
	useStoredObjects(&other) // empty: the object is not where this one reads
	withMine, err := mine.KThreesConfig()(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.KThreesConfig()(s); err != nil {
		t.Fatal(err)
	}

	cfg := &bootstrapv1.KThreesConfig{Spec: secretConfigSpecV1Beta2()}
	cfg.Name, cfg.Namespace, cfg.UID = "c", "ns", "c-uid"
	cfg.SetGroupVersionKind(bootstrapv1.GroupVersion.WithKind("KThreesConfig"))
	v1 := &bootstrapv1beta1.KThreesConfig{}
	v1.SetGroupVersionKind(bootstrapv1beta1.GroupVersion.WithKind("KThreesConfig"))
	stored.put(cfg)
	if err := withMine.ConvertObject(t.Context(), cfg.DeepCopy(), v1); err != nil {
		t.Fatal(err)
	}
	up := &bootstrapv1.KThreesConfig{}
	up.SetGroupVersionKind(bootstrapv1.GroupVersion.WithKind("KThreesConfig"))
	if err := withMine.ConvertObject(t.Context(), v1, up); err != nil {
		t.Fatalf("converting up through the manager whose reader holds the object: %v", err)
	}
	if up.Spec.ServerConfig.ExtraConfig == nil {
		t.Error("the withheld extraConfig did not come back from the stored object")
	}
}
