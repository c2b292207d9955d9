package controlplane

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
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
