package etcdsnapshot

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s/supervisor"
	"github.com/capk3s/capk3s/internal/token"
)

const testPassword = "0123456789abcdef"

// fixture is a Cluster whose endpoint is a fake k3s, with its CA and token Secrets
// and an initialized KThreesControlPlane on embedded etcd.
type fixture struct {
	ns      string
	cluster *clusterv1.Cluster
	kcp     *controlplanev1.KThreesControlPlane
	k3s     *fakeK3s
}

func newFixture(t *testing.T, edit func(*controlplanev1.KThreesControlPlane)) *fixture {
	t.Helper()
	installETCDSnapshotFiles(t)
	ctx := context.Background()
	f := &fixture{ns: env.NewNamespace(t), k3s: startFakeK3s(t, testPassword)}
	host, port := f.k3s.hostPort()
	f.cluster = &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: host, Port: port},
			ControlPlaneRef:      clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane", Name: "c1-cp"},
			InfrastructureRef:    clusterv1.ContractVersionedObjectReference{APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureClusterKind, Name: "c1"},
		},
	}
	must(t, env.Client.Create(ctx, f.cluster))
	f.kcp = &controlplanev1.KThreesControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1-cp"},
		Spec: controlplanev1.KThreesControlPlaneSpec{
			Version: "v1.36.3+k3s1",
			MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineTemplateKind, Name: "t"},
			}},
		},
	}
	if edit != nil {
		edit(f.kcp)
	}
	must(t, env.Client.Create(ctx, f.kcp))
	f.kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	must(t, env.Client.Status().Update(ctx, f.kcp))
	must(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: secret.Name("c1", secret.ClusterCA)},
		Data:       map[string][]byte{secret.TLSCrtDataName: f.k3s.caPEM(), secret.TLSKeyDataName: []byte("unused")},
	}))
	must(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName("c1")},
		Data:       map[string][]byte{token.ServerKey: []byte(testPassword)},
	}))
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// reconciler is a fresh reconciler, as after a restart of the manager; the
// workload cluster is the same apiserver.
func (f *fixture) reconciler() *Reconciler {
	return &Reconciler{Client: env.Client, APIReader: env.Client,
		Workload: func(context.Context, client.ObjectKey) (client.Reader, error) { return env.Client, nil }}
}

func (f *fixture) snapshot(t *testing.T, spec controlplanev1.KThreesEtcdSnapshotSpec) *controlplanev1.KThreesEtcdSnapshot {
	t.Helper()
	if spec.ClusterName == "" {
		spec.ClusterName = "c1"
	}
	s := &controlplanev1.KThreesEtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "snap"}, Spec: spec}
	must(t, env.Client.Create(context.Background(), s))
	return s
}

// run passes r until the snapshot is finished or n passes are done. A pass that
// sends the request is followed, once the answer came, by the pass its answer wakes,
// as in a manager.
func run(t *testing.T, r *Reconciler, s *controlplanev1.KThreesEtcdSnapshot, n int) *controlplanev1.KThreesEtcdSnapshot {
	t.Helper()
	got := &controlplanev1.KThreesEtcdSnapshot{}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s)}
	for range n {
		_, _ = r.Reconcile(context.Background(), req)
		must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), got))
		if f := r.inflight.get(got); f != nil {
			select {
			case <-f.done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the request is still out after 2 minutes")
			}
			_, _ = r.Reconcile(context.Background(), req)
			must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), got))
		}
		if finished(got) {
			break
		}
	}
	return got
}

func readyReason(s *controlplanev1.KThreesEtcdSnapshot) (metav1.ConditionStatus, string, string) {
	for _, c := range s.Status.Conditions {
		if c.Type == controlplanev1.EtcdSnapshotReadyCondition {
			return c.Status, c.Reason, c.Message
		}
	}
	return "", "", ""
}

func TestSnapshotIsTakenThroughTheSupervisor(t *testing.T) {
	f := newFixture(t, nil)
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	got := run(t, f.reconciler(), s, 5)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded {
		t.Fatalf("phase %s, status %+v", got.Status.Phase, got.Status)
	}
	want := "on-demand-" + string(got.UID)[:8] + "-server-0-"
	res := got.Status.Snapshot
	if res == nil || !strings.HasPrefix(res.Name, want) || res.NodeName != "server-0" || !strings.HasPrefix(res.Location, "file://") ||
		res.S3Location != "" || res.Size == nil || res.CreationTime == nil || len(res.ETCDSnapshotFiles) != 1 || res.ETCDSnapshotFiles[0] != res.Name+"-local" {
		t.Fatalf("result %+v, want snapshot %s... on server-0 linked to its record", res, want)
	}
	if st, reason, _ := readyReason(got); st != metav1.ConditionTrue || reason != controlplanev1.EtcdSnapshotSucceededReason {
		t.Fatalf("Ready %s %s", st, reason)
	}
	if got.Status.RequestedName != "on-demand-"+string(got.UID)[:8] || got.Status.StartTime == nil || got.Status.CompletionTime == nil {
		t.Fatalf("status %+v", got.Status)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != f.cluster.UID || got.Labels[clusterv1.ClusterNameLabel] != "c1" {
		t.Fatalf("owners %v labels %v, want the Cluster", got.OwnerReferences, got.Labels)
	}
	if _, ok := f.k3s.request()["s3"]; ok || f.k3s.request()["operation"] != "save" {
		t.Fatalf("request %v", f.k3s.request())
	}
	// A finished snapshot is never taken again, by this manager or the next.
	run(t, f.reconciler(), s, 2)
	if n := f.k3s.postCount(); n != 1 {
		t.Fatalf("%d requests to k3s, want 1", n)
	}
}

func TestSnapshotUploadsToTheControlPlanesS3(t *testing.T) {
	f := newFixture(t, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{S3: &bootstrapv1.EtcdSnapshotsS3{
			Bucket: "backups", Folder: "c1", Endpoint: "s3.example.com",
			CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3-creds"},
			EndpointCASecret:  &bootstrapv1.SecretKeyReference{Name: "s3-ca", Key: "ca.crt"},
		}}}
	})
	must(t, env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "s3-creds"},
		Data:       map[string][]byte{bootstrapv1.EtcdS3AccessKeyIDKey: []byte("AKID"), bootstrapv1.EtcdS3SecretAccessKeyKey: []byte("SECRET")},
	}))
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{NamePrefix: "pre-upgrade"})
	got := run(t, f.reconciler(), s, 5)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded {
		t.Fatalf("phase %s, status %+v", got.Status.Phase, got.Status)
	}
	res := got.Status.Snapshot
	if !strings.HasPrefix(res.Name, "pre-upgrade-") || res.S3Location != "s3://backups/"+res.Name || len(res.ETCDSnapshotFiles) != 2 {
		t.Fatalf("result %+v, want the S3 copy too", res)
	}
	s3, _ := f.k3s.request()["s3"].(map[string]any)
	if s3["bucket"] != "backups" || s3["folder"] != "c1" || s3["accessKey"] != "AKID" || s3["secretKey"] != "SECRET" || s3["endpointCA"] != cloudinit.EtcdS3CAPath {
		t.Fatalf("s3 request %v", s3)
	}
	// k3s takes the request's s3 block as it is, timeout too: a zero timeout fails the
	// bucket check at once, so the request carries k3s's default etcd-s3-timeout.
	if s3["timeout"] != "5m0s" {
		t.Fatalf("s3 request timeout %v, want k3s's default 5m0s", s3["timeout"])
	}
	if strings.Contains(got.Status.Error+readyMessage(got), "SECRET") {
		t.Fatal("the S3 secret key shows in the status")
	}
}

func readyMessage(s *controlplanev1.KThreesEtcdSnapshot) string {
	_, _, m := readyReason(s)
	return m
}

func TestSnapshotRefusesWithoutARequest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*controlplanev1.KThreesControlPlane)
		spec   controlplanev1.KThreesEtcdSnapshotSpec
		reason string
	}{
		{name: "external datastore", reason: controlplanev1.EtcdSnapshotNotEmbeddedEtcdReason, edit: func(kcp *controlplanev1.KThreesControlPlane) {
			kcp.Spec.KThreesConfigSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "db", Key: "endpoint"}}
		}},
		{name: "S3 without S3 settings", reason: controlplanev1.EtcdSnapshotS3NotConfiguredReason,
			spec: controlplanev1.KThreesEtcdSnapshotSpec{Location: controlplanev1.EtcdSnapshotLocationS3}},
		{name: "no such cluster", reason: controlplanev1.EtcdSnapshotClusterNotFoundReason,
			spec: controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.edit)
			got := run(t, f.reconciler(), f.snapshot(t, tc.spec), 3)
			if st, reason, msg := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotFailed || st != metav1.ConditionFalse || reason != tc.reason || got.Status.Error != msg {
				t.Fatalf("phase %s Ready %s %s %q, error %q", got.Status.Phase, st, reason, msg, got.Status.Error)
			}
			if f.k3s.postCount() != 0 {
				t.Fatal("k3s was asked")
			}
		})
	}
}

func TestSnapshotRefusedBeforeInitialization(t *testing.T) {
	f := newFixture(t, nil)
	f.kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(false)
	must(t, env.Client.Status().Update(context.Background(), f.kcp))
	got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 3)
	if _, reason, _ := readyReason(got); reason != controlplanev1.EtcdSnapshotNotInitializedReason || f.k3s.postCount() != 0 {
		t.Fatalf("Ready reason %s, %d requests", reason, f.k3s.postCount())
	}
}

func TestSnapshotReportsK3sRefusals(t *testing.T) {
	t.Run("500 with k3s's error ID", func(t *testing.T) {
		f := newFixture(t, nil)
		f.k3s.mode = "500"
		got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 3)
		if _, reason, _ := readyReason(got); reason != controlplanev1.EtcdSnapshotRejectedReason || !strings.Contains(got.Status.Error, "error ID 04242") {
			t.Fatalf("reason %s error %q", reason, got.Status.Error)
		}
		if f.k3s.postCount() != 1 {
			t.Fatalf("%d requests, want 1 (a failed snapshot is not retried by its object)", f.k3s.postCount())
		}
	})
	t.Run("a token k3s does not know", func(t *testing.T) {
		f := newFixture(t, nil)
		f.k3s.password = "another"
		got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 3)
		if _, reason, _ := readyReason(got); reason != controlplanev1.EtcdSnapshotRejectedReason || !strings.Contains(got.Status.Error, "refused the join token") {
			t.Fatalf("reason %s error %q", reason, got.Status.Error)
		}
		if strings.Contains(got.Status.Error, testPassword) {
			t.Fatal("the token shows in the status")
		}
	})
}

// A manager that stops after sending the request and before writing the answer:
// the next one finds the snapshot in k3s's records and never asks again.
func TestSnapshotRequestedBeforeARestartIsFoundNotRetaken(t *testing.T) {
	f := newFixture(t, nil)
	f.k3s.mode = "hang"
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	first := f.reconciler()
	first.Supervisor = shortTimeout(first)
	got := run(t, first, s, 1)
	if got.Status.Phase != controlplanev1.EtcdSnapshotRunning || got.Status.RequestedName == "" || got.Status.Snapshot != nil {
		t.Fatalf("after the lost answer: %+v", got.Status)
	}
	got = run(t, f.reconciler(), s, 3)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded || got.Status.Snapshot == nil || !strings.HasPrefix(got.Status.Snapshot.Name, got.Status.RequestedName+"-") {
		t.Fatalf("after the restart: %+v", got.Status)
	}
	if n := f.k3s.postCount(); n != 1 {
		t.Fatalf("%d requests to k3s, want 1", n)
	}
}

func TestSnapshotWithNoRecordAndNoAnswerFails(t *testing.T) {
	f := newFixture(t, nil)
	f.k3s.mode = "silent"
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	r := f.reconciler()
	r.Supervisor = shortTimeout(r)
	r.ResultTimeout = time.Second
	got := run(t, r, s, 1)
	time.Sleep(1100 * time.Millisecond)
	got = run(t, r, got, 2)
	if _, reason, _ := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotFailed || reason != controlplanev1.EtcdSnapshotLostReason {
		t.Fatalf("phase %s reason %s", got.Status.Phase, reason)
	}
	if n := f.k3s.postCount(); n != 1 {
		t.Fatalf("%d requests to k3s, want 1", n)
	}
}

func TestSnapshotRetriesAnUnreachableSupervisorThenFails(t *testing.T) {
	f := newFixture(t, nil)
	f.k3s.srv.Close() // nothing listens at the endpoint
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	r := f.reconciler()
	got := run(t, r, s, 2)
	if st, reason, msg := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotPending || got.Status.RequestedName != "" ||
		st != metav1.ConditionFalse || reason != controlplanev1.EtcdSnapshotPendingReason || !strings.Contains(msg, "reaching the k3s supervisor") {
		t.Fatalf("phase %s Ready %s %s %q requested %q", got.Status.Phase, st, reason, msg, got.Status.RequestedName)
	}
	r.UnreachableTimeout = time.Nanosecond
	got = run(t, r, s, 1)
	if _, reason, _ := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotFailed || reason != controlplanev1.EtcdSnapshotUnreachableReason {
		t.Fatalf("phase %s reason %s", got.Status.Phase, reason)
	}
}

// shortTimeout is the real client with a request timeout of a second, so that a
// lost answer is seen quickly.
func shortTimeout(_ *Reconciler) func(context.Context, client.Reader, *clusterv1.Cluster) (*supervisor.Client, error) {
	return func(ctx context.Context, r client.Reader, c *clusterv1.Cluster) (*supervisor.Client, error) {
		sc, err := newClientFor(ctx, r, c)
		if err == nil {
			sc.Timeout = time.Second
		}
		return sc, err
	}
}

// A pass that read the object before another pass marked it Running (a cache
// behind the write) must not send a second request: the Running write is
// optimistically locked.
func TestSnapshotStaleCopySendsNoSecondRequest(t *testing.T) {
	f := newFixture(t, nil)
	f.k3s.mode = "hang"
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	stale := &controlplanev1.KThreesEtcdSnapshot{}
	must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), stale))
	r := f.reconciler()
	r.Supervisor = shortTimeout(r)
	run(t, r, s, 1)
	if _, err := r.request(context.Background(), stale, f.cluster, f.kcp); err == nil {
		t.Fatal("a stale copy was marked Running")
	}
	if n := f.k3s.postCount(); n != 1 {
		t.Fatalf("%d requests to k3s, want 1", n)
	}
}

func TestSnapshotWhoseUploadFailsFailsWithTheLocalCopy(t *testing.T) {
	f := newFixture(t, func(kcp *controlplanev1.KThreesControlPlane) {
		kcp.Spec.KThreesConfigSpec.ServerConfig.Etcd = &bootstrapv1.Etcd{Snapshots: &bootstrapv1.EtcdSnapshots{S3: &bootstrapv1.EtcdSnapshotsS3{Bucket: "gone"}}}
	})
	f.k3s.mode = "s3fail"
	got := run(t, f.reconciler(), f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), 5)
	if _, reason, _ := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotFailed || reason != controlplanev1.EtcdSnapshotK3sFailedReason ||
		!strings.Contains(got.Status.Error, "The specified bucket does not exist") {
		t.Fatalf("phase %s reason %s error %q", got.Status.Phase, reason, got.Status.Error)
	}
	if res := got.Status.Snapshot; res == nil || res.NodeName != "server-0" || !strings.HasPrefix(res.Location, "file://") || len(res.ETCDSnapshotFiles) != 2 {
		t.Fatalf("result %+v, want the local copy and both records", res)
	}
}
