package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestSwitchFromClusterAPIK3s: a running one-server cluster is left as cluster-api-k3s
// v0.3 leaves it in the management cluster (its objects stored in etcd in that
// software's shapes, some at v1beta1, the CRDs' storedVersions listing both
// versions, the token controlled by the first server's KThreesConfig), and capk3s
// takes over as docs/migrating.md says: pause, switch, unpause. No server is
// replaced, the token is taken over unchanged, the cluster grows 1 -> 3 servers with
// the old token (keeping the first server: the assertions of a plain scale-out), an
// upgrade rolls out with quorum kept, and nothing of the old status shape is left in
// storage.
func TestSwitchFromClusterAPIK3s(t *testing.T) {
	start := time.Now()
	s := newScenario(t, 1, 1)
	// cluster-api-k3s has no extraConfig, so the cluster it made started without one;
	// a first server started with another flannel backend would refuse new servers.
	s.objs.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = nil
	s.create()
	s.waitServers(1, oldVersion)
	s.waitAgents(1)
	first := s.serverMachine()
	value := string(s.tokenSecret().Data["value"])

	s.setPaused(true)
	s.waitControlPlanePaused()
	st := openStorage(t)
	s.leaveAsClusterAPIK3s(st, first)

	deletions := watchServerDeletions(t, s.ns)
	deletions.arm()
	s.setPaused(false)

	// Taken over, nothing replaced.
	s.eventually("the control plane to take the token over", func(ctx context.Context) (bool, string, error) {
		sec := s.tokenSecret()
		controller := metav1.GetControllerOf(sec)
		return controller != nil && controller.Kind == "KThreesControlPlane", fmt.Sprintf("owners %v", sec.OwnerReferences), nil
	})
	s.waitServers(1, oldVersion)
	s.checkTakenOver(value, nil)
	s.eventually("the control plane's old status to leave storage", func(context.Context) (bool, string, error) {
		return s.noOldShapes(st)
	})
	if got := deletions.seen(); len(got) > 0 {
		t.Fatalf("servers deleted by the switch: %v", got)
	}
	s.waitAgents(1)

	// The old token lets new servers join.
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Replicas = ptr.To[int32](3) })
	s.waitServers(3, oldVersion)
	if now := s.serverNames(); !now.Has(first.Name) {
		t.Errorf("scaling out replaced the first server: had %s, now %v", first.Name, sets.List(now))
	}
	if n := len(s.nodes()); n != 4 {
		t.Errorf("workload cluster has %d Nodes, want 3 servers and the agent", n)
	}
	if got := deletions.seen(); len(got) > 0 {
		t.Fatalf("servers deleted by the scale-out: %v", got)
	}

	// An upgrade replaces every server, the first one too, whose KThreesConfig (the
	// token's old controller) the garbage collector then removes: the token stays.
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Version = newVersion })
	s.waitServers(3, newVersion)
	if now := s.serverNames(); now.Has(first.Name) {
		t.Errorf("the upgrade kept server %s at the old version", first.Name)
	}
	s.eventually("the first server's KThreesConfig to be gone", func(ctx context.Context) (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: first.Spec.Bootstrap.ConfigRef.Name}, &bootstrapv1.KThreesConfig{})
		return client.IgnoreNotFound(err) == nil && err != nil, "still there", client.IgnoreNotFound(err)
	})
	s.checkTakenOver(value, nil)
	if simulator.QuorumLost(s.key) {
		t.Error("etcd lost quorum")
	}
	s.token.check(t)
	t.Logf("scenario took %s", time.Since(start).Round(time.Second))
}

func (s *scenario) serverMachine() *clusterv1.Machine {
	s.t.Helper()
	machines, err := s.serverMachines(s.ctx)
	s.must("listing servers", err)
	if len(machines) != 1 {
		s.t.Fatalf("%d servers, want 1", len(machines))
	}
	return &machines[0]
}

func (s *scenario) setPaused(paused bool) {
	s.t.Helper()
	c := &clusterv1.Cluster{}
	s.must("reading Cluster", env.Client.Get(s.ctx, s.key, c))
	before := c.DeepCopy()
	c.Spec.Paused = ptr.To(paused)
	s.must("pausing the Cluster", env.Client.Patch(s.ctx, c, client.MergeFrom(before)))
}

// waitControlPlanePaused waits until the control plane says it is paused: from then
// on it writes nothing.
func (s *scenario) waitControlPlanePaused() {
	s.t.Helper()
	s.eventually("the control plane to be paused", func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		return conditions.IsTrue(kcp, clusterv1.PausedCondition), "not paused yet", nil
	})
}

// oldConditions are v1beta1-contract conditions, with severity and without reason
// where that contract left it out.
func oldConditions(types ...string) []any {
	var out []any
	for _, t := range types {
		out = append(out, map[string]any{"type": t, "status": "True", "severity": "", "lastTransitionTime": "2025-06-01T10:00:00Z"})
	}
	return out
}

// leaveAsClusterAPIK3s rewrites the cluster's provider objects in storage as
// cluster-api-k3s v0.3 keeps them.
func (s *scenario) leaveAsClusterAPIK3s(st *storage, server *clusterv1.Machine) {
	s.t.Helper()
	// Its CRDs stored v1beta1 before v1beta2 became the storage version.
	for _, name := range []string{"kthreescontrolplanes.controlplane.cluster.x-k8s.io", "kthreesconfigs.bootstrap.cluster.x-k8s.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		s.must("reading CRD "+name, env.Client.Get(s.ctx, client.ObjectKey{Name: name}, crd))
		crd.Status.StoredVersions = []string{"v1beta1", "v1beta2"}
		s.must("setting storedVersions of "+name, env.Client.Status().Update(s.ctx, crd))
	}

	// The control plane, at cluster-api-k3s's v1beta2: the infrastructure reference in
	// machineTemplate with an apiVersion, and the v1beta1 contract's status.
	kcpKey := storageKey("controlplane.cluster.x-k8s.io", "kthreescontrolplanes", s.ns, s.objs.ControlPlane.Name)
	kcp := st.get(kcpKey)
	spec := kcp["spec"].(map[string]any)
	mt := spec["machineTemplate"].(map[string]any)
	ref := field(mt, "spec", "infrastructureRef").(map[string]any)
	mt["infrastructureRef"] = map[string]any{
		"apiVersion": ref["apiGroup"].(string) + "/v1beta2", "kind": ref["kind"], "name": ref["name"], "namespace": s.ns,
	}
	delete(mt, "spec")
	// cluster-api-k3s has no extraConfig: the cluster it made has none.
	delete(field(spec, "kthreesConfigSpec", "serverConfig").(map[string]any), "extraConfig")
	kcp["status"] = map[string]any{
		"selector": field(kcp, "status", "selector"), "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1,
		"initialized": true, "ready": true, "version": oldVersion, "observedGeneration": field(kcp, "metadata", "generation"),
		"conditions": oldConditions("Ready", "Available", "MachinesReady", "MachinesSpecUpToDate", "TokenAvailable", "CertificatesAvailable"),
	}
	st.put(kcpKey, kcp)

	// The server's KThreesConfig, still stored at v1beta1 with its status then.
	configName := server.Spec.Bootstrap.ConfigRef.Name
	configKey := storageKey("bootstrap.cluster.x-k8s.io", "kthreesconfigs", s.ns, configName)
	config := st.get(configKey)
	config["apiVersion"] = "bootstrap.cluster.x-k8s.io/v1beta1"
	delete(config["spec"].(map[string]any), "format")
	delete(field(config, "spec", "serverConfig").(map[string]any), "extraConfig")
	config["status"] = map[string]any{
		"ready": true, "dataSecretName": field(config, "status", "dataSecretName"),
		"observedGeneration": field(config, "metadata", "generation"),
		"conditions":         oldConditions("Ready", "DataSecretAvailable"),
	}
	st.put(configKey, config)

	// The agent's KThreesConfig, at cluster-api-k3s's v1beta2 (its storage version)
	// with that version's status: v1beta1-contract conditions in status.conditions.
	agents, err := s.machines(s.ctx, client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: s.objs.Workers.Name})
	s.must("listing agents", err)
	if len(agents) != 1 {
		s.t.Fatalf("%d agents, want 1", len(agents))
	}
	agentKey := storageKey("bootstrap.cluster.x-k8s.io", "kthreesconfigs", s.ns, agents[0].Spec.Bootstrap.ConfigRef.Name)
	agent := st.get(agentKey)
	agent["status"] = map[string]any{
		"ready": true, "dataSecretName": field(agent, "status", "dataSecretName"),
		"observedGeneration": field(agent, "metadata", "generation"),
		"conditions":         oldConditions("Ready", "DataSecretAvailable"),
	}
	st.put(agentKey, agent)

	// The token, controlled by the first server's KThreesConfig, as cluster-api-k3s made it.
	token := s.tokenSecret()
	cfg := &bootstrapv1.KThreesConfig{}
	s.must("reading the server's KThreesConfig", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: configName}, cfg))
	token.OwnerReferences = []metav1.OwnerReference{ownerRef(cfg, "KThreesConfig", bootstrapv1.GroupVersion.String(), true)}
	s.must("handing the token to the KThreesConfig", env.Client.Update(s.ctx, token))

	// The server Machine carries cluster-api-k3s's record of the server config.
	m := server.DeepCopy()
	serverConfig, err := json.Marshal(cfg.Spec.ServerConfig)
	s.must("encoding the server configuration", err)
	m.Annotations["controlplane.cluster.x-k8s.io/kthrees-server-configuration"] = string(serverConfig)
	s.must("annotating the server Machine", env.Client.Patch(s.ctx, m, client.MergeFrom(server)))

	// What the apiserver now shows is what cluster-api-k3s left: the old reference and
	// no v1beta2 status.
	got := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), got))
	if got.Spec.MachineTemplate.Spec.InfrastructureRef.IsDefined() || got.Status.Initialization.ControlPlaneInitialized != nil {
		s.t.Fatalf("the control plane still looks like capk3s's after the rewrite: %+v", got.Spec.MachineTemplate)
	}
}

// noOldShapes says whether storage holds the control plane and the server configs at
// v1beta2 without any field of the v1beta1 contract's status.
func (s *scenario) noOldShapes(st *storage) (bool, string, error) {
	kcp := st.get(storageKey("controlplane.cluster.x-k8s.io", "kthreescontrolplanes", s.ns, s.objs.ControlPlane.Name))
	if reason := oldShape(kcp, "initialized", "ready", "updatedReplicas"); reason != "" {
		return false, "control plane: " + reason, nil
	}
	if field(kcp, "spec", "machineTemplate", "spec", "infrastructureRef") == nil {
		return false, "control plane: no spec.machineTemplate.spec.infrastructureRef", nil
	}
	list := &bootstrapv1.KThreesConfigList{}
	if err := env.Client.List(s.ctx, list, client.InNamespace(s.ns)); err != nil {
		return false, "", err
	}
	for _, c := range list.Items {
		obj := st.get(storageKey("bootstrap.cluster.x-k8s.io", "kthreesconfigs", s.ns, c.Name))
		if reason := oldShape(obj, "ready"); reason != "" {
			return false, "KThreesConfig " + c.Name + ": " + reason, nil
		}
	}
	return true, "", nil
}

// oldShape names what in a stored object is still of the old software: an old
// apiVersion, v1beta1 status fields, conditions with severity.
func oldShape(obj map[string]any, statusFields ...string) string {
	if v := obj["apiVersion"].(string); !strings.HasSuffix(v, "/v1beta2") {
		return "stored at " + v
	}
	for _, f := range statusFields {
		if field(obj, "status", f) != nil {
			return "status." + f + " still stored"
		}
	}
	conds, _ := field(obj, "status", "conditions").([]any)
	for _, c := range conds {
		if _, ok := c.(map[string]any)["severity"]; ok {
			return fmt.Sprintf("condition %v still has a severity", c.(map[string]any)["type"])
		}
	}
	return ""
}
