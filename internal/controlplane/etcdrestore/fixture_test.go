package etcdrestore

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

const (
	version  = "v1.36.3+k3s1"
	snapName = "etcd-snapshot-c1-cp-a-1700000000"
	// machineFinalizer plays CAPI's Machine finalizer: the test decides when a
	// deleted server is gone.
	machineFinalizer = "test.capk3s.io/machine"
	etcdHook         = clusterv1.PreTerminateDeleteHookAnnotationPrefix + "/kthrees-etcd"
)

// runningCluster is a Cluster whose control plane of three Ready servers on embedded
// etcd with snapshots to S3 has long been initialized, with its CAs and join token,
// as the control plane and CAPI leave it; nobody serves its endpoint. The control
// plane is owned by the Cluster last, so that its controller starts from the servers.
func runningCluster(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	tmpl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{}}}}}
	tmpl.SetGroupVersionKind(builder.InfrastructureGroupVersion.WithKind(builder.GenericInfrastructureMachineTemplateKind))
	tmpl.SetNamespace(ns)
	tmpl.SetName("t")
	must(t, env.Client.Create(ctx, tmpl))

	port, err := envtest.FreePort()
	must(t, err)
	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)},
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: "c1-cp",
			},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: "c1",
			},
		},
	}
	must(t, env.Client.Create(ctx, cluster))
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	must(t, env.Client.Status().Update(ctx, cluster))

	kcp := &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1-cp", Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"}},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Replicas: ptr.To[int32](3),
			Version:  version,
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
				Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "t",
					},
				},
			},
			KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: &bootstrapv1.Etcd{
				Snapshots: &bootstrapv1.EtcdSnapshots{Directory: snapshotDir, S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "backups", Folder: "c1"}},
			}}},
		},
	}
	must(t, env.Client.Create(ctx, kcp))
	// The secrets first, as when the cluster was made: an initialized control plane
	// never makes a new token.
	must(t, k3s.ClusterCertificates().LookupOrGenerate(ctx, env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}))
	if res, err := token.Reconcile(ctx, env.Client, cluster, kcp); err != nil || !res.Available() {
		t.Fatalf("creating the token: %+v, %v", res, err)
	}
	kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	must(t, env.Client.Status().Update(ctx, kcp))
	cluster.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	must(t, env.Client.Status().Update(ctx, cluster))

	for _, name := range []string{"c1-cp-a", "c1-cp-b", "c1-cp-c"} {
		newServer(t, kcp, name)
	}
	before := kcp.DeepCopy()
	must(t, controllerutil.SetOwnerReference(cluster, kcp, env.Scheme))
	must(t, env.Client.Patch(ctx, kcp, client.MergeFrom(before)))
}

// provenCluster is runningCluster with its k3s supervisor answering on the
// endpoint and snapName in the control plane's S3 folder, taken by this cluster.
func provenCluster(t *testing.T, ns string) *fakeSupervisor {
	t.Helper()
	runningCluster(t, ns)
	f := startSupervisor(t, ns)
	f.put("c1/"+snapName, k3sTokenHash(f.password))
	return f
}

// newServer creates a Ready server Machine of kcp with its Node, as the control plane
// and CAPI leave one.
func newServer(t *testing.T, kcp *controlplanev1.KThreesControlPlane, name string) {
	t.Helper()
	ctx := context.Background()
	m := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: kcp.Namespace, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1", clusterv1.MachineControlPlaneLabel: "",
				clusterv1.MachineControlPlaneNameLabel: kcp.Name},
			Annotations: map[string]string{etcdHook: ""},
			Finalizers:  []string{machineFinalizer},
		},
		Spec: clusterv1.MachineSpec{
			ClusterName: "c1",
			Version:     version,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
			}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
			},
		},
	}
	must(t, controllerutil.SetControllerReference(kcp, m, env.Scheme))
	must(t, env.Client.Create(ctx, m))
	markReady(t, m)
}

// markReady gives a Machine its Node and a Ready condition, as CAPI does once the
// Node is up.
func markReady(t *testing.T, m *clusterv1.Machine) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(m), m))
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: m.Name}
	m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: clusterv1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: clusterv1.MachineReadyReason, LastTransitionTime: metav1.Now()})
	must(t, env.Client.Status().Update(ctx, m))
}

// servers lists the namespace's Machines by name.
func servers(t *testing.T, ns string) map[string]*clusterv1.Machine {
	t.Helper()
	list := &clusterv1.MachineList{}
	must(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string]*clusterv1.Machine{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// releaseDeleted removes the test's finalizer from every Machine being deleted, as
// CAPI does once a deleted Machine's infrastructure is gone.
func releaseDeleted(t *testing.T, ns string) {
	t.Helper()
	for _, m := range servers(t, ns) {
		if m.DeletionTimestamp.IsZero() {
			continue
		}
		before := m.DeepCopy()
		controllerutil.RemoveFinalizer(m, machineFinalizer)
		must(t, client.IgnoreNotFound(env.Client.Patch(context.Background(), m, client.MergeFrom(before))))
	}
}

func newRestore(t *testing.T, ns, name string) *controlplanev1.KThreesEtcdRestore {
	t.Helper()
	return newRestoreOf(t, ns, name, snapName)
}

// newRestoreOf creates a restore of c1 to the snapshot snap.
func newRestoreOf(t *testing.T, ns, name, snap string) *controlplanev1.KThreesEtcdRestore {
	t.Helper()
	r := &controlplanev1.KThreesEtcdRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       controlplanev1.KThreesEtcdRestoreSpec{ClusterName: "c1", SnapshotName: snap},
	}
	must(t, env.Client.Create(context.Background(), r))
	return r
}

// waitFor waits until cond holds, failing the test with what describe says otherwise.
func waitFor(t *testing.T, what string, cond func(ctx context.Context) (bool, error), describe func() string) {
	t.Helper()
	if err := envtest.Eventually(context.Background(), 30*time.Second, cond); err != nil {
		t.Fatalf("%s: %v; %s", what, err, describe())
	}
}

// waitForPhase waits until the restore reaches phase and returns it.
func waitForPhase(t *testing.T, r *controlplanev1.KThreesEtcdRestore, phase controlplanev1.EtcdRestorePhase) *controlplanev1.KThreesEtcdRestore {
	t.Helper()
	got := &controlplanev1.KThreesEtcdRestore{}
	waitFor(t, "restore "+r.Name+" reaching "+string(phase), func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			return false, err
		}
		return got.Status.Phase == phase, nil
	}, func() string { return string(got.Status.Phase) + ": " + got.Status.Message })
	return got
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// snapshotDir is the control plane's snapshots.directory in these tests: every
// snapshot request must carry it, k3s takes the folder from the request alone.
const snapshotDir = "/var/lib/k3s-snapshots"
