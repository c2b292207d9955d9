package controlplane

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// These tests go through a real kube-apiserver with the generated webhook
// configurations installed, so they also prove the markers, the paths, and the order
// of mutating webhooks, schema validation and validating webhooks.

const (
	controlPlaneWebhook = "validation.kthreescontrolplane.controlplane.cluster.x-k8s.io"
	templateWebhook     = "validation.kthreescontrolplanetemplate.controlplane.cluster.x-k8s.io"
	scaleWebhook        = "validation-scale.kthreescontrolplane.controlplane.cluster.x-k8s.io"
)

// badInput is one invalid input and what the rejection must say. Some inputs never
// reach the validating webhook because the CRD schema rejects them first (bySchema);
// they are kept so that every rule is shown to hold on a real server, whichever layer
// holds it.
type badInput struct {
	name     string
	modify   func(*controlplanev1.KThreesControlPlaneSpec)
	path     string
	message  string
	bySchema bool
}

var badControlPlanes = []badInput{
	// The schema refuses fewer than one server too, so that no path around the
	// webhooks (a failurePolicy change, a direct etcd restore) can store it.
	{name: "zero replicas", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Replicas = ptr.To[int32](0) },
		path: "spec.replicas", message: "should be greater than or equal to 1", bySchema: true},
	{name: "two replicas", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Replicas = ptr.To[int32](2) },
		path: "spec.replicas", message: "spec.replicas: Invalid value: 2: must be odd: an embedded etcd cluster of 2 members loses quorum when one fails; use 1, 3 or 5"},
	{name: "four replicas", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Replicas = ptr.To[int32](4) },
		path: "spec.replicas", message: "must be odd"},
	{name: "negative replicas", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Replicas = ptr.To[int32](-1) },
		path: "spec.replicas", message: "should be greater than or equal to 1", bySchema: true},
	{name: "version with leading zero", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "v1.031.4+k3s1" },
		path: "spec.version", message: "must be a k3s version such as v1.31.4+k3s1"},
	{name: "version of another distribution", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "v1.31.4+rke2r1" },
		path: "spec.version", message: "must be a k3s version"},
	{name: "version not a version", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.Version = "latest" },
		path: "spec.version", message: "should match", bySchema: true},
	{name: "maxSurge 0 with one server", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.Replicas = ptr.To[int32](1)
		s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("0"))
	}, path: "spec.rolloutStrategy.rollingUpdate.maxSurge",
		message: "maxSurge 0 removes a server before creating its replacement; with fewer than 3 servers that loses etcd quorum"},
	{name: "maxSurge 2", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(2))
	}, path: "spec.rolloutStrategy.rollingUpdate.maxSurge", message: "maxSurge must be 0 or 1", bySchema: true},
	{name: "unknown rollout type", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.RolloutStrategy.Type = "Recreate" },
		path: "spec.rolloutStrategy.type", message: `Unsupported value: "Recreate"`, bySchema: true},
	{name: "negative retry period", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.RemediationStrategy.RetryPeriod = *duration("-1m") },
		path: "spec.remediationStrategy.retryPeriod", message: "must not be negative"},
	{name: "negative min healthy period", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.RemediationStrategy.MinHealthyPeriod = duration("-1h")
	}, path: "spec.remediationStrategy.minHealthyPeriod", message: "must not be negative"},
	{name: "negative max retry", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.RemediationStrategy.MaxRetry = ptr.To[int32](-1) },
		path: "spec.remediationStrategy.maxRetry", message: "should be greater than or equal to 0", bySchema: true},
	{name: "bad machine label", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate.ObjectMeta.Labels = map[string]string{"not a key": "x"}
	}, path: "spec.machineTemplate.metadata.labels", message: "Invalid value"},
	{name: "config file path relative", modify: func(s *controlplanev1.KThreesControlPlaneSpec) { s.KThreesConfigSpec.Files[0].Path = "etc/motd" },
		path: "spec.kthreesConfigSpec.files[0].path", message: "must be an absolute path"},
	{name: "config cluster CIDR not a CIDR", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.KThreesConfigSpec.ServerConfig.ClusterCidr = "10.42.0.0/33"
	}, path: "spec.kthreesConfigSpec.serverConfig.clusterCidr", message: `"10.42.0.0/33" is not a CIDR`},
	{name: "config users listed twice", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.KThreesConfigSpec.Users = []bootstrapv1.User{{Name: "ops"}, {Name: "ops"}}
	}, path: "spec.kthreesConfigSpec.users[1].name", message: "spec.kthreesConfigSpec.users[0].name already creates this user"},
	{name: "config sudo with ignition", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.KThreesConfigSpec.Format = bootstrapv1.Ignition
		s.KThreesConfigSpec.Users = []bootstrapv1.User{{Name: "ops", Sudo: "ALL=(ALL) ALL"}}
	}, path: "spec.kthreesConfigSpec.users[0].sudo", message: "Ignition has no sudo setting"},
	{name: "no infrastructure reference at all", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate = controlplanev1.KThreesControlPlaneMachineTemplate{}
	}, path: "spec", message: "spec.machineTemplate.spec.infrastructureRef is required", bySchema: true},

	// machine naming and taints
	{name: "naming template without random", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = "{{ .cluster.name }}-server"
	}, path: "spec.machineNaming.template", message: "the name must depend on {{ .random }}, else two Machines would get the same name"},
	{name: "naming template that does not parse", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = "{{ .cluster.name -{{ .random }}"
	}, path: "spec.machineNaming.template", message: "does not parse as a Go template"},
	{name: "naming template giving names that are not DNS names", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = "Server_{{ .random }}"
	}, path: "spec.machineNaming.template", message: "renders names that are not valid object names"},
	// A loop renders a valid name, so only refusing what naming does not need stops
	// one that renders gigabytes in the webhook (the next case).
	{name: "naming template with a loop", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = "{{ range 3 }}{{ $.random }}{{ end }}"
	}, path: "spec.machineNaming.template",
		message: "cannot be rendered: {{ range }} is not allowed (a template may hold only text and variables, each alone in {{ }}, and the variables are .cluster.name, .kthreesControlPlane.name and .random)"},
	{name: "naming template with nested loops", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = "{{ range 100000000 }}{{ range 100000000 }}{{ $.cluster.name }}{{ end }}{{ end }}{{ .random }}"
	}, path: "spec.machineNaming.template", message: "{{ range }} is not allowed"},
	{name: "naming template calling printf", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = `{{ printf "%s-%s" .cluster.name .random }}`
	}, path: "spec.machineNaming.template", message: `{{ printf "%s-%s" .cluster.name .random }} is not allowed`},
	{name: "naming template too long", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineNaming.Template = strings.Repeat("a", 250) + "{{ .random }}"
	}, path: "spec.machineNaming.template", message: "may not be more than 256 bytes", bySchema: true},
	{name: "taint reserved for the kubelet", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule", Propagation: "Always"}}
	}, path: "spec.machineTemplate.spec.taints[0].key", message: "is reserved for the kubelet and the node lifecycle controller"},
	{name: "taint Cluster API manages", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{{Key: clusterv1.NodeUninitializedTaint.Key, Effect: "NoSchedule", Propagation: "Always"}}
	}, path: "spec.machineTemplate.spec.taints[0].key", message: "is set and removed by Cluster API itself"},
	{name: "taint without propagation", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{{Key: "dedicated", Effect: "NoSchedule"}}
	}, path: "spec.machineTemplate.spec.taints[0].propagation", message: "Required value", bySchema: true},
	{name: "taint twice", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		t := clusterv1.MachineTaint{Key: "dedicated", Effect: "NoSchedule", Propagation: "Always"}
		s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{t, t}
	}, path: "spec.machineTemplate.spec.taints[1]", message: "Duplicate value", bySchema: true},

	// cluster-api-k3s's fields that defaulting could not move
	{name: "deprecated ref into another namespace", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate = machineTemplate(controlplanev1.KThreesControlPlaneMachineTemplateSpec{}, oldShape{
			ref:   oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.Namespace = "infra" }),
			drain: duration("2m"),
		})
	}, path: "spec.machineTemplate.infrastructureRef.namespace",
		message: "the control plane's namespace: spec.machineTemplate.spec.infrastructureRef, which replaces this deprecated reference, can only refer to templates in the control plane's namespace"},
	{name: "deprecated ref without apiVersion", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		s.MachineTemplate = machineTemplate(controlplanev1.KThreesControlPlaneMachineTemplateSpec{}, oldShape{
			ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.APIVersion = "" }),
		})
	}, path: "spec.machineTemplate.infrastructureRef.apiVersion", message: "is required to convert this deprecated reference"},
	{name: "deprecated ref conflicting with the new one", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.Name = "other" })})
	}, path: "spec.machineTemplate.infrastructureRef", message: "conflicts with spec.machineTemplate.spec.infrastructureRef"},
	{name: "deprecated timeout conflicting with the new one", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		setOld(&s.MachineTemplate, oldShape{drain: duration("5m")})
	}, path: "spec.machineTemplate.nodeDrainTimeout", message: "conflicts with spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds (60)"},
	{name: "negative deprecated timeout", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		setOld(&s.MachineTemplate, oldShape{detach: duration("-1s")})
	}, path: "spec.machineTemplate.nodeVolumeDetachTimeout", message: "must not be negative"},
	{name: "deprecated timeout too long", modify: func(s *controlplanev1.KThreesControlPlaneSpec) {
		setOld(&s.MachineTemplate, oldShape{deletion: duration("600000h")})
	}, path: "spec.machineTemplate.nodeDeletionTimeout", message: "must be at most 596523h14m7s"},
}

func newControlPlane(namespace string) *controlplanev1.KThreesControlPlane {
	return &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "cp"}, Spec: validSpec()}
}

func TestControlPlaneRejectsInvalidSpec(t *testing.T) {
	startWebhooks(t)
	for _, tt := range badControlPlanes {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			cp := newControlPlane(ns)
			tt.modify(&cp.Spec)
			err := env.Client.Create(context.Background(), cp)
			checkRejected(t, err, tt, controlPlaneWebhook)
			webhooktest.CheckNotStored(t, env.Client, &controlplanev1.KThreesControlPlane{}, ns, cp.Name)
		})
	}
}

// TestControlPlaneDefaults: what a minimal control plane leaves out is stored filled in.
func TestControlPlaneDefaults(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cp"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "1.31.4+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{InfrastructureRef: dockerRef},
			},
			KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "1.31.4+k3s1"},
		},
	}
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating control plane: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), got); err != nil {
		t.Fatal(err)
	}
	want := controlplanev1.KThreesControlPlaneSpec{
		Replicas: ptr.To[int32](1),
		Version:  "v1.31.4+k3s1",
		MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
			Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{InfrastructureRef: dockerRef},
		},
		KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{Version: "v1.31.4+k3s1"},
		RolloutStrategy: &controlplanev1.RolloutStrategy{
			Type:          controlplanev1.RollingUpdateStrategyType,
			RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1))},
		},
	}
	if !equalSpecs(got.Spec, want) {
		t.Errorf("stored spec:\n got %+v\nwant %+v", got.Spec, want)
	}
}

// TestControlPlaneAcceptsValidSpecUnchanged: a complete, valid spec is stored exactly
// as written; defaulting adds nothing to it.
func TestControlPlaneAcceptsValidSpecUnchanged(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := newControlPlane(ns)
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating a valid control plane: %v", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cp), got); err != nil {
		t.Fatal(err)
	}
	if want := validSpec(); !equalSpecs(got.Spec, want) {
		t.Errorf("stored spec differs from the one written:\n got %+v\nwant %+v", got.Spec, want)
	}
}

// TestOldShapeManifest: a control plane written for cluster-api-k3s, with its
// apiVersion-based infrastructureRef and duration timeouts, is accepted and stored in
// the v1beta2 shape, with nothing of it lost.
func TestOldShapeManifest(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	manifest := func(name string, ref map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": controlplanev1.GroupVersion.String(),
			"kind":       "KThreesControlPlane",
			"metadata":   map[string]any{"namespace": ns, "name": name},
			"spec": map[string]any{
				"replicas": int64(3),
				"version":  "v1.31.4+k3s1",
				"machineTemplate": map[string]any{
					"infrastructureRef":       ref,
					"nodeDrainTimeout":        "2m",
					"nodeVolumeDetachTimeout": "90s",
					"nodeDeletionTimeout":     "1500ms",
				},
			},
		}}
	}
	oldRef := map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
		"kind":       "DockerMachineTemplate",
		"name":       "x",
	}
	if err := env.Client.Create(ctx, manifest("old", oldRef)); err != nil {
		t.Fatalf("old-shape manifest rejected: %v", err)
	}

	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, got); err != nil {
		t.Fatal(err)
	}
	want := controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
		InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "DockerMachineTemplate", Name: "x"},
		Deletion: controlplanev1.MachineDeletionSpec{
			NodeDrainTimeoutSeconds:        ptr.To[int32](120),
			NodeVolumeDetachTimeoutSeconds: ptr.To[int32](90),
			NodeDeletionTimeoutSeconds:     ptr.To[int32](2),
		},
	}}
	if !equalSpecs(got.Spec.MachineTemplate, want) {
		t.Errorf("stored machine template:\n got %+v\nwant %+v", got.Spec.MachineTemplate, want)
	}

	// The deprecated keys are gone from what is stored, not just from the Go view.
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(controlplanev1.GroupVersion.WithKind("KThreesControlPlane"))
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "old"}, raw); err != nil {
		t.Fatal(err)
	}
	mt, _, _ := unstructured.NestedMap(raw.Object, "spec", "machineTemplate")
	for _, key := range []string{"infrastructureRef", "nodeDrainTimeout", "nodeVolumeDetachTimeout", "nodeDeletionTimeout"} {
		if _, ok := mt[key]; ok {
			t.Errorf("deprecated spec.machineTemplate.%s still stored: %v", key, mt)
		}
	}

	// The same manifest pointing into another namespace cannot be converted without
	// changing what it refers to, so it is rejected, naming the field.
	elsewhere := map[string]any{}
	for k, v := range oldRef {
		elsewhere[k] = v
	}
	elsewhere["namespace"] = "infra"
	err := env.Client.Create(ctx, manifest("elsewhere", elsewhere))
	checkRejected(t, err, badInput{path: "spec.machineTemplate.infrastructureRef.namespace",
		message: `Invalid value: "infra": must be empty or "` + ns + `"`}, controlPlaneWebhook)
	webhooktest.CheckNotStored(t, env.Client, &controlplanev1.KThreesControlPlane{}, ns, "elsewhere")
}

// TestControlPlaneUpdates: version moves, scaling and immutable settings, each
// rejection leaving the stored object as it was.
func TestControlPlaneUpdates(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cp := newControlPlane(ns)
	if err := env.Client.Create(ctx, cp); err != nil {
		t.Fatalf("creating control plane: %v", err)
	}
	key := client.ObjectKeyFromObject(cp)
	current := func() *controlplanev1.KThreesControlPlane {
		t.Helper()
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	update := func(modify func(*controlplanev1.KThreesControlPlane)) error {
		c := current()
		modify(c)
		return env.Client.Update(ctx, c)
	}
	mergePatch := func(patch string) error {
		return env.Client.Patch(ctx, current(), client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	scale := func(replicas int32) error {
		return env.Client.SubResource("scale").Update(ctx, current(),
			client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}))
	}

	rejected := []struct {
		name     string
		do       func() error
		path     string
		message  string
		webhook  string
		bySchema bool
	}{
		{name: "downgrade", do: func() error {
			return update(func(c *controlplanev1.KThreesControlPlane) { c.Spec.Version = "v1.30.9+k3s1" })
		}, path: "spec.version", message: "cannot downgrade from v1.31.4+k3s1", webhook: controlPlaneWebhook},
		{name: "minor skip", do: func() error {
			return update(func(c *controlplanev1.KThreesControlPlane) { c.Spec.Version = "v1.33.1+k3s1" })
		}, path: "spec.version", message: "upgrade one minor version at a time: v1.31.x → v1.32.x first", webhook: controlPlaneWebhook},
		{name: "even replicas by patch", do: func() error { return mergePatch(`{"spec":{"replicas":2}}`) },
			path: "spec.replicas", message: "must be odd: an embedded etcd cluster of 2 members loses quorum", webhook: controlPlaneWebhook},
		{name: "even replicas by the scale subresource", do: func() error { return scale(4) },
			path: "spec.replicas", message: "must be odd", webhook: scaleWebhook},
		// The schema's minimum holds before the scale webhook is asked.
		{name: "zero replicas by the scale subresource", do: func() error { return scale(0) },
			path: "spec.replicas", message: "should be greater than or equal to 1", webhook: scaleWebhook, bySchema: true},
		{name: "cluster CIDR", do: func() error {
			return update(func(c *controlplanev1.KThreesControlPlane) {
				c.Spec.KThreesConfigSpec.ServerConfig.ClusterCidr = "10.99.0.0/16"
			})
		}, path: "spec.kthreesConfigSpec.serverConfig.clusterCidr",
			message: `Forbidden: is immutable (was "10.42.0.0/16", now "10.99.0.0/16")`, webhook: controlPlaneWebhook},
		{name: "service CIDR by patch", do: func() error {
			return mergePatch(`{"spec":{"kthreesConfigSpec":{"serverConfig":{"serviceCidr":null}}}}`)
		}, path: "spec.kthreesConfigSpec.serverConfig.serviceCidr", message: "changing it on a running k3s cluster breaks the cluster",
			webhook: controlPlaneWebhook},
	}
	for _, tt := range rejected {
		t.Run(tt.name, func(t *testing.T) {
			before := current()
			err := tt.do()
			checkRejected(t, err, badInput{path: tt.path, message: tt.message, bySchema: tt.bySchema}, tt.webhook)
			if after := current(); !equalSpecs(after.Spec, before.Spec) {
				t.Errorf("rejected update changed the stored spec:\n got %+v\nwant %+v", after.Spec, before.Spec)
			}
		})
	}

	// What is allowed goes through.
	if err := scale(5); err != nil {
		t.Fatalf("scaling to 5 rejected: %v", err)
	}
	if err := update(func(c *controlplanev1.KThreesControlPlane) {
		c.Spec.Version = "1.32.0+k3s1"
		c.Spec.MachineTemplate.Spec.InfrastructureRef.Name = "bigger-machines"
	}); err != nil {
		t.Fatalf("one-minor upgrade with a new infrastructure template rejected: %v", err)
	}
	got := current()
	if *got.Spec.Replicas != 5 || got.Spec.Version != "v1.32.0+k3s1" || got.Spec.MachineTemplate.Spec.InfrastructureRef.Name != "bigger-machines" {
		t.Errorf("allowed updates not stored as expected: replicas %d, version %q, ref %+v",
			*got.Spec.Replicas, got.Spec.Version, got.Spec.MachineTemplate.Spec.InfrastructureRef)
	}
}

func newTemplate(namespace, name string) *controlplanev1.KThreesControlPlaneTemplate {
	return &controlplanev1.KThreesControlPlaneTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: controlplanev1.KThreesControlPlaneTemplateSpec{Template: controlplanev1.KThreesControlPlaneTemplateResource{
			Spec: validTemplateSpec(),
		}},
	}
}

func TestTemplateRejectsInvalidSpec(t *testing.T) {
	startWebhooks(t)
	type spec = controlplanev1.KThreesControlPlaneTemplateResourceSpec
	tests := []struct {
		badInput
		modify func(*spec)
	}{
		{badInput: badInput{name: "maxSurge 2", path: "spec.template.spec.rolloutStrategy.rollingUpdate.maxSurge",
			message: "maxSurge must be 0 or 1", bySchema: true},
			modify: func(s *spec) { s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(2)) }},
		{badInput: badInput{name: "negative retry period", path: "spec.template.spec.remediationStrategy.retryPeriod",
			message: "must not be negative"},
			modify: func(s *spec) { s.RemediationStrategy.RetryPeriod = *duration("-1s") }},
		{badInput: badInput{name: "config file path relative", path: "spec.template.spec.kthreesConfigSpec.files[0].path",
			message: "must be an absolute path"},
			modify: func(s *spec) { s.KThreesConfigSpec.Files[0].Path = "motd" }},
		{badInput: badInput{name: "naming template without random", path: "spec.template.spec.machineNaming.template",
			message: "the name must depend on {{ .random }}"},
			modify: func(s *spec) { s.MachineNaming.Template = "{{ .cluster.name }}-cp" }},
		{badInput: badInput{name: "naming template with a loop", path: "spec.template.spec.machineNaming.template",
			message: "{{ range }} is not allowed"},
			modify: func(s *spec) {
				s.MachineNaming.Template = "{{ range 100000000 }}{{ range 100000000 }}{{ $.random }}{{ end }}{{ end }}"
			}},
		{badInput: badInput{name: "taint with a cloud provider's key", path: "spec.template.spec.machineTemplate.spec.taints[0].key",
			message: "is reserved for the cloud controller manager"},
			modify: func(s *spec) {
				s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: "NoSchedule", Propagation: "Always"}}
			}},
		{badInput: badInput{name: "bad machine label", path: "spec.template.spec.machineTemplate.metadata.labels",
			message: "Invalid value"},
			modify: func(s *spec) { s.MachineTemplate.ObjectMeta.Labels = map[string]string{"a b": "c"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			tmpl := newTemplate(ns, "template")
			tt.modify(&tmpl.Spec.Template.Spec)
			err := env.Client.Create(context.Background(), tmpl)
			checkRejected(t, err, tt.badInput, templateWebhook)
			webhooktest.CheckNotStored(t, env.Client, &controlplanev1.KThreesControlPlaneTemplate{}, ns, "template")
		})
	}
}

func TestTemplateDefaultsConfigVersion(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	tmpl := newTemplate(ns, "template")
	tmpl.Spec.Template.Spec.KThreesConfigSpec.Version = "1.31.4+k3s1"
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatalf("creating template: %v", err)
	}
	got := &controlplanev1.KThreesControlPlaneTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), got); err != nil {
		t.Fatal(err)
	}
	if v := got.Spec.Template.Spec.KThreesConfigSpec.Version; v != "v1.31.4+k3s1" {
		t.Errorf("stored config version %q, want v1.31.4+k3s1", v)
	}
	// Nothing else is defaulted: the rollout strategy stays as written (here, set).
	want := validTemplateSpec()
	want.KThreesConfigSpec.Version = "v1.31.4+k3s1"
	if !equalSpecs(got.Spec.Template.Spec, want) {
		t.Errorf("stored template spec:\n got %+v\nwant %+v", got.Spec.Template.Spec, want)
	}
}

func TestTemplateSpecImmutable(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	tmpl := newTemplate(ns, "template")
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatalf("creating template: %v", err)
	}
	stored := tmpl.DeepCopy()

	// Any spec change is rejected, even to a valid spec.
	changed := stored.DeepCopy()
	changed.Spec.Template.Spec.KThreesConfigSpec.ServerConfig.TLSSan = []string{"api.example.com"}
	changed.Spec.Template.Spec.RemediationStrategy = nil
	err := env.Client.Update(ctx, changed)
	checkRejected(t, err, badInput{path: "spec.template.spec",
		message: "Forbidden: " + immutableTemplateMessage + " (changed: kthreesConfigSpec, remediationStrategy)"}, templateWebhook)

	// A plain dry run is no exception.
	err = env.Client.Update(ctx, changed.DeepCopy(), client.DryRunAll)
	checkRejected(t, err, badInput{path: "spec.template.spec", message: immutableTemplateMessage}, templateWebhook)

	// Cluster API's topology controller dry-runs with its annotation to compute
	// diffs; that must pass, and store nothing.
	topologyDryRun := changed.DeepCopy()
	webhooktest.SetTopologyDryRun(topologyDryRun)
	if err := env.Client.Update(ctx, topologyDryRun, client.DryRunAll); err != nil {
		t.Errorf("topology dry run rejected: %v", err)
	}

	// Metadata stays editable.
	labelled := stored.DeepCopy()
	labelled.Labels = map[string]string{"team": "platform"}
	if err := env.Client.Update(ctx, labelled); err != nil {
		t.Fatalf("metadata-only update rejected: %v", err)
	}

	got := &controlplanev1.KThreesControlPlaneTemplate{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tmpl), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "platform" {
		t.Errorf("label not stored: %v", got.Labels)
	}
	if !equalSpecs(got.Spec, stored.Spec) {
		t.Errorf("template spec changed:\n got %+v\nwant %+v", got.Spec, stored.Spec)
	}
}

// checkRejected applies webhooktest.CheckRejected to tt.
func checkRejected(t *testing.T, err error, tt badInput, webhook string) {
	t.Helper()
	webhooktest.CheckRejected(t, err, webhooktest.Rejection{Path: tt.path, Message: tt.message, Webhook: webhook, BySchema: tt.bySchema})
}
