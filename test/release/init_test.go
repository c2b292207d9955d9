package release

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// installed describes one provider as `clusterctl init` must leave it.
type installed struct {
	label     string // cluster.x-k8s.io/provider
	namespace string
	prefix    string // the default kustomization's namePrefix
	image     string // as buildRelease's REGISTRY and TAG make it
	crds      []string
	// converted are the CRDs that serve more than one version, and so convert through
	// the provider's webhook.
	converted []string
	// allowed and denied are requests the manager's ServiceAccount must and must not
	// be authorized for: least privilege, checked by the apiserver's RBAC authorizer.
	allowed, denied []access
}

var providers = []installed{
	{
		label:     bootstrapLabel,
		namespace: "capk3s-bootstrap-system",
		prefix:    "capk3s-bootstrap-",
		image:     "example.test/capk3s/capk3s-bootstrap-controller:v0.0.0-test",
		crds:      []string{"kthreesconfigs.bootstrap.cluster.x-k8s.io", "kthreesconfigtemplates.bootstrap.cluster.x-k8s.io"},
		converted: []string{"kthreesconfigs.bootstrap.cluster.x-k8s.io", "kthreesconfigtemplates.bootstrap.cluster.x-k8s.io"},
		allowed: []access{
			{verb: "patch", group: "bootstrap.cluster.x-k8s.io", resource: "kthreesconfigs", subresource: "status", namespace: "any"},
			{verb: "create", resource: "secrets", namespace: "any"},
			{verb: "create", resource: "configmaps", namespace: "any"},
			{verb: "watch", group: "cluster.x-k8s.io", resource: "machines"},
			// The CRD migrator: it watches CRDs and rewrites its own kinds' storedVersions.
			{verb: "list", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
			{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", subresource: "status", name: "kthreesconfigs.bootstrap.cluster.x-k8s.io"},
			{verb: "patch", group: "bootstrap.cluster.x-k8s.io", resource: "kthreesconfigtemplates", namespace: "any"},
		},
		denied: []access{
			{verb: "delete", resource: "secrets", namespace: "any"},
			{verb: "create", group: "cluster.x-k8s.io", resource: "machines", namespace: "any"},
			{verb: "create", group: "bootstrap.cluster.x-k8s.io", resource: "kthreesconfigs", namespace: "any"},
			// The migrator changes its own CRDs only.
			{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", subresource: "status", name: "kthreescontrolplanes.controlplane.cluster.x-k8s.io"},
			{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", name: "clusters.cluster.x-k8s.io"},
		},
	},
	{
		label:     controlPlaneLabel,
		namespace: "capk3s-control-plane-system",
		prefix:    "capk3s-control-plane-",
		image:     "example.test/capk3s/capk3s-control-plane-controller:v0.0.0-test",
		crds:      []string{"kthreescontrolplanes.controlplane.cluster.x-k8s.io", "kthreescontrolplanetemplates.controlplane.cluster.x-k8s.io", "kthreesetcdrestores.controlplane.cluster.x-k8s.io", "kthreesetcdsnapshots.controlplane.cluster.x-k8s.io"},
		converted: []string{"kthreescontrolplanes.controlplane.cluster.x-k8s.io"},
		allowed: []access{
			{verb: "create", group: "cluster.x-k8s.io", resource: "machines", namespace: "any"},
			{verb: "create", group: "bootstrap.cluster.x-k8s.io", resource: "kthreesconfigs", namespace: "any"},
			{verb: "patch", group: "controlplane.cluster.x-k8s.io", resource: "kthreescontrolplanes", subresource: "status", namespace: "any"},
			{verb: "create", group: "infrastructure.cluster.x-k8s.io", resource: "dockermachines", namespace: "any"},
			{verb: "get", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
			{verb: "list", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
			{verb: "watch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
			{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", subresource: "status", name: "kthreescontrolplanes.controlplane.cluster.x-k8s.io"},
		},
		denied: []access{
			{verb: "delete", resource: "secrets", namespace: "any"},
			{verb: "delete", group: "cluster.x-k8s.io", resource: "clusters", namespace: "any"},
			{verb: "create", resource: "configmaps", namespace: "any"},
			{verb: "patch", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", subresource: "status", name: "kthreesconfigs.bootstrap.cluster.x-k8s.io"},
		},
	},
}

// Every provider may hold its leader election Lease in its own namespace only, may
// check who calls its diagnostics endpoint, and may not change CRDs other than its own
// CRDs' storedVersions (the CRD migrator, internal/crdmigration). Both read CRDs: the
// migrator watches them, and the control plane's conversion looks up a template
// kind's apiVersion in its CRD.
var common = struct{ allowed, denied []access }{
	allowed: []access{
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "own"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "own"},
		{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews"},
		{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews"},
	},
	denied: []access{
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "any"},
		{verb: "update", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
	},
}

// TestClusterctlInit installs Cluster API core and both capk3s providers with
// clusterctl's own init, from a local repository holding what `make
// release-manifests` writes, and checks what each provider left in the cluster.
func TestClusterctlInit(t *testing.T) {
	ctx := context.Background()
	installCertManagerAPI(t)
	release := buildRelease(t)
	repo := newRepository(t, release)
	// No Pod runs behind the installed webhook configurations; left in place they would
	// refuse every later write of the kinds they cover (failurePolicy Fail). The CRDs
	// stay, converting again through envtest's local webhook server.
	t.Cleanup(func() {
		removeInstalledWebhooks(t)
		restoreLocalConversion(t)
	})
	// clusterctl merges its CRDs into the ones envtest installed, and a merge of its
	// Service reference into envtest's URL is no valid conversion setting: the CRDs
	// start from the generated ones' (no conversion), as they would in a new cluster.
	setConversion(t, nil)

	components, err := repo.client.Init(ctx, clusterctl.InitOptions{
		Kubeconfig:            repo.kubeconfig,
		CoreProvider:          "cluster-api:" + repo.capiVersion,
		BootstrapProviders:    []string{"k3s:" + repo.version},
		ControlPlaneProviders: []string{"k3s:" + repo.version},
	})
	if err != nil {
		t.Fatalf("clusterctl init: %v", err)
	}
	got := map[string]string{}
	for _, c := range components {
		got[c.ManifestLabel()] = c.Version()
	}
	for _, p := range providers {
		if got[p.label] != repo.version {
			t.Errorf("clusterctl init installed %s %q, want %s", p.label, got[p.label], repo.version)
		}
	}

	for _, p := range providers {
		t.Run(p.label, func(t *testing.T) {
			checkNamespace(t, p)
			checkCRDs(t, p)
			checkNamespacedObjects(t, p)
			checkDeployment(t, p)
			checkRBAC(t, p)
			checkWebhooks(t, p)
			checkInventory(t, p, repo.version)
			if p.label == controlPlaneLabel {
				checkInPlaceExtension(t, p, release)
			}
		})
	}
	t.Run("v1beta1 through the installed conversion webhooks", checkConversionServed)
	for _, p := range providers {
		t.Run(p.label+" manager runs with its RBAC", func(t *testing.T) {
			t.Parallel()
			checkManagerRuns(t, p)
		})
	}
}

// removeInstalledWebhooks deletes the webhook configurations that clusterctl init
// installed for the three providers.
func removeInstalledWebhooks(t *testing.T) {
	t.Helper()
	req, err := labels.NewRequirement(clusterv1.ProviderNameLabel, selection.In,
		[]string{coreLabel, bootstrapLabel, controlPlaneLabel})
	if err != nil {
		t.Fatal(err)
	}
	sel := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}
	ctx := context.Background()
	for _, obj := range []client.Object{
		&admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{},
	} {
		if err := env.Client.DeleteAllOf(ctx, obj, sel); err != nil {
			t.Errorf("removing the installed webhook configurations: %v", err)
		}
	}
}
