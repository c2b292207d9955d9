package e2e

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/sim"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
	"github.com/capk3s/capk3s/test/stack"
)

// The disaster-recovery scenario runs on TestInPlaceUpgrade's cluster (3 servers, 2
// agents, embedded etcd with S3): an on-demand snapshot between two markers, the
// upgrade's own snapshot, and a restore of the running cluster to the first
// snapshot once the upgrade is done.

// The markers are ConfigMaps in the workload cluster: A is written before the
// on-demand snapshot, B after it.
const (
	drMarkerA = "dr-marker-before-snapshot"
	drMarkerB = "dr-marker-after-snapshot"
)

// withEtcdSnapshotsToS3 gives the scenario's servers S3 for their etcd snapshots and
// no schedule (the simulator then takes snapshots only on demand) and no restore: a
// running cluster's restore is the KThreesEtcdRestore's. The bucket is on AWS with
// k3s's defaults (no endpoint, no region), which k3s does not fill in for a
// snapshot request: the on-demand and before-rollout snapshots must send them.
func (s *scenario) withEtcdSnapshotsToS3() {
	s.t.Helper()
	s3 := s.etcdS3()
	s3.Endpoint = ""
	s.objs.ControlPlane.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{S3: s3},
	}
}

// awsS3Endpoint is k3s's default etcd-s3-endpoint, where withEtcdSnapshotsToS3's
// snapshots land in the simulated S3.
const awsS3Endpoint = "s3.amazonaws.com"

// writeMarker creates a ConfigMap in the workload cluster.
func (s *scenario) writeMarker(name string) {
	s.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name}, Data: map[string]string{"written": "e2e"}}
	s.must("writing marker "+name, s.workloadClient().Create(s.ctx, cm))
}

// snapshotOnDemand writes marker A, takes an on-demand snapshot through a
// KThreesEtcdSnapshot and checks its result against S3 and k3s's records, then
// writes marker B. It returns the KThreesEtcdSnapshot's name.
func (s *scenario) snapshotOnDemand() string {
	s.t.Helper()
	s.writeMarker(drMarkerA)
	snap := &controlplanev1.KThreesEtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "before-upgrade"},
		Spec:       controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: s.key.Name},
	}
	s.must("creating the KThreesEtcdSnapshot", env.Client.Create(s.ctx, snap))
	s.eventually("the on-demand snapshot to succeed", func(ctx context.Context) (bool, string, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil {
			return false, "", err
		}
		if snap.Status.Phase == controlplanev1.EtcdSnapshotFailed {
			return false, "", fmt.Errorf("snapshot failed: %s", snap.Status.Error)
		}
		return snap.Status.Phase == controlplanev1.EtcdSnapshotSucceeded, fmt.Sprintf("phase %q, conditions %+v", snap.Status.Phase, snap.Status.Conditions), nil
	})
	s.checkSnapshotResult(snap)
	s.writeMarker(drMarkerB)
	return snap.Name
}

// checkSnapshotResult checks a succeeded snapshot's result: a k3s name taken on one of
// the servers, in the scenario's S3 folder, with a size and a time, and k3s's
// ETCDSnapshotFile records of it.
func (s *scenario) checkSnapshotResult(snap *controlplanev1.KThreesEtcdSnapshot) {
	s.t.Helper()
	res := snap.Status.Snapshot
	if res == nil {
		s.t.Fatalf("snapshot %s succeeded without a result: %+v", snap.Name, snap.Status)
	}
	if !conditions.IsTrue(snap, controlplanev1.EtcdSnapshotReadyCondition) || snap.Status.CompletionTime == nil {
		s.t.Errorf("snapshot %s: Ready %+v, completionTime %v", snap.Name, conditions.Get(snap, controlplanev1.EtcdSnapshotReadyCondition), snap.Status.CompletionTime)
	}
	servers := s.nodeNamesOfServers()
	if !servers.Has(res.NodeName) || !strings.Contains(res.Name, "-"+res.NodeName+"-") || !strings.HasPrefix(res.Name, snap.Status.RequestedName) {
		s.t.Errorf("snapshot %s: name %q, node %q, requested %q; servers' Nodes %v", snap.Name, res.Name, res.NodeName, snap.Status.RequestedName, sets.List(servers))
	}
	if res.Size == nil || res.Size.Sign() <= 0 || res.CreationTime == nil {
		s.t.Errorf("snapshot %s: size %v, creationTime %v", snap.Name, res.Size, res.CreationTime)
	}
	key := s.ns + "/" + res.Name
	if want := "s3://" + e2eS3Bucket + "/" + key; res.S3Location != want {
		s.t.Errorf("snapshot %s: s3Location %q, want %q", snap.Name, res.S3Location, want)
	}
	if !sets.New(sim.S3Objects(awsS3Endpoint, e2eS3Bucket, s.ns+"/")...).Has(key) {
		s.t.Errorf("snapshot %s: %s is not in the bucket: %v", snap.Name, key, sim.S3Objects(awsS3Endpoint, e2eS3Bucket, s.ns+"/"))
	}
	// k3s records the copy on the node's disk and the one in S3.
	storage := sets.New[string]()
	for _, name := range res.ETCDSnapshotFiles {
		rec := &unstructured.Unstructured{}
		rec.SetGroupVersionKind(k3smodel.ETCDSnapshotFileKind)
		s.must("reading ETCDSnapshotFile "+name, s.workloadClient().Get(s.ctx, client.ObjectKey{Name: name}, rec))
		if got, _, _ := unstructured.NestedString(rec.Object, "spec", "snapshotName"); got != res.Name {
			s.t.Errorf("ETCDSnapshotFile %s records snapshot %q, want %q", name, got, res.Name)
		}
		storage.Insert(rec.GetLabels()[k3smodel.SnapshotStorageNodeLabel])
	}
	if !storage.Equal(sets.New(res.NodeName, "s3")) {
		s.t.Errorf("snapshot %s: records %v kept on %v, want on %s and s3", snap.Name, res.ETCDSnapshotFiles, sets.List(storage), res.NodeName)
	}
}

// nodeNamesOfServers are the Node names of the control plane's Machines.
func (s *scenario) nodeNamesOfServers() sets.Set[string] {
	s.t.Helper()
	machines, err := s.serverMachines(s.ctx)
	s.must("listing servers", err)
	names := sets.New[string]()
	for _, m := range machines {
		names.Insert(m.Status.NodeRef.Name)
	}
	return names
}

// upgradeServersAfterSnapshot changes the control plane's version and follows the
// rollout until its own snapshot (<kcp>-before-rollout-…) succeeded: no server
// Machine or Node may run version before that. It polls every 50 ms, and the
// rollout waits a reconcile after the snapshot before it changes a server, so a
// server changed first would be seen.
func (s *scenario) upgradeServersAfterSnapshot(version string) {
	s.t.Helper()
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Version = version })
	prefix := s.objs.ControlPlane.Name + "-before-rollout-"
	s.eventually("the rollout's own snapshot before any server changes", func(ctx context.Context) (bool, string, error) {
		list := &controlplanev1.KThreesEtcdSnapshotList{}
		if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
			return false, "", err
		}
		var phases []string
		for _, snap := range list.Items {
			if !strings.HasPrefix(snap.Name, prefix) {
				continue
			}
			phases = append(phases, snap.Name+": "+string(snap.Status.Phase))
			if snap.Status.Phase == controlplanev1.EtcdSnapshotSucceeded {
				s.checkSnapshotResult(&snap)
				return true, "", nil
			}
		}
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		for _, m := range machines {
			if m.Spec.Version == version {
				return false, "", fmt.Errorf("server %s moved to %s before the rollout's snapshot succeeded (%v)", m.Name, version, phases)
			}
		}
		for name, n := range s.nodes() {
			if n.Status.NodeInfo.KubeletVersion == version {
				return false, "", fmt.Errorf("Node %s runs %s before the rollout's snapshot succeeded (%v)", name, version, phases)
			}
		}
		return false, fmt.Sprintf("snapshots %v", phases), nil
	})
}

// agentUIDs maps the agents' Machines to their UIDs.
func (s *scenario) agentUIDs() map[string]types.UID {
	s.t.Helper()
	machines, err := s.machines(s.ctx, client.MatchingLabels{stack.PoolLabel: "agents"})
	s.must("listing agents", err)
	out := map[string]types.UID{}
	for _, m := range machines {
		out[m.Name] = m.UID
	}
	return out
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
