package controlplane

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// These tests create manifests shaped like cluster-api-k3s v0.3's samples, with every
// field of its v1beta2 types set (testdata/clusterapik3s-*.yaml), through the real
// apiserver with strict field validation, as kubectl apply sends them: a field the
// schema lacked would fail the request, and a client without strict validation would
// lose it. They check the exact warnings, and that the stored object holds every
// field written, where the defaulting webhook did not move it to its capk3s field.

const (
	airGappedControlPlane  = "testdata/clusterapik3s-airgapped-controlplane.yaml"
	clusterClassCPTemplate = "testdata/clusterapik3s-clusterclass-controlplanetemplate.yaml"
)

func TestClusterAPIK3sControlPlaneManifestKeepsEveryField(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c, warnings := webhooktest.StrictClient(t, env.Config, env.Scheme)

	written := webhooktest.LoadManifest(t, airGappedControlPlane, ns)
	if err := c.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the manifest with strict field validation: %v", err)
	}
	wantWarnings := []string{
		"spec.kthreesConfigSpec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
		// The manifest turns k3s's embedded cloud controller on.
		"spec.kthreesConfigSpec.serverConfig.disableCloudController is false: k3s's embedded cloud controller gives Nodes providerID k3s://<node-name>; a Machine finds its Node only if the infrastructure reports that ID (or kubeletArgs set provider-id)",
		"spec.machineTemplate.infrastructureRef.fieldPath is ignored: spec.machineTemplate.spec.infrastructureRef, which replaces this reference, names the template by apiGroup, kind and name only; the reference is kept as written",
		"spec.machineTemplate.infrastructureRef.resourceVersion is ignored: spec.machineTemplate.spec.infrastructureRef, which replaces this reference, names the template by apiGroup, kind and name only; the reference is kept as written",
		"spec.machineTemplate.infrastructureRef.uid is ignored: spec.machineTemplate.spec.infrastructureRef, which replaces this reference, names the template by apiGroup, kind and name only; the reference is kept as written",
	}
	webhooktest.CheckWarnings(t, warnings.Take(), wantWarnings)

	// The old machine-template shape moves to the contract's fields; the reference
	// also stays whole, because its uid, resourceVersion and fieldPath have no place
	// in the new one. Defaulting adds the rollout strategy the controller follows.
	moves := map[string]webhooktest.Move{
		"spec.machineTemplate.infrastructureRef.apiVersion": {To: "spec.machineTemplate.spec.infrastructureRef.apiGroup", Value: "infrastructure.cluster.x-k8s.io", Kept: true},
		"spec.machineTemplate.infrastructureRef.kind":       {To: "spec.machineTemplate.spec.infrastructureRef.kind", Kept: true},
		"spec.machineTemplate.infrastructureRef.name":       {To: "spec.machineTemplate.spec.infrastructureRef.name", Kept: true},
		"spec.machineTemplate.nodeDrainTimeout":             {To: "spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds", Value: float64(150)},
		"spec.machineTemplate.nodeVolumeDetachTimeout":      {To: "spec.machineTemplate.spec.deletion.nodeVolumeDetachTimeoutSeconds", Value: float64(90)},
		"spec.machineTemplate.nodeDeletionTimeout":          {To: "spec.machineTemplate.spec.deletion.nodeDeletionTimeoutSeconds", Value: float64(600)},
	}
	added := map[string]any{
		"spec.rolloutStrategy.type":                   "RollingUpdate",
		"spec.rolloutStrategy.rollingUpdate.maxSurge": float64(1),
	}
	stored := checkStored(t, written, moves, added)
	webhooktest.CheckTypedRoundTrip(t, env.Client, stored, &controlplanev1.KThreesControlPlane{})

	// Editing the spec warns again; an edit of metadata only, as controllers make
	// all the time, does not.
	cp := &controlplanev1.KThreesControlPlane{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(written), cp); err != nil {
		t.Fatal(err)
	}
	cp.Labels = map[string]string{"team": "vault"}
	if err := c.Update(ctx, cp); err != nil {
		t.Fatalf("metadata-only update: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), nil)
	cp.Spec.KThreesConfigSpec.ServerConfig.DeprecatedEtcdProxyImage = "mirror.vault-b.example.org:5000/library/socat:1.8.1" //nolint:staticcheck // the ignored field is what is tested
	if err := c.Update(ctx, cp); err != nil {
		t.Fatalf("spec update: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), wantWarnings)
}

func TestClusterAPIK3sControlPlaneTemplateManifestKeepsEveryField(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c, warnings := webhooktest.StrictClient(t, env.Config, env.Scheme)

	written := webhooktest.LoadManifest(t, clusterClassCPTemplate, ns)
	if err := c.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the manifest with strict field validation: %v", err)
	}
	const labelsOnly = " is ignored: only a template's labels and annotations are used; "
	named := labelsOnly + "Cluster API names each control plane it makes from the template and puts it in its Cluster's namespace"
	server := labelsOnly + "the API server sets it on each object itself; a template cannot hand it on"
	webhooktest.CheckWarnings(t, warnings.Take(), []string{
		"spec.template.metadata.name" + named,
		"spec.template.metadata.generateName" + named,
		"spec.template.metadata.namespace" + named,
		"spec.template.metadata.selfLink" + server,
		"spec.template.metadata.uid" + server,
		"spec.template.metadata.resourceVersion" + server,
		"spec.template.metadata.generation" + server,
		"spec.template.metadata.creationTimestamp" + server,
		"spec.template.metadata.deletionTimestamp" + server,
		"spec.template.metadata.deletionGracePeriodSeconds" + server,
		"spec.template.metadata.ownerReferences" + labelsOnly + "the template's own owners belong in its metadata.ownerReferences; Cluster API copies these onto each new control plane, so remove them",
		"spec.template.metadata.finalizers" + labelsOnly + "Cluster API drops a template's finalizers, and the control plane controller adds its own",
		"spec.template.metadata.managedFields" + server,
		"spec.template.spec.kthreesConfigSpec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
		"spec.template.spec.machineTemplate.infrastructureRef is ignored: a ClusterClass names the servers' infrastructure template (spec.controlPlane.machineInfrastructure.templateRef), and Cluster API sets it on each control plane",
	})

	moves := map[string]webhooktest.Move{
		"spec.template.spec.machineTemplate.nodeDrainTimeout":        {To: "spec.template.spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds", Value: float64(300)},
		"spec.template.spec.machineTemplate.nodeVolumeDetachTimeout": {To: "spec.template.spec.machineTemplate.spec.deletion.nodeVolumeDetachTimeoutSeconds", Value: float64(60)},
		"spec.template.spec.machineTemplate.nodeDeletionTimeout":     {To: "spec.template.spec.machineTemplate.spec.deletion.nodeDeletionTimeoutSeconds", Value: float64(30)},
	}
	stored := checkStored(t, written, moves, nil)
	webhooktest.CheckTypedRoundTrip(t, env.Client, stored, &controlplanev1.KThreesControlPlaneTemplate{})

	// A ClusterClass uses the template: Cluster API's topology copies
	// spec.template.spec into a new control plane, sets the infrastructure reference
	// from the ClusterClass and the replicas and version from the Cluster, and labels
	// it as its own. The template's ignored reference comes along and must not make
	// that control plane conflict with the one the topology set.
	templateSpec, _, err := unstructured.NestedMap(stored.Object, "spec", "template", "spec")
	if err != nil {
		t.Fatal(err)
	}
	fromTopology := func(name string, labels map[string]any) *unstructured.Unstructured {
		cp := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": controlplanev1.GroupVersion.String(),
			"kind":       "KThreesControlPlane",
			"metadata":   map[string]any{"namespace": ns, "name": name},
			"spec":       runtimeDeepCopy(templateSpec),
		}}
		if labels != nil {
			must(t, unstructured.SetNestedMap(cp.Object, labels, "metadata", "labels"))
		}
		must(t, unstructured.SetNestedField(cp.Object, int64(3), "spec", "replicas"))
		must(t, unstructured.SetNestedField(cp.Object, "v1.31.4+k3s1", "spec", "version"))
		must(t, unstructured.SetNestedMap(cp.Object, map[string]any{
			"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachineTemplate", "name": "edge-servers-7xk2p",
		}, "spec", "machineTemplate", "spec", "infrastructureRef"))
		return cp
	}
	topologyLabels := map[string]any{clusterv1.ClusterNameLabel: "edge-1", clusterv1.ClusterTopologyOwnedLabel: ""}
	if err := c.Create(ctx, fromTopology("edge-1-servers", topologyLabels)); err != nil {
		t.Fatalf("control plane made from the template by the topology refused: %v", err)
	}
	webhooktest.CheckWarnings(t, warnings.Take(), []string{
		"spec.kthreesConfigSpec.serverConfig.etcdProxyImage is ignored: capk3s runs no etcd proxy; it never connects to etcd and leaves membership changes to k3s's own etcd controller",
	})
	got := &controlplanev1.KThreesControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge-1-servers"}, got); err != nil {
		t.Fatal(err)
	}
	if ref := *deprecatedRef(&got.Spec.MachineTemplate); ref != nil {
		t.Errorf("the template's ignored infrastructureRef was kept on the topology's control plane: %+v", ref)
	}
	if d := got.Spec.MachineTemplate.Spec.Deletion; d.NodeDrainTimeoutSeconds == nil || *d.NodeDrainTimeoutSeconds != 300 {
		t.Errorf("deletion timeouts not carried from the template: %+v", d)
	}

	// Written by hand, the same control plane (a reference into another namespace
	// beside a different new one) is still refused: the exception is the topology's.
	err = c.Create(ctx, fromTopology("by-hand", nil))
	checkRejected(t, err, badInput{path: "spec.machineTemplate.infrastructureRef.namespace",
		message: `Invalid value: "elsewhere": must be empty or "` + ns + `"`}, controlPlaneWebhook)
}

// TestStrictClientRefusesUnknownFields: the client of these tests really asks for
// strict field validation, so that the manifests being accepted means the schema
// knows every field.
func TestStrictClientRefusesUnknownFields(t *testing.T) {
	startWebhooks(t)
	ns := env.NewNamespace(t)
	c, _ := webhooktest.StrictClient(t, env.Config, env.Scheme)
	obj := webhooktest.LoadManifest(t, airGappedControlPlane, ns)
	must(t, unstructured.SetNestedField(obj.Object, "x", "spec", "kthreesConfigSpec", "serverConfig", "notAField"))
	err := c.Create(context.Background(), obj)
	if err == nil || !strings.Contains(err.Error(), `strict decoding error: unknown field "spec.kthreesConfigSpec.serverConfig.notAField"`) {
		t.Errorf("unknown field: got %v, want a strict decoding error naming it", err)
	}
}

// checkStored reads written back, raw, and requires every field of its spec to be
// stored as StoredDifferences explains. It returns the stored object.
func checkStored(t *testing.T, written *unstructured.Unstructured, moves map[string]webhooktest.Move, added map[string]any) *unstructured.Unstructured {
	t.Helper()
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(written.GroupVersionKind())
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(written), stored); err != nil {
		t.Fatal(err)
	}
	diffs := webhooktest.StoredDifferences(webhooktest.SpecLeaves(t, written.Object), webhooktest.SpecLeaves(t, stored.Object), moves, added)
	for _, d := range diffs {
		t.Errorf("stored %s differs from the manifest: %s", written.GetKind(), d)
	}
	return stored
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
