package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/test/sim"
	"github.com/capk3s/capk3s/test/stack"
)

// heldMessage is in a restore's message while its first server waits for Cluster
// API to drop its caches of the old workload API.
const heldMessage = "held until Cluster API has dropped its caches"

// restoreToSnapshot restores the running cluster to the KThreesEtcdSnapshot named
// snap and checks that it came back as it was then: marker A there, B gone, three new
// servers in a three-member etcd, the same agents Ready, the old servers' Nodes gone,
// the token, CA and kubeconfig Secrets untouched (same UID, same data) and the
// kubeconfig working. The manager running the restore is restarted on the way.
func (s *scenario) restoreToSnapshot(snap string) {
	s.t.Helper()
	agents := s.agentUIDs()
	oldServers := s.serverNames()
	oldNodes := s.nodeNamesOfServers()
	secrets := s.clusterSecrets()
	before := s.liveNodes(s.ctx)
	restores := simulator.Restores(s.key)
	s.refusedRestoreOfAMissingSnapshot()

	restore := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "restore-" + snap},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotRef: snap},
	}
	s.restoring = true
	s.must("creating the KThreesEtcdRestore", env.Client.Create(s.ctx, restore))
	second := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "second-restore"},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotRef: snap},
	}
	if err := env.Client.Create(s.ctx, second); err == nil || !strings.Contains(err.Error(), restore.Name) {
		s.t.Errorf("a second restore while %s runs: %v, want refused naming it", restore.Name, err)
	}
	// The manager that runs the restore is stopped and started again while the
	// first server is held, the old servers gone: the new one resumes from the status.
	s.eventually("the first server held for Cluster API's caches", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), restore); err != nil {
			return false, "", err
		}
		st := restore.Status
		return strings.Contains(st.Message, heldMessage), fmt.Sprintf("phase %s: %s", st.Phase, st.Message), nil
	})
	restoreManager.restart(s.t)
	restore = s.failedRestoreAndTheWayOut(restore)
	s.eventually("the restore to succeed", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(restore), restore); err != nil {
			return false, "", err
		}
		st := restore.Status
		if st.Phase == controlplanev1.EtcdRestoreFailed || st.Phase == controlplanev1.EtcdRestoreRefused {
			return false, "", fmt.Errorf("restore %s: %s", st.Phase, st.Message)
		}

		state := fmt.Sprintf("phase %s: %s; %s", st.Phase, st.Message, s.remoteConnection(ctx))
		if st.Phase != controlplanev1.EtcdRestoreSucceeded {
			state += "; " + s.liveNodes(ctx).String()
		}
		return st.Phase == controlplanev1.EtcdRestoreSucceeded, state, nil
	})
	s.restoring = false
	after := s.liveNodes(s.ctx)
	// k3s's restored etcd goes on from the snapshot's revision: below what every
	// informer saw before the restore (what the first server waits for).
	s.t.Logf("restore: Node list resourceVersion %s before, %s after", before.rv, after.rv)
	for _, c := range []string{controlplanev1.EtcdRestoreStartedCondition, controlplanev1.EtcdRestoreServersDeletedCondition,
		controlplanev1.EtcdRestoreFirstServerRestoredCondition, controlplanev1.EtcdRestoreServersJoinedCondition, controlplanev1.EtcdRestoreReadyCondition} {
		if !conditions.IsTrue(restore, c) {
			s.t.Errorf("restore condition %s: %+v", c, conditions.Get(restore, c))
		}
	}
	if restore.Status.StartTime == nil || restore.Status.CompletionTime == nil || restore.Status.FirstServer == "" {
		s.t.Errorf("a succeeded restore's status: %+v", restore.Status)
	}
	if got := simulator.Restores(s.key); got != restores+1 {
		s.t.Errorf("the simulator saw %d restores, want %d", got, restores+1)
	}

	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	s.waitServers(3, kcp.Spec.Version)
	if again := s.serverNames().Intersection(oldServers); again.Len() != 0 {
		s.t.Errorf("servers %v survived the restore", sets.List(again))
	}
	s.eventually("the markers as at the snapshot", func(ctx context.Context) (bool, string, error) {
		a, err := s.markerPresent(ctx, drMarkerA)
		if err != nil {
			return false, "", err
		}
		b, err := s.markerPresent(ctx, drMarkerB)
		return a && !b, fmt.Sprintf("marker A present %v, marker B present %v", a, b), err
	})
	s.eventually("the same agents Ready", func(ctx context.Context) (bool, string, error) {
		if got := s.agentUIDs(); !equalUIDs(got, agents) {
			return false, "", fmt.Errorf("agent Machines changed: before %v, after %v", agents, got)
		}
		machines, err := s.machines(ctx, client.MatchingLabels{stack.PoolLabel: "agents"})
		if err != nil {
			return false, "", err
		}
		nodes := s.nodes()
		for _, m := range machines {
			if !nodeReady(nodes[m.Status.NodeRef.Name]) {
				return false, "Node of " + m.Name + " not Ready", nil
			}
		}
		return true, "", nil
	})
	s.waitAgents(2)
	// The old servers' Nodes came back with the snapshot; the restore deleted them.
	if got := sets.New(restore.Status.OldServerNodes...); !got.Equal(oldNodes) {
		s.t.Errorf("the restore recorded the old servers' Nodes %v, want %v", sets.List(got), sets.List(oldNodes))
	}
	if left := sets.KeySet(s.nodes()).Intersection(oldNodes); left.Len() != 0 {
		s.t.Errorf("the old servers' Nodes %v are still in the workload cluster", sets.List(left))
	}
	if got := s.clusterSecrets(); !equalSecrets(got, secrets) {
		s.t.Errorf("the cluster's Secrets changed during the restore: before %v, after %v", secretUIDs(secrets), secretUIDs(got))
	}
	s.checkKubeconfigWorks()
	if simulator.QuorumLost(s.key) {
		s.t.Error("the restored etcd lost quorum")
	}
}

// failedRestoreAndTheWayOut makes the held restore's first server fail: the
// snapshot's object is taken out of the simulated S3 before the first server boots,
// so k3s cannot download it. The restore ends Failed at its first server's
// deadline, naming the way out, with the control plane held (no server joined to the
// failed one) and its safety snapshot in the bucket. The object put back, a new
// restore of the snapshot the failed one proved takes over, without a running
// cluster to prove it on; it is returned for the rest of the checks.
func (s *scenario) failedRestoreAndTheWayOut(failing *controlplanev1.KThreesEtcdRestore) *controlplanev1.KThreesEtcdRestore {
	s.t.Helper()
	start := time.Now()
	key := s.ns + "/" + failing.Status.SnapshotName
	if failing.Status.SnapshotName == "" || failing.Status.SafetySnapshot == "" {
		s.t.Fatalf("a held restore without its snapshot or safety snapshot: %+v", failing.Status)
	}
	putBack := sim.TakeS3Object(awsS3Endpoint, e2eS3Bucket, key)
	s.eventually("the restore to fail at its first server's deadline", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(failing), failing); err != nil {
			return false, "", err
		}
		st := failing.Status
		if st.Phase == controlplanev1.EtcdRestoreSucceeded {
			return false, "", fmt.Errorf("restored a snapshot taken out of S3: %s", st.Message)
		}
		return st.Phase == controlplanev1.EtcdRestoreFailed, fmt.Sprintf("phase %s: %s", st.Phase, st.Message), nil
	})
	safety := failing.Status.SafetySnapshot
	if msg := failing.Status.Message; !strings.Contains(msg, "Way out") || !strings.Contains(msg, safety) {
		s.t.Errorf("the failed restore's message %q, want the way out naming %s", msg, safety)
	}
	if got := s.serverNames(); !got.Equal(sets.New(failing.Status.FirstServer)) {
		s.t.Errorf("servers %v after the failure, want the failed first server %s alone", sets.List(got), failing.Status.FirstServer)
	}
	if !sets.New(sim.S3Objects(awsS3Endpoint, e2eS3Bucket, s.ns+"/")...).Has(s.ns + "/" + safety) {
		s.t.Errorf("the safety snapshot %s is not in the bucket", safety)
	}
	putBack()
	way := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "way-out"},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotName: failing.Status.SnapshotName},
	}
	s.must("creating the way-out KThreesEtcdRestore", env.Client.Create(s.ctx, way))
	s.t.Logf("the failed restore ended Failed in %s after its snapshot was taken out of S3", time.Since(start).Round(time.Second))
	return way
}

// refusedRestoreOfAMissingSnapshot restores the running cluster to a snapshot that
// is not in its S3 folder: k3s's list, asked through the supervisor with the control
// plane's S3 block, does not show it, and the restore is Refused with nothing
// deleted.
func (s *scenario) refusedRestoreOfAMissingSnapshot() {
	s.t.Helper()
	start := time.Now()
	servers := s.serverNames()
	missing := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "restore-missing"},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: s.key.Name, SnapshotName: "etcd-snapshot-missing-1700000000"},
	}
	s.must("creating a KThreesEtcdRestore of a missing snapshot", env.Client.Create(s.ctx, missing))
	s.eventually("the restore of a missing snapshot refused", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(missing), missing); err != nil {
			return false, "", err
		}
		st := missing.Status
		return st.Phase == controlplanev1.EtcdRestoreRefused, fmt.Sprintf("phase %s: %s", st.Phase, st.Message), nil
	})
	if !strings.Contains(missing.Status.Message, "k3s lists no object at s3://") {
		s.t.Errorf("the refusal says %q, want what k3s's list showed", missing.Status.Message)
	}
	machines, err := s.machines(s.ctx, client.MatchingLabels{clusterv1.MachineControlPlaneLabel: ""})
	s.must("listing the servers", err)
	for _, m := range machines {
		if !m.DeletionTimestamp.IsZero() {
			s.t.Errorf("server %s deleted by a refused restore", m.Name)
		}
	}
	if got := s.serverNames(); !got.Equal(servers) {
		s.t.Errorf("servers %v after a refused restore, want %v", sets.List(got), sets.List(servers))
	}
	s.t.Logf("the restore of a missing snapshot was refused in %s", time.Since(start).Round(time.Second))
}

// clusterSecrets reads the Secrets a restore must leave alone: the token, the CAs
// and the kubeconfig.
func (s *scenario) clusterSecrets() map[string]corev1.Secret {
	s.t.Helper()
	out := map[string]corev1.Secret{}
	for _, name := range []string{
		s.key.Name + "-token", secret.Name(s.key.Name, secret.ClusterCA), secret.Name(s.key.Name, k3s.ClientCA),
		secret.Name(s.key.Name, secret.EtcdCA), secret.Name(s.key.Name, secret.Kubeconfig),
	} {
		sec := corev1.Secret{}
		s.must("reading Secret "+name, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, &sec))
		out[name] = sec
	}
	return out
}

func equalSecrets(a, b map[string]corev1.Secret) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.UID != y.UID || len(x.Data) != len(y.Data) {
			return false
		}
		for k, v := range x.Data {
			if string(y.Data[k]) != string(v) {
				return false
			}
		}
	}
	return true
}

func secretUIDs(m map[string]corev1.Secret) map[string]types.UID {
	out := map[string]types.UID{}
	for name, sec := range m {
		out[name] = sec.UID
	}
	return out
}

// checkKubeconfigWorks reads the workload cluster with a client made afresh from the
// kubeconfig Secret, as a user who downloads it after the restore.
func (s *scenario) checkKubeconfigWorks() {
	s.t.Helper()
	data, err := kubeconfig.FromSecret(s.ctx, env.Client, s.key)
	s.must("reading the kubeconfig Secret", err)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	s.must("parsing the kubeconfig", err)
	c, err := client.New(cfg, client.Options{})
	s.must("a client from the kubeconfig", err)
	s.must("listing Nodes with the kubeconfig after the restore", c.List(s.ctx, &corev1.NodeList{}))
}

// markerPresent says whether a marker ConfigMap is in the workload cluster.
func (s *scenario) markerPresent(ctx context.Context, name string) (bool, error) {
	err := s.workloadClient().Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// nodeListing is the workload cluster's Nodes as its API answers (no cache), with the
// list's resourceVersion.
type nodeListing struct {
	names []string
	rv    string
	err   error
}

func (n nodeListing) String() string {
	if n.err != nil {
		return fmt.Sprintf("workload API (kubeconfig): %v", n.err)
	}
	return fmt.Sprintf("workload Nodes %v at resourceVersion %s", n.names, n.rv)
}

func (s *scenario) liveNodes(ctx context.Context) nodeListing {
	list := &corev1.NodeList{}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.workloadClient().List(lctx, list); err != nil {
		return nodeListing{err: err}
	}
	out := nodeListing{rv: list.ResourceVersion}
	for _, n := range list.Items {
		out.names = append(out.names, n.Name)
	}
	return out
}

// remoteConnection is Cluster API's RemoteConnectionProbe condition on the Cluster.
func (s *scenario) remoteConnection(ctx context.Context) string {
	cluster := &clusterv1.Cluster{}
	if err := env.Client.Get(ctx, s.key, cluster); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ClusterRemoteConnectionProbeCondition)
	if c == nil {
		return "no RemoteConnectionProbe"
	}
	return fmt.Sprintf("RemoteConnectionProbe %s since %s", c.Status, c.LastTransitionTime.Format(time.TimeOnly))
}
