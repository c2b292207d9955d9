package move

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/sim"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

const (
	version = "v1.35.4+k3s1"
	// waitTimeout bounds each wait for the cluster to reach a state, with a margin for a
	// machine shared with other test packages.
	waitTimeout = 3 * time.Minute
	// userSecretName is the user's Secret that a file of the servers' config comes from.
	userSecretName = "k3s-extra-files"
	// userFileContent is the file's content, in the user's Secret.
	userFileContent = "moved with clusterctl move"
	// sharedSecretName is the user's registry credentials, which the cluster's config
	// names but which the user did not mark as the cluster's: something else in the
	// source management cluster may use them.
	sharedSecretName = "registry-credentials"
)

// machineRecord is what must not change about a Machine across the move.
type machineRecord struct {
	providerID string
	node       string
}

func TestMoveRunningCluster(t *testing.T) {
	ctx := context.Background()
	// One simulator for both management clusters: the workload clusters it runs are
	// the "real" infrastructure, which a move must leave alone. The source's manager
	// hands it over to the target's once it has stopped.
	simulator := &sim.Provider{KeepRunning: true}
	t.Cleanup(func() {
		if err := simulator.Stop(); err != nil {
			t.Logf("stopping the simulator: %v", err)
		}
	})

	// The source management cluster, running the whole stack.
	_, stopSource, err := source.RunManager(envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		return stack.Setup(ctx, mgr, stack.Options{Sim: simulator, Webhooks: true})
	})
	if err != nil {
		t.Fatalf("starting the source's manager: %v", err)
	}
	stopSource = onceErr(stopSource)
	t.Cleanup(func() { _ = stopSource() })

	ns := source.NewNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "k3s"}
	objs := stack.NewCluster(stack.ClusterOptions{Namespace: ns, Name: key.Name, Servers: 1, Version: version})
	// Marked as the cluster's: it moves with it.
	userSecret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: userSecretName, Labels: map[string]string{clusterv1.ClusterNameLabel: key.Name}},
		Data:       map[string][]byte{"motd": []byte(userFileContent)},
	}
	shared := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sharedSecretName, Labels: map[string]string{"team": "platform"}},
		Data:       map[string][]byte{"username": []byte("puller"), "password": []byte("shared with other users")},
	}
	objs.ControlPlane.Spec.KThreesConfigSpec.Files = []bootstrapv1.File{{
		Path: "/etc/motd",
		ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{
			Name: userSecretName, Key: "motd",
		}},
	}}
	objs.ControlPlane.Spec.KThreesConfigSpec.AgentConfig.Registries = &bootstrapv1.Registries{Configs: []bootstrapv1.RegistryConfig{{
		Registry: "registry.example.com", AuthSecret: &bootstrapv1.SecretReference{Name: sharedSecretName},
	}}}
	src := &mgmt{t: t, name: "source", c: source.Client, ns: ns, key: key, objs: objs, sim: simulator}
	src.must("creating the user Secret", src.c.Create(ctx, userSecret))
	src.must("creating the shared Secret", src.c.Create(ctx, shared))
	for _, o := range objs.Objects() {
		src.must(fmt.Sprintf("creating %T %s", o, o.GetName()), src.c.Create(ctx, o))
	}
	src.waitServers(ctx, 1)
	src.waitMovable(ctx)
	src.eventually(ctx, "the user Secret labelled for clusterctl move", func(ctx context.Context) (bool, string, error) {
		s := &corev1.Secret{}
		if err := src.c.Get(ctx, client.ObjectKeyFromObject(userSecret), s); err != nil {
			return false, "", err
		}
		_, ok := s.Labels[clusterctlv1.ClusterctlMoveLabel]
		return ok, fmt.Sprintf("labels %v", s.Labels), nil
	})

	// What the move must keep.
	machinesBefore := src.machineRecords(ctx)
	nodesBefore := nodeUIDs(t, ctx, src.workloadClient(ctx))
	membersBefore := simulator.EtcdMembers(key)
	secretsBefore := map[string]map[string][]byte{}
	for _, name := range []string{key.Name + "-token", key.Name + "-ca", key.Name + "-cca", key.Name + "-etcd", key.Name + "-kubeconfig", userSecretName} {
		s := &corev1.Secret{}
		src.must("reading Secret "+name, src.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s))
		secretsBefore[name] = s.Data
	}
	if len(secretsBefore[key.Name+"-token"]["value"]) == 0 {
		t.Fatalf("the token Secret has no value")
	}
	t.Logf("before the move: Machines %v, Nodes %v, etcd members %v", machinesBefore, slices.Sorted(maps.Keys(nodesBefore)), membersBefore)

	// The target management cluster, with the providers installed and running (as
	// `clusterctl init` would leave it), all but the infrastructure, which joins once
	// the source has let go of it.
	target, err := envtest.Start(envtest.Options{Webhooks: true})
	if err != nil {
		t.Fatalf("starting the target management cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := target.Stop(); err != nil {
			t.Logf("stopping the target: %v", err)
		}
	})
	targetMgr, stopTarget, err := target.RunManager(envtest.ManagerOptions{Webhooks: true}, func(ctx context.Context, mgr ctrl.Manager) error {
		return stack.Setup(ctx, mgr, stack.Options{Webhooks: true})
	})
	if err != nil {
		t.Fatalf("starting the target's manager: %v", err)
	}
	t.Cleanup(func() {
		if err := stopTarget(); err != nil {
			t.Logf("target's manager: %v", err)
		}
	})

	fromPath := prepareForClusterctl(t, ctx, source)
	toPath := prepareForClusterctl(t, ctx, target)
	start := time.Now()
	moveCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := clusterctlMove(moveCtx, t.TempDir(), fromPath, toPath, ns); err != nil {
		t.Fatalf("clusterctl move: %v", err)
	}
	t.Logf("clusterctl move took %s", time.Since(start).Round(time.Millisecond))

	// Hand the infrastructure over, as its provider on the target would take it up.
	if err := stopSource(); err != nil {
		t.Logf("source's manager: %v", err)
	}
	simulator.Client = targetMgr.GetClient()
	if err := simulator.SetupWithManager(targetMgr, controller.Options{MaxConcurrentReconciles: 4}); err != nil {
		t.Fatalf("the simulator on the target: %v", err)
	}

	// Nothing of the cluster is left on the source, but the shared Secret, as it was.
	src.assertGone(ctx, sharedSecretName)
	left := &corev1.Secret{}
	src.must("reading the shared Secret on the source", src.c.Get(ctx, client.ObjectKeyFromObject(shared), left))
	if !maps.EqualFunc(left.Data, shared.Data, func(a, b []byte) bool { return string(a) == string(b) }) || !maps.Equal(left.Labels, shared.Labels) {
		t.Errorf("the shared Secret changed on the source: labels %v, want %v; data equal %v", left.Labels, shared.Labels,
			maps.EqualFunc(left.Data, shared.Data, func(a, b []byte) bool { return string(a) == string(b) }))
	}

	dst := &mgmt{t: t, name: "target", c: target.Client, ns: ns, key: key, objs: objs, sim: simulator}
	cluster := &clusterv1.Cluster{}
	dst.must("reading the moved Cluster", dst.c.Get(ctx, key, cluster))
	if ptr.Deref(cluster.Spec.Paused, false) {
		t.Errorf("the moved Cluster is still paused")
	}
	for name, data := range secretsBefore {
		s := &corev1.Secret{}
		if err := dst.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Errorf("Secret %s on the target: %v", name, err)
			continue
		}
		if !maps.EqualFunc(s.Data, data, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("Secret %s changed in the move: keys before %v, after %v", name, slices.Sorted(maps.Keys(data)), slices.Sorted(maps.Keys(s.Data)))
		}
	}

	// The same cluster keeps running on the target, with no server replaced.
	dst.waitServers(ctx, 1)
	t.Logf("the cluster runs on the target %s after the move", time.Since(start).Round(time.Millisecond))
	if got := dst.machineRecords(ctx); !maps.Equal(got, machinesBefore) {
		t.Errorf("Machines changed in the move: before %v, after %v", machinesBefore, got)
	}
	if got := nodeUIDs(t, ctx, dst.workloadClient(ctx)); !maps.Equal(got, nodesBefore) {
		t.Errorf("Nodes changed in the move: before %v, after %v", nodesBefore, got)
	}
	if got := simulator.EtcdMembers(key); !slices.Equal(got, membersBefore) {
		t.Errorf("etcd members changed in the move: before %v, after %v", membersBefore, got)
	}
	token := &corev1.Secret{}
	dst.must("reading the token Secret", dst.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: key.Name + "-token"}, token))
	if string(token.Data["value"]) != string(secretsBefore[key.Name+"-token"]["value"]) {
		t.Errorf("the token changed in the move")
	}
	if t.Failed() {
		t.FailNow()
	}

	// The shared Secret stayed behind: the user copies it, as docs/install.md says.
	if err := dst.c.Get(ctx, client.ObjectKeyFromObject(shared), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the shared Secret on the target before it was copied: %v, want NotFound", err)
	}
	sharedCopy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sharedSecretName}, Data: shared.Data}
	dst.must("copying the shared Secret to the target", dst.c.Create(ctx, sharedCopy))

	// And keeps reconciling there: two more servers join with the moved token and CAs,
	// their data made from the moved user Secret and the copied shared one.
	kcp := &controlplanev1.KThreesControlPlane{}
	dst.must("reading the KThreesControlPlane", dst.c.Get(ctx, client.ObjectKeyFromObject(objs.ControlPlane), kcp))
	before := kcp.DeepCopy()
	kcp.Spec.Replicas = ptr.To[int32](3)
	dst.must("scaling the control plane", dst.c.Patch(ctx, kcp, client.MergeFrom(before)))
	dst.waitServers(ctx, 3)
	t.Logf("3 servers on the target %s after the move", time.Since(start).Round(time.Millisecond))
	after := dst.machineRecords(ctx)
	for name, rec := range machinesBefore {
		if after[name] != rec {
			t.Errorf("server %s was replaced or changed while scaling on the target: before %v, after %v", name, rec, after[name])
		}
	}
	for name := range after {
		if _, old := machinesBefore[name]; !old {
			dst.assertUserFile(ctx, name)
		}
	}
	nodesAfter := nodeUIDs(t, ctx, dst.workloadClient(ctx))
	for name, uid := range nodesBefore {
		if nodesAfter[name] != uid {
			t.Errorf("Node %s was replaced while scaling on the target", name)
		}
	}
	if got := simulator.EtcdMembers(key); len(got) != 3 || !containsAll(got, membersBefore) {
		t.Errorf("etcd members after scaling on the target: %v, want 3 including %v", got, membersBefore)
	}
	token2 := &corev1.Secret{}
	dst.must("reading the token Secret", dst.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: key.Name + "-token"}, token2))
	if string(token2.Data["value"]) != string(secretsBefore[key.Name+"-token"]["value"]) {
		t.Errorf("the token changed while scaling on the target")
	}

	// Delete the cluster on the target, so its workload processes stop with it.
	if !t.Failed() {
		dst.deleting = true
		dst.must("deleting the Cluster", dst.c.Delete(ctx, cluster))
		dst.eventually(ctx, "the Cluster gone", func(ctx context.Context) (bool, string, error) {
			err := dst.c.Get(ctx, key, &clusterv1.Cluster{})
			return apierrors.IsNotFound(err), fmt.Sprintf("%v", err), client.IgnoreNotFound(err)
		})
	}
}

// mgmt is the cluster as one management cluster sees it.
type mgmt struct {
	t        *testing.T
	name     string
	c        client.Client
	ns       string
	key      types.NamespacedName
	objs     *stack.Cluster
	sim      *sim.Provider
	workload client.Client
	// deleting is set once the test deletes the cluster: its servers then go without
	// leaving etcd, and quorum is lost on purpose.
	deleting bool
}

func (m *mgmt) must(what string, err error) {
	m.t.Helper()
	if err != nil {
		m.t.Fatalf("%s: %s: %v", m.name, what, err)
	}
}

// healthy fails fast on what must never happen: etcd quorum lost, or a machine whose
// bootstrap data k3s would refuse.
func (m *mgmt) healthy(ctx context.Context) error {
	if m.sim.QuorumLost(m.key) && !m.deleting {
		return errors.New("etcd lost quorum")
	}
	list := &simv1.SimMachineList{}
	if err := m.c.List(ctx, list, client.InNamespace(m.ns)); err != nil {
		return err
	}
	for _, sm := range list.Items {
		if c := conditions.Get(&sm, clusterv1.ReadyCondition); c != nil && (c.Reason == "BootstrapDataInvalid" || c.Reason == "JoinRefused") {
			return fmt.Errorf("SimMachine %s: %s: %s", sm.Name, c.Reason, c.Message)
		}
	}
	return nil
}

func (m *mgmt) eventually(ctx context.Context, what string, cond func(ctx context.Context) (bool, string, error)) {
	m.t.Helper()
	last := ""
	err := envtest.Eventually(ctx, waitTimeout, func(ctx context.Context) (bool, error) {
		if err := m.healthy(ctx); err != nil {
			return false, err
		}
		ok, state, err := cond(ctx)
		last = state
		return ok, err
	})
	if err != nil {
		m.t.Fatalf("%s: waiting for %s: %v; last seen: %s", m.name, what, err, last)
	}
}

func (m *mgmt) serverMachines(ctx context.Context) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	err := m.c.List(ctx, list, client.InNamespace(m.ns), client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: m.objs.ControlPlane.Name})
	return list.Items, err
}

// waitServers waits until the control plane has want servers, all ready, available
// and up to date, each with its Node, and as many etcd members.
func (m *mgmt) waitServers(ctx context.Context, want int32) {
	m.t.Helper()
	m.eventually(ctx, fmt.Sprintf("%d servers", want), func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := m.c.Get(ctx, client.ObjectKeyFromObject(m.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		machines, err := m.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		st := kcp.Status
		members := m.sim.EtcdMembers(m.key)
		state := fmt.Sprintf("status replicas=%d ready=%d available=%d upToDate=%d; %d Machines; etcd members %v; %s",
			ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1),
			ptr.Deref(st.UpToDateReplicas, -1), len(machines), members, notReady(machines))
		ok := ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines) == int(want) && allJoined(machines) && len(members) == int(want)
		return ok, state, nil
	})
}

// waitMovable waits until clusterctl would start a move: the Cluster's infrastructure
// provisioned and its control plane initialized.
func (m *mgmt) waitMovable(ctx context.Context) {
	m.t.Helper()
	m.eventually(ctx, "the Cluster initialized", func(ctx context.Context) (bool, string, error) {
		c := &clusterv1.Cluster{}
		if err := m.c.Get(ctx, m.key, c); err != nil {
			return false, "", err
		}
		in := c.Status.Initialization
		ok := ptr.Deref(in.InfrastructureProvisioned, false) && ptr.Deref(in.ControlPlaneInitialized, false) &&
			conditions.IsTrue(c, clusterv1.ClusterControlPlaneInitializedCondition)
		return ok, fmt.Sprintf("initialization %+v", in), nil
	})
}

func notReady(machines []clusterv1.Machine) string {
	for _, m := range machines {
		if c := conditions.Get(&m, clusterv1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue {
			if c == nil {
				return m.Name + " has no Ready condition"
			}
			return fmt.Sprintf("%s not Ready: %s: %q", m.Name, c.Reason, c.Message)
		}
	}
	return "all Machines Ready"
}

func allJoined(machines []clusterv1.Machine) bool {
	for _, m := range machines {
		if !m.Status.NodeRef.IsDefined() || m.Spec.Version != version || !m.DeletionTimestamp.IsZero() {
			return false
		}
	}
	return true
}

// machineRecords are the servers by Machine name.
func (m *mgmt) machineRecords(ctx context.Context) map[string]machineRecord {
	m.t.Helper()
	machines, err := m.serverMachines(ctx)
	m.must("listing Machines", err)
	out := map[string]machineRecord{}
	for _, mc := range machines {
		out[mc.Name] = machineRecord{providerID: mc.Spec.ProviderID, node: mc.Status.NodeRef.Name}
	}
	return out
}

// workloadClient is a client of the workload cluster made from the kubeconfig Secret
// on this management cluster, as a user would use it.
func (m *mgmt) workloadClient(ctx context.Context) client.Client {
	m.t.Helper()
	if m.workload != nil {
		return m.workload
	}
	data, err := kubeconfig.FromSecret(ctx, m.c, m.key)
	m.must("reading the kubeconfig Secret", err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	m.must("parsing the kubeconfig", err)
	m.workload, err = client.New(cfg, client.Options{})
	m.must("workload client", err)
	return m.workload
}

// nodeUIDs are the workload cluster's Nodes: name to UID.
func nodeUIDs(t *testing.T, ctx context.Context, c client.Client) map[string]types.UID {
	t.Helper()
	list := &corev1.NodeList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("listing Nodes: %v", err)
	}
	out := map[string]types.UID{}
	for _, n := range list.Items {
		out[n.Name] = n.UID
	}
	return out
}

// assertGone checks that no object of the cluster is left in the namespace, but the
// Secrets named in kept.
func (m *mgmt) assertGone(ctx context.Context, kept ...string) {
	m.t.Helper()
	for _, list := range []client.ObjectList{
		&clusterv1.ClusterList{}, &clusterv1.MachineList{}, &controlplanev1.KThreesControlPlaneList{},
		&bootstrapv1.KThreesConfigList{}, &simv1.SimClusterList{}, &simv1.SimMachineList{},
		&simv1.SimMachineTemplateList{}, &corev1.SecretList{},
	} {
		m.must("listing leftovers", m.c.List(ctx, list, client.InNamespace(m.ns)))
		var names []string
		switch l := list.(type) {
		case *corev1.SecretList:
			for _, s := range l.Items {
				// A service account token (none without the controller-manager's
				// token controller) would not be the cluster's.
				if s.Type != corev1.SecretTypeServiceAccountToken && !slices.Contains(kept, s.Name) {
					names = append(names, s.Name)
				}
			}
		default:
			items, err := metaNames(list)
			m.must("reading leftovers", err)
			names = items
		}
		if len(names) > 0 {
			m.t.Errorf("%s: %T left in namespace %s after the move: %v", m.name, list, m.ns, names)
		}
	}
}

// assertUserFile checks that a Machine's bootstrap data carries the file from the
// user's Secret.
func (m *mgmt) assertUserFile(ctx context.Context, machine string) {
	m.t.Helper()
	mc := &clusterv1.Machine{}
	m.must("reading Machine "+machine, m.c.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: machine}, mc))
	if mc.Spec.Bootstrap.DataSecretName == nil {
		m.t.Errorf("Machine %s has no bootstrap data", machine)
		return
	}
	s := &corev1.Secret{}
	m.must("reading bootstrap data", m.c.Get(ctx, client.ObjectKey{Namespace: m.ns, Name: *mc.Spec.Bootstrap.DataSecretName}, s))
	data := string(s.Data["value"])
	if !strings.Contains(data, userFileContent) && !strings.Contains(data, base64.StdEncoding.EncodeToString([]byte(userFileContent))) {
		m.t.Errorf("the bootstrap data of %s, made on the target, lacks the file from Secret %s", machine, userSecretName)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// onceErr makes stop safe to call twice: the second call returns the first's result.
func onceErr(stop func() error) func() error {
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = stop() })
		return err
	}
}
