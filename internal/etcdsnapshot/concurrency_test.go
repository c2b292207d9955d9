package etcdsnapshot

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// eventually is how long a test waits for what a manager does in seconds: generous,
// and far less than a request's own timeout (supervisor.DefaultTimeout, minutes).
const eventually = 90 * time.Second

// A cluster whose supervisor takes the request and never answers holds no worker:
// with one worker, another cluster's snapshot succeeds while the first is still
// Running, and the first is still decided by its own request.
func TestASilentSupervisorDelaysNoOtherClustersSnapshot(t *testing.T) {
	silent := newFixture(t, nil)
	silent.k3s.mode = "silent"
	other := newFixture(t, nil)
	env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
			Workload: func(context.Context, client.ObjectKey) (client.Reader, error) { return env.Client, nil }}
		return r.SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 1})
	})

	stuck := silent.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	waitPhase(t, stuck, func(s *controlplanev1.KThreesEtcdSnapshot) bool {
		return s.Status.Phase == controlplanev1.EtcdSnapshotRunning && silent.k3s.postCount() == 1
	})
	got := waitPhase(t, other.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{}), finished)
	if got.Status.Phase != controlplanev1.EtcdSnapshotSucceeded {
		t.Fatalf("the other cluster's snapshot: phase %s, error %q", got.Status.Phase, got.Status.Error)
	}
	now := &controlplanev1.KThreesEtcdSnapshot{}
	must(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(stuck), now))
	if now.Status.Phase != controlplanev1.EtcdSnapshotRunning || silent.k3s.postCount() != 1 {
		t.Fatalf("the silent cluster's snapshot: phase %s after %d requests, want Running after 1", now.Status.Phase, silent.k3s.postCount())
	}
}

// A supervisor whose address drops the connection attempt: the snapshot goes back to
// Pending with the connect's timeout, retried, instead of holding its request for minutes.
func TestABlackholedSupervisorFailsTheConnect(t *testing.T) {
	f := newFixture(t, nil)
	host, port := blackhole(t)
	f.cluster.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: host, Port: port}
	must(t, env.Client.Update(context.Background(), f.cluster))
	s := f.snapshot(t, controlplanev1.KThreesEtcdSnapshotSpec{})
	done := make(chan *controlplanev1.KThreesEtcdSnapshot, 1)
	go func() { done <- run(t, f.reconciler(), s, 1) }()
	var got *controlplanev1.KThreesEtcdSnapshot
	select {
	case got = <-done:
	case <-time.After(eventually):
		t.Fatalf("the snapshot's pass still connecting after %s", eventually)
	}
	if st, reason, msg := readyReason(got); got.Status.Phase != controlplanev1.EtcdSnapshotPending || reason != controlplanev1.EtcdSnapshotPendingReason ||
		!strings.Contains(msg, "reaching the k3s supervisor") || !strings.Contains(msg, "i/o timeout") {
		t.Fatalf("phase %s Ready %s %s %q, want Pending on the connect's timeout", got.Status.Phase, st, reason, msg)
	}
	if f.k3s.postCount() != 0 {
		t.Fatal("k3s was asked")
	}
}

// waitPhase waits until done holds for the snapshot, as a manager moves it.
func waitPhase(t *testing.T, s *controlplanev1.KThreesEtcdSnapshot, done func(*controlplanev1.KThreesEtcdSnapshot) bool) *controlplanev1.KThreesEtcdSnapshot {
	t.Helper()
	got := &controlplanev1.KThreesEtcdSnapshot{}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		return done(got), nil
	})
	if err != nil {
		t.Fatalf("snapshot %s/%s: %v; status %+v", s.Namespace, s.Name, err, got.Status)
	}
	return got
}

// blackhole is an address whose TCP handshake never completes: a socket listening
// with a backlog of 0 whose one queued connection is taken, so that the kernel drops
// every further SYN, as a firewall that drops packets does.
func blackhole(t *testing.T) (string, int32) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	filler, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		_ = c.Close()
		t.Skip("this kernel completed a connection beyond the listen backlog: no blackhole to test against")
	}
	return "127.0.0.1", int32(port)
}
