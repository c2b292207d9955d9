package inplace

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/runtimehooks"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

const (
	oldVersion  = "v1.35.4+k3s1"
	newVersion  = "v1.36.1+k3s1"
	waitTimeout = 3 * time.Minute
)

// extension calls the extension's handlers over HTTPS, as CAPI's runtime client does.
type extension struct {
	t       *testing.T
	url     string
	http    *http.Client
	catalog *runtimecatalog.Catalog
	rootCAs *x509.CertPool
}

// startStack runs the stack and the extension, which reaches workload clusters
// through a ClusterCache of its own, as in the control-plane manager.
func startStack(t *testing.T) *extension {
	t.Helper()
	certDir, ca, _ := env.ServingCert()
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	callers, err := envtest.NewClientCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, _, clientCert, err := callers.Issue("capi-core")
	if err != nil {
		t.Fatal(err)
	}
	env.StartManager(t, envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		if err := stack.Setup(ctx, mgr, stack.Options{Sim: simulator, Webhooks: true}); err != nil {
			return err
		}
		cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: mgr.GetAPIReader(),
			Cache:        setup.ClusterCacheCacheOptions(),
			Client:       setup.ClusterCacheClientOptions("capk3s-inplace-test", 100, 200),
		}, controller.Options{})
		if err != nil {
			return err
		}
		if s, ok := cc.(interface{ SetConnectionCreationRetryInterval(time.Duration) }); ok {
			s.SetConnectionCreationRetryInterval(2 * time.Second)
		}
		return inplace.SetupExtension(ctx, mgr, inplace.ExtensionOptions{
			Host: "127.0.0.1", Port: port, CertDir: certDir, Workload: cc, RetryAfterSeconds: 1,
			ClientCAFiles: []string{callers.CAFile},
		})
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		t.Fatal(err)
	}
	return &extension{
		t: t, url: fmt.Sprintf("https://127.0.0.1:%d", port), catalog: catalog, rootCAs: pool,
		http: httpClient(pool, &clientCert),
	}
}

// httpClient trusts the extension's serving certificate and presents cert, if any.
func httpClient(rootCAs *x509.CertPool, cert *tls.Certificate) *http.Client {
	cfg := &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// call posts req to the named handler of hook and decodes the answer into resp.
func (e *extension) call(hook runtimecatalog.Hook, name string, req, resp any) {
	e.t.Helper()
	r, err := e.post(e.http, hook, name, req)
	if err != nil {
		e.t.Fatalf("calling %s: %v", name, err)
	}
	defer func() { _ = r.Body.Close() }()
	raw, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != http.StatusOK {
		e.t.Fatalf("calling %s: HTTP %d %s %v", name, r.StatusCode, raw, err)
	}
	if err := json.Unmarshal(raw, resp); err != nil {
		e.t.Fatalf("decoding %s's answer %s: %v", name, raw, err)
	}
}

// post sends req to the named handler of hook with hc.
func (e *extension) post(hc *http.Client, hook runtimecatalog.Hook, name string, req any) (*http.Response, error) {
	gvh, err := e.catalog.GroupVersionHook(hook)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	return hc.Post(e.url+runtimecatalog.GVHToPath(gvh, name), "application/json", bytes.NewReader(body))
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	last := ""
	err := envtest.Eventually(context.Background(), waitTimeout, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		if state != "" {
			last = state
		}
		return ok, err
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: %s", what, err, last)
	}
}

// TestUpdateMachineThroughSUC: a cluster without SUC is refused; once SUC is
// installed, the k3s version is covered, and UpdateMachine upgrades a server and an
// agent in place through Plans, reports Done, stays Done when asked again, and leaves
// no Plan behind; a Plan whose Job fails is reported as Failed.
func TestUpdateMachineThroughSUC(t *testing.T) {
	ext := startStack(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	objs := stack.NewCluster(stack.ClusterOptions{Namespace: ns, Name: "k3s", Servers: 1, Agents: 1, Version: oldVersion})
	for _, o := range objs.Objects() {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), objs.Cluster) })
	key := client.ObjectKeyFromObject(objs.Cluster)
	server := waitForMachine(t, ns, client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: objs.ControlPlane.Name})
	agent := waitForMachine(t, ns, client.MatchingLabels{stack.PoolLabel: "agents"})
	membersBefore := simulator.EtcdMembers(key)
	// From here the test plays the Machines' owners, which mark a Machine for an
	// update: no controller may act on the marks in their place.
	setPaused(t, objs.Cluster, true)

	t.Run("callers without a trusted client certificate are refused", func(t *testing.T) {
		other, err := envtest.NewClientCA(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, _, foreign, err := other.Issue("intruder")
		if err != nil {
			t.Fatal(err)
		}
		for what, hc := range map[string]*http.Client{"no client certificate": httpClient(ext.rootCAs, nil), "another CA's certificate": httpClient(ext.rootCAs, &foreign)} {
			resp, err := ext.post(hc, runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, server, newVersion))
			if err == nil {
				_ = resp.Body.Close()
				t.Errorf("%s: UpdateMachine answered HTTP %d, want the TLS handshake refused", what, resp.StatusCode)
			}
		}
	})

	t.Run("without SUC, nothing is covered and UpdateMachine waits for it", func(t *testing.T) {
		resp := &runtimehooksv1.CanUpdateMachineResponse{}
		ext.call(runtimehooksv1.CanUpdateMachine, inplace.CanUpdateMachineHandler, canUpdateMachineRequest(t, server, newVersion), resp)
		if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.MachinePatch.IsDefined() || resp.BootstrapConfigPatch.IsDefined() ||
			!strings.Contains(resp.Message, "no system-upgrade-controller") {
			t.Errorf("CanUpdateMachine = %s %q, patch %s; want Success, no patch, a message about SUC", resp.Status, resp.Message, resp.MachinePatch.Patch)
		}
		up := &runtimehooksv1.UpdateMachineResponse{}
		ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, markForUpdate(t, server, newVersion), newVersion), up)
		if up.Status != runtimehooksv1.ResponseStatusSuccess || up.RetryAfterSeconds == 0 || !strings.Contains(up.Message, "no system-upgrade-controller") {
			t.Errorf("UpdateMachine = %s %q retry %d; want in progress, with a message about SUC", up.Status, up.Message, up.RetryAfterSeconds)
		}
	})
	// The simulator installs SUC only on an unpaused cluster, where the controllers
	// would act on the marks: they go first.
	unmark(t, server, oldVersion)
	setPaused(t, objs.Cluster, false)

	sc := objs.SimCluster.DeepCopy()
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sc), sc); err != nil {
		t.Fatal(err)
	}
	before := sc.DeepCopy()
	sc.Annotations = map[string]string{simv1.SystemUpgradeControllerAnnotation: "true"}
	if err := env.Client.Patch(ctx, sc, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	t.Run("with SUC, the version is covered", func(t *testing.T) {
		eventually(t, "CanUpdateMachine to cover the version", func(context.Context) (bool, string, error) {
			resp := &runtimehooksv1.CanUpdateMachineResponse{}
			ext.call(runtimehooksv1.CanUpdateMachine, inplace.CanUpdateMachineHandler, canUpdateMachineRequest(t, server, newVersion), resp)
			want := `[{"op":"add","path":"/spec/version","value":"` + newVersion + `"}]`
			return resp.MachinePatch.PatchType == runtimehooksv1.JSONPatchType && string(resp.MachinePatch.Patch) == want, resp.Message, nil
		})
		setPaused(t, objs.Cluster, true)
		resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
		ext.call(runtimehooksv1.CanUpdateMachineSet, inplace.CanUpdateMachineSetHandler, canUpdateMachineSetRequest(t, ns, newVersion), resp)
		want := `[{"op":"add","path":"/spec/template/spec/version","value":"` + newVersion + `"}]`
		if string(resp.MachineSetPatch.Patch) != want || resp.InfrastructureMachineTemplatePatch.IsDefined() {
			t.Errorf("CanUpdateMachineSet = %q, patch %s; want %s", resp.Message, resp.MachineSetPatch.Patch, want)
		}
	})

	wc, err := simulator.WorkloadClient(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an unmarked Machine, or a version it is not to run, is refused", func(t *testing.T) {
		resp := &runtimehooksv1.UpdateMachineResponse{}
		ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, agent, newVersion), resp)
		if resp.Status != runtimehooksv1.ResponseStatusFailure || !strings.Contains(resp.Message, "not marked") {
			t.Errorf("UpdateMachine of an unmarked Machine = %s %q, want Failure, not marked", resp.Status, resp.Message)
		}
		markForUpdate(t, server, newVersion)
		ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, server, "v1.36.9+k3s1"), resp)
		if resp.Status != runtimehooksv1.ResponseStatusFailure || !strings.Contains(resp.Message, "asks for version v1.36.9+k3s1") {
			t.Errorf("UpdateMachine for another version = %s %q, want Failure", resp.Status, resp.Message)
		}
		for _, m := range []*clusterv1.Machine{agent, server} {
			if p := getPlan(t, wc, m); p != nil {
				t.Errorf("a refused call made Plan %s", p.GetName())
			}
		}
	})
	t.Run("a server is upgraded in place", func(t *testing.T) {
		// Another node's kubelet takes the server's host name, which a kubelet may
		// set on its own Node: the server's Plan must not run there.
		serverNode := &corev1.Node{}
		if err := wc.Get(ctx, client.ObjectKey{Name: server.Status.NodeRef.Name}, serverNode); err != nil {
			t.Fatal(err)
		}
		impostor := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "impostor",
			Labels: map[string]string{corev1.LabelHostname: serverNode.Labels[corev1.LabelHostname]}}}
		if err := wc.Create(ctx, impostor); err != nil {
			t.Fatal(err)
		}
		impostor.Status.NodeInfo.KubeletVersion = oldVersion
		if err := wc.Status().Update(ctx, impostor); err != nil {
			t.Fatal(err)
		}
		upgrade(t, ext, wc, server, newVersion, func(plan *unstructured.Unstructured) {
			if cordon, _, _ := unstructured.NestedBool(plan.Object, "spec", "cordon"); !cordon {
				t.Errorf("the server's Plan does not cordon: %v", plan.Object["spec"])
			}
		})
		if after := simulator.EtcdMembers(key); !slices.Equal(after, membersBefore) {
			t.Errorf("etcd members %v after the upgrade, want %v", after, membersBefore)
		}
		if err := wc.Get(ctx, client.ObjectKeyFromObject(impostor), impostor); err != nil {
			t.Fatal(err)
		}
		if impostor.Spec.Unschedulable || impostor.Status.NodeInfo.KubeletVersion != oldVersion || len(impostor.Annotations) > 0 || len(impostor.Labels) > 1 {
			t.Errorf("the server's Plan ran on Node %s, which took the server's host name: unschedulable %v, version %s, labels %v, annotations %v",
				impostor.Name, impostor.Spec.Unschedulable, impostor.Status.NodeInfo.KubeletVersion, impostor.Labels, impostor.Annotations)
		}
		if err := wc.Get(ctx, client.ObjectKeyFromObject(serverNode), serverNode); err != nil {
			t.Fatal(err)
		}
		if v, ok := serverNode.Labels[inplace.UpgradeTargetLabel]; ok {
			t.Errorf("Node %s keeps %s=%s after its upgrade", serverNode.Name, inplace.UpgradeTargetLabel, v)
		}
		if err := wc.Delete(ctx, impostor); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a downgrade is refused even when the Machine is marked for it", func(t *testing.T) {
		resp := &runtimehooksv1.UpdateMachineResponse{}
		ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, markForUpdate(t, server, oldVersion), oldVersion), resp)
		if resp.Status != runtimehooksv1.ResponseStatusFailure || !strings.Contains(resp.Message, "downgrade") {
			t.Errorf("UpdateMachine to %s = %s %q, want Failure, a downgrade", oldVersion, resp.Status, resp.Message)
		}
		if p := getPlan(t, wc, server); p != nil {
			t.Errorf("a refused downgrade made Plan %s", p.GetName())
		}
	})
	t.Run("an agent is upgraded in place", func(t *testing.T) {
		upgrade(t, ext, wc, agent, newVersion, func(plan *unstructured.Unstructured) {
			if _, ok, _ := unstructured.NestedMap(plan.Object, "spec", "drain"); !ok {
				t.Errorf("the agent's Plan does not drain: %v", plan.Object["spec"])
			}
		})
	})
	t.Run("a failed upgrade Job is reported as Failed", func(t *testing.T) {
		node := &corev1.Node{}
		if err := wc.Get(ctx, client.ObjectKey{Name: agent.Status.NodeRef.Name}, node); err != nil {
			t.Fatal(err)
		}
		before := node.DeepCopy()
		node.Annotations[simv1.UpgradeFailAnnotation] = "image pull failed"
		if err := wc.Patch(ctx, node, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		eventually(t, "UpdateMachine to fail", func(context.Context) (bool, string, error) {
			resp := &runtimehooksv1.UpdateMachineResponse{}
			ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, updateMachineRequest(t, markForUpdate(t, agent, "v1.36.2+k3s1"), "v1.36.2+k3s1"), resp)
			return resp.Status == runtimehooksv1.ResponseStatusFailure && strings.Contains(resp.Message, "image pull failed"),
				fmt.Sprintf("%s %q", resp.Status, resp.Message), nil
		})
		if err := wc.Get(ctx, client.ObjectKey{Name: agent.Status.NodeRef.Name}, node); err != nil {
			t.Fatal(err)
		}
		if v, ok := node.Labels[inplace.UpgradeTargetLabel]; ok {
			t.Errorf("Node %s keeps %s=%s after its upgrade failed", node.Name, inplace.UpgradeTargetLabel, v)
		}
	})
}

// upgrade calls UpdateMachine until it reports Done: in progress first, with the
// Plan on the workload cluster; then the Node runs version, is Ready and schedulable;
// asked again, Done at once, with no Plan left.
func upgrade(t *testing.T, ext *extension, wc client.Client, m *clusterv1.Machine, version string, checkPlan func(*unstructured.Unstructured)) {
	t.Helper()
	ctx := context.Background()
	req := updateMachineRequest(t, markForUpdate(t, m, version), version)
	resp := &runtimehooksv1.UpdateMachineResponse{}
	ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, req, resp)
	if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds == 0 {
		t.Fatalf("first UpdateMachine = %s %q retry %d, want in progress", resp.Status, resp.Message, resp.RetryAfterSeconds)
	}
	plan := getPlan(t, wc, m)
	if plan == nil {
		t.Fatalf("no Plan %s after UpdateMachine", inplace.PlanName(m))
	}
	if v, _, _ := unstructured.NestedString(plan.Object, "spec", "version"); v != version {
		t.Errorf("Plan version %q, want %q", v, version)
	}
	checkPlan(plan)
	// SUC's Job cordons the Node first (and drains an agent's), for a second.
	_, drains, _ := unstructured.NestedMap(plan.Object, "spec", "drain")
	eventually(t, "the Node to be cordoned", func(ctx context.Context) (bool, string, error) {
		node := &corev1.Node{}
		if err := wc.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
			return false, "", err
		}
		if !node.Spec.Unschedulable {
			return false, "schedulable", nil
		}
		if drained := node.Annotations[sim.DrainedAnnotation] != ""; drained != drains {
			return false, "", fmt.Errorf("Node %s cordoned, drained %v; the Plan drains: %v", node.Name, drained, drains)
		}
		return true, "", nil
	})
	eventually(t, "UpdateMachine to report Done", func(context.Context) (bool, string, error) {
		resp := &runtimehooksv1.UpdateMachineResponse{}
		ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, req, resp)
		if resp.Status != runtimehooksv1.ResponseStatusSuccess {
			return false, "", fmt.Errorf("UpdateMachine = %s %q", resp.Status, resp.Message)
		}
		return resp.RetryAfterSeconds == 0, resp.Message, nil
	})
	node := &corev1.Node{}
	if err := wc.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, node); err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.KubeletVersion != version || node.Spec.Unschedulable {
		t.Errorf("Node %s runs %s, unschedulable %v; want %s, schedulable", node.Name, node.Status.NodeInfo.KubeletVersion, node.Spec.Unschedulable, version)
	}
	if p := getPlan(t, wc, m); p != nil {
		t.Errorf("Plan %s left after Done", p.GetName())
	}
	again := &runtimehooksv1.UpdateMachineResponse{}
	ext.call(runtimehooksv1.UpdateMachine, inplace.UpdateMachineHandler, req, again)
	if again.Status != runtimehooksv1.ResponseStatusSuccess || again.RetryAfterSeconds != 0 || getPlan(t, wc, m) != nil {
		t.Errorf("UpdateMachine again = %s %q retry %d; want Done and no new Plan", again.Status, again.Message, again.RetryAfterSeconds)
	}
}

// setPaused pauses or unpauses cluster: paused, no controller acts on the marks the
// test sets.
func setPaused(t *testing.T, cluster *clusterv1.Cluster, paused bool) {
	t.Helper()
	c := &clusterv1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cluster), c); err != nil {
		t.Fatal(err)
	}
	before := c.DeepCopy()
	c.Spec.Paused = ptr.To(paused)
	if err := env.Client.Patch(context.Background(), c, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// markForUpdate marks m for an in-place update to version as its owner does: the
// desired version in the Machine's spec, CAPI's update-in-progress annotation and the
// pending UpdateMachine hook. It returns the Machine as stored.
func markForUpdate(t *testing.T, m *clusterv1.Machine, version string) *clusterv1.Machine {
	t.Helper()
	live := &clusterv1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(m), live); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()
	live.Spec.Version = version
	if live.Annotations == nil {
		live.Annotations = map[string]string{}
	}
	live.Annotations[clusterv1.UpdateInProgressAnnotation] = ""
	live.Annotations[runtimev1.PendingHooksAnnotation] = "UpdateMachine"
	if err := env.Client.Patch(context.Background(), live, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	return live
}

// unmark takes markForUpdate back: m's version is version again, without the marks.
func unmark(t *testing.T, m *clusterv1.Machine, version string) {
	t.Helper()
	live := &clusterv1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(m), live); err != nil {
		t.Fatal(err)
	}
	before := live.DeepCopy()
	live.Spec.Version = version
	delete(live.Annotations, clusterv1.UpdateInProgressAnnotation)
	delete(live.Annotations, runtimev1.PendingHooksAnnotation)
	if err := env.Client.Patch(context.Background(), live, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

func getPlan(t *testing.T, wc client.Client, m *clusterv1.Machine) *unstructured.Unstructured {
	t.Helper()
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(schema.GroupVersionKind{Group: "upgrade.cattle.io", Version: "v1", Kind: "Plan"})
	err := wc.Get(context.Background(), client.ObjectKey{Namespace: envtest.SystemUpgradeNamespace, Name: inplace.PlanName(m)}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitForMachine waits for the one Machine matching labels to have its Node.
func waitForMachine(t *testing.T, ns string, labels client.MatchingLabels) *clusterv1.Machine {
	t.Helper()
	var got *clusterv1.Machine
	eventually(t, fmt.Sprintf("a Machine %v with a Node", labels), func(ctx context.Context) (bool, string, error) {
		list := &clusterv1.MachineList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns), labels); err != nil {
			return false, "", err
		}
		if len(list.Items) != 1 || !list.Items[0].Status.NodeRef.IsDefined() {
			return false, fmt.Sprintf("%d Machines", len(list.Items)), nil
		}
		got = &list.Items[0]
		return true, "", nil
	})
	return got
}

// specOnly is what CAPI sends of an object: its identity and spec.
func specOnly(t *testing.T, ref clusterv1.ContractVersionedObjectReference, ns string) runtime.RawExtension {
	t.Helper()
	u := &unstructured.Unstructured{}
	gv := bootstrapv1.GroupVersion
	if ref.APIGroup == simv1.GroupVersion.Group {
		gv = simv1.GroupVersion
	}
	u.SetGroupVersionKind(gv.WithKind(ref.Kind))
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ref.Name}, u); err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "spec": u.Object["spec"]}}
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: raw}
}

func machineWithVersion(m *clusterv1.Machine, version string) clusterv1.Machine {
	out := clusterv1.Machine{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels},
		Spec:       *m.Spec.DeepCopy(),
	}
	out.Spec.Version = version
	return out
}

func canUpdateMachineRequest(t *testing.T, m *clusterv1.Machine, version string) *runtimehooksv1.CanUpdateMachineRequest {
	t.Helper()
	cfg := specOnly(t, m.Spec.Bootstrap.ConfigRef, m.Namespace)
	infra := specOnly(t, m.Spec.InfrastructureRef, m.Namespace)
	return &runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machineWithVersion(m, m.Spec.Version), BootstrapConfig: cfg, InfrastructureMachine: infra},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: machineWithVersion(m, version), BootstrapConfig: cfg, InfrastructureMachine: infra},
	}
}

func updateMachineRequest(t *testing.T, m *clusterv1.Machine, version string) *runtimehooksv1.UpdateMachineRequest {
	t.Helper()
	return &runtimehooksv1.UpdateMachineRequest{Desired: runtimehooksv1.UpdateMachineRequestObjects{
		Machine:               machineWithVersion(m, version),
		BootstrapConfig:       specOnly(t, m.Spec.Bootstrap.ConfigRef, m.Namespace),
		InfrastructureMachine: specOnly(t, m.Spec.InfrastructureRef, m.Namespace),
	}}
}

func canUpdateMachineSetRequest(t *testing.T, ns, version string) *runtimehooksv1.CanUpdateMachineSetRequest {
	t.Helper()
	list := &clusterv1.MachineSetList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil || len(list.Items) != 1 {
		t.Fatalf("listing MachineSets: %d, %v", len(list.Items), err)
	}
	ms := list.Items[0]
	cur := clusterv1.MachineSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet"},
		ObjectMeta: metav1.ObjectMeta{Name: ms.Name, Namespace: ms.Namespace, Labels: ms.Labels},
		Spec:       *ms.Spec.DeepCopy(),
	}
	des := *cur.DeepCopy()
	des.Spec.Template.Spec.Version = version
	bt := specOnly(t, ms.Spec.Template.Spec.Bootstrap.ConfigRef, ns)
	it := specOnly(t, ms.Spec.Template.Spec.InfrastructureRef, ns)
	return &runtimehooksv1.CanUpdateMachineSetRequest{
		Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: cur, BootstrapConfigTemplate: bt, InfrastructureMachineTemplate: it},
		Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{MachineSet: des, BootstrapConfigTemplate: bt, InfrastructureMachineTemplate: it},
	}
}
