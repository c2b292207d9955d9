package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// A join token that a SealedSecret provides is used as it is: the control plane
// reports it with its own reason, naming the SealedSecret and never the value,
// and leaves the Secret untouched.
func TestControlPlaneReportsATokenManagedExternally(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	sealed := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: token.SecretName("c1"),
			Labels: map[string]string{clusterv1.ClusterNameLabel: "c1"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "bitnami.com/v1alpha1", Kind: "SealedSecret", Name: "k3s-token",
				UID: "5ea1ed00-0000-4000-8000-00000000c0de", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Data: map[string][]byte{token.ServerKey: []byte("sealed-server-pass")},
	}
	if err := env.Client.Create(ctx, sealed); err != nil {
		t.Fatal(err)
	}
	_, kcp := newClusterWithControlPlane(t, ns, false)

	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenManagedExternallyReason)
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	msg := conditions.Get(got, controlplanev1.TokenAvailableCondition).Message
	if !strings.Contains(msg, "SealedSecret k3s-token") || strings.Contains(msg, "sealed-server-pass") {
		t.Errorf("message %q should name the SealedSecret and never the token", msg)
	}
	after := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sealed), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != sealed.ResourceVersion {
		t.Errorf("the SealedSecret's token Secret was written: owners %+v", after.OwnerReferences)
	}
}

// A token Secret that another controller manages is not owned by the control plane,
// yet the value that controller writes later must wake it: the Secret watch maps a
// "<cluster>-token" Secret to its cluster's control plane.
func TestExternallyManagedTokenValueWakesTheControlPlane(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	external := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: token.SecretName("c1"),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "external-secrets.io/v1", Kind: "ExternalSecret", Name: "k3s-token",
				UID: "e7e7e7e7-0000-4000-8000-00000000c0de", Controller: ptr.To(true),
			}},
		},
	}
	if err := env.Client.Create(ctx, external); err != nil {
		t.Fatal(err)
	}
	_, kcp := newClusterWithControlPlane(t, ns, false)
	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionFalse, controlplanev1.TokenManagedExternallyReason)

	// Once the control plane is idle, nothing else changes: only the Secret can wake it.
	waitIdle(t, kcp)
	before := external.DeepCopy()
	external.Data = map[string][]byte{token.ServerKey: []byte("synced-server-pass")}
	if err := env.Client.Patch(ctx, external, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, kcp, controlplanev1.TokenAvailableCondition, metav1.ConditionTrue, controlplanev1.TokenManagedExternallyReason)
}

// waitIdle waits until the control plane's passes have settled: its resourceVersion
// stays the same over three looks a second apart (each pass that changes anything
// writes status, and the write wakes the next pass).
func waitIdle(t *testing.T, kcp *controlplanev1.KThreesControlPlane) {
	t.Helper()
	last, same := "", 0
	err := envtest.Eventually(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		time.Sleep(time.Second)
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
			return false, err
		}
		if got.ResourceVersion == last {
			same++
		} else {
			last, same = got.ResourceVersion, 0
		}
		return same >= 2, nil
	})
	if err != nil {
		t.Fatalf("the control plane never settled: %v", err)
	}
}

// Only Secrets named like a Cluster's join token map to that Cluster's control plane.
func TestTokenSecretToControlPlane(t *testing.T) {
	ns := env.NewNamespace(t)
	newClusterWithControlPlane(t, ns, false)
	r := &Reconciler{Client: env.Client}
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	if got := r.tokenSecretToControlPlane(context.Background(), secret("c1-token")); len(got) != 1 || got[0].Name != "c1-cp" || got[0].Namespace != ns {
		t.Errorf("c1-token maps to %v, want %s/c1-cp", got, ns)
	}
	for _, name := range []string{"c1-ca", "-token", "c2-token", "c1-token-old"} {
		if got := r.tokenSecretToControlPlane(context.Background(), secret(name)); len(got) != 0 {
			t.Errorf("%s maps to %v, want nothing", name, got)
		}
	}
}
