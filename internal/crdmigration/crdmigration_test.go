package crdmigration_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1beta1 "github.com/capk3s/capk3s/api/controlplane/v1beta1"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/bootstrap"
	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/crdmigration"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/test/envtest"
)

const (
	configsCRD       = "kthreesconfigs.bootstrap.cluster.x-k8s.io"
	configTemplsCRD  = "kthreesconfigtemplates.bootstrap.cluster.x-k8s.io"
	controlPlanesCRD = "kthreescontrolplanes.controlplane.cluster.x-k8s.io"
)

// Objects as an older provider's users wrote them, at v1beta1.
const (
	oldConfigYAML = `
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KThreesConfig
metadata:
  name: old-agent
spec:
  version: v1.35.4+k3s1
  agentConfig:
    nodeLabels: [tier=edge]
  files:
  - path: /etc/motd
    content: hello
    permissions: "0644"
`
	oldTemplateYAML = `
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KThreesConfigTemplate
metadata:
  name: old-agents
spec:
  template:
    spec:
      preK3sCommands: [echo before]
      agentConfig:
        kubeletArgs: [max-pods=50]
`
	oldControlPlaneYAML = `
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KThreesControlPlane
metadata:
  name: old-control-plane
spec:
  replicas: 3
  version: v1.35.4+k3s1
  infrastructureTemplate:
    apiVersion: infrastructure.sim.capk3s.io/v1beta2
    kind: SimMachineTemplate
    name: old-servers
  nodeDrainTimeout: 90s
  kthreesConfigSpec:
    serverConfig:
      disableComponents: [traefik]
`
)

// TestStoredV1Beta1ObjectsAreMigrated: a management cluster whose CRDs stored
// v1beta1 (status.storedVersions lists it) ends with every object rewritten at
// v1beta2 and storedVersions [v1beta2], once the providers' managers run, with no
// one editing storedVersions; the objects keep what was written.
func TestStoredV1Beta1ObjectsAreMigrated(t *testing.T) {
	ctx := context.Background()
	crds := []string{configsCRD, configTemplsCRD, controlPlanesCRD}
	t.Cleanup(func() {
		for _, name := range crds {
			setStorageVersion(t, name, "v1beta2")
		}
	})

	// The webhooks first: v1beta1 objects are admitted by the v1beta2 webhooks, through
	// conversion.
	env.StartManager(t, envtest.ManagerOptions{Webhooks: true}, func(_ context.Context, mgr ctrl.Manager) error {
		if err := bootstrapwebhooks.SetupWebhooks(mgr); err != nil {
			return err
		}
		return controlplanewebhooks.SetupWebhooks(mgr)
	})

	// As an older provider left it: v1beta1 is the storage version, objects written.
	for _, name := range crds {
		setStorageVersion(t, name, "v1beta1")
	}
	ns := env.NewNamespace(t)
	objs := []client.Object{&bootstrapv1beta1.KThreesConfig{}, &bootstrapv1beta1.KThreesConfigTemplate{}, &controlplanev1beta1.KThreesControlPlane{}}
	for i, manifest := range []string{oldConfigYAML, oldTemplateYAML, oldControlPlaneYAML} {
		if err := yaml.UnmarshalStrict([]byte(manifest), objs[i]); err != nil {
			t.Fatal(err)
		}
		objs[i].SetNamespace(ns)
		if err := env.Client.Create(ctx, objs[i]); err != nil {
			t.Fatalf("creating %s at v1beta1: %v", objs[i].GetName(), err)
		}
	}
	// The provider is upgraded: v1beta2 becomes the storage version. The apiserver
	// adds it to storedVersions and keeps v1beta1 there, since objects still hold it.
	for _, name := range crds {
		setStorageVersion(t, name, "v1beta2")
		if got := slices.Sorted(slices.Values(storedVersions(t, name))); !slices.Equal(got, []string{"v1beta1", "v1beta2"}) {
			t.Fatalf("%s storedVersions = %v before the migration, want [v1beta1 v1beta2]", name, got)
		}
	}
	before := resourceVersions(t, ctx, ns)

	// The managers' migrators.
	env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		if err := crdmigration.Setup(ctx, mgr, bootstrap.MigratedKinds, nil); err != nil {
			return err
		}
		return crdmigration.Setup(ctx, mgr, controlplane.MigratedKinds, nil)
	})
	for _, name := range crds {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return slices.Equal(storedVersions(t, name), []string{"v1beta2"}), nil
		})
		if err != nil {
			t.Fatalf("%s storedVersions = %v after a minute, want [v1beta2]", name, storedVersions(t, name))
		}
	}
	// Each object was written again (now at v1beta2), and still says what it said.
	after := resourceVersions(t, ctx, ns)
	for name, rv := range before {
		if after[name] == rv {
			t.Errorf("%s was not rewritten by the migration (resourceVersion %s)", name, rv)
		}
	}
	cfg := &bootstrapv1.KThreesConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old-agent"}, cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Spec.Version != "v1.35.4+k3s1" || !slices.Equal(cfg.Spec.AgentConfig.NodeLabels, []string{"tier=edge"}) || len(cfg.Spec.Files) != 1 {
		t.Errorf("migrated KThreesConfig spec = %+v", cfg.Spec)
	}
	cp := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old-control-plane"}, cp); err != nil {
		t.Fatal(err)
	}
	if cp.Spec.MachineTemplate.Spec.InfrastructureRef.Name != "old-servers" || !slices.Equal(cp.Spec.KThreesConfigSpec.ServerConfig.DisableComponents, []string{"traefik"}) {
		t.Errorf("migrated KThreesControlPlane spec = %+v", cp.Spec)
	}
}

// setStorageVersion makes version the CRD's storage version.
func setStorageVersion(t *testing.T, name, version string) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Storage = crd.Spec.Versions[i].Name == version
	}
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatalf("making %s the storage version of %s: %v", version, name, err)
	}
	// The apiserver serves the change once the CRD is Established again with it.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(storedVersions(t, name), version), nil
	})
	if err != nil {
		t.Fatalf("%s never listed %s in storedVersions", name, version)
	}
}

func storedVersions(t *testing.T, name string) []string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd.Status.StoredVersions
}

// resourceVersions are the test's objects' resourceVersions by kind and name.
func resourceVersions(t *testing.T, ctx context.Context, ns string) map[string]string {
	t.Helper()
	rvs := map[string]string{}
	lists := []client.ObjectList{&bootstrapv1.KThreesConfigList{}, &bootstrapv1.KThreesConfigTemplateList{}, &controlplanev1.KThreesControlPlaneList{}}
	for _, l := range lists {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m, err := apimeta.Accessor(o)
			if err != nil {
				t.Fatal(err)
			}
			rvs[fmt.Sprintf("%T/%s", l, m.GetName())] = m.GetResourceVersion()
		}
	}
	return rvs
}
