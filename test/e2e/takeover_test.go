package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestTokenTakeover: a token Secret left by older software, controlled by a
// KThreesConfig and also owned by something else, is taken over by the control plane
// before the cluster starts with it. Deleting the old KThreesConfig then lets the
// garbage collector run, and the token survives, unchanged, with its foreign owner.
func TestTokenTakeover(t *testing.T) {
	s := newScenario(t, 1, 1)
	ctx := s.ctx

	legacy := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "legacy-server-config"}}
	s.must("creating the old KThreesConfig", env.Client.Create(ctx, legacy))
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "backup-tool"}}
	s.must("creating the foreign owner", env.Client.Create(ctx, foreign))
	// canary is owned by the old KThreesConfig alone: once the collector has removed
	// it, it has acted on that KThreesConfig's deletion.
	canary := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "canary",
		OwnerReferences: []metav1.OwnerReference{ownerRef(legacy, "KThreesConfig", bootstrapv1.GroupVersion.String(), false)}}}
	s.must("creating the canary", env.Client.Create(ctx, canary))

	const passphrase = "0123456789abcdef0123456789abcdef"
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.key.Name + "-token",
			Labels: map[string]string{clusterv1.ClusterNameLabel: s.key.Name},
			OwnerReferences: []metav1.OwnerReference{
				ownerRef(legacy, "KThreesConfig", bootstrapv1.GroupVersion.String(), true),
				ownerRef(foreign, "ConfigMap", "v1", false),
			}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": []byte(passphrase)},
	}
	s.must("creating the old token Secret", env.Client.Create(ctx, token))

	s.create()
	s.waitServers(1, oldVersion)
	// The agent joins with the server passphrase: the old Secret has no agent token.
	s.waitAgents(1)

	s.checkTakenOver(passphrase, foreign.UID)

	s.must("deleting the old KThreesConfig", env.Client.Delete(ctx, legacy))
	s.eventually("the garbage collector to act on the old KThreesConfig's deletion", func(ctx context.Context) (bool, string, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(canary), &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), "canary still there", client.IgnoreNotFound(err)
	})
	s.checkTakenOver(passphrase, foreign.UID)
	s.token.check(t)
}

// checkTakenOver checks the token Secret: its value, the control plane as its
// controller, no KThreesConfig among its owners, the foreign owner (if any) kept.
func (s *scenario) checkTakenOver(passphrase string, foreignUID any) {
	s.t.Helper()
	sec := s.tokenSecret()
	if string(sec.Data["value"]) != passphrase {
		s.t.Error("the token's value is not the one the old software wrote")
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	controller, foreignKept := metav1.GetControllerOf(sec), false
	if controller == nil || controller.UID != kcp.UID {
		s.t.Errorf("token controller is %v, want the KThreesControlPlane %s", controller, kcp.UID)
	}
	for _, ref := range sec.OwnerReferences {
		if ref.Kind == "KThreesConfig" {
			s.t.Errorf("the token is still owned by KThreesConfig %s", ref.Name)
		}
		if fmt.Sprint(ref.UID) == fmt.Sprint(foreignUID) {
			foreignKept = true
		}
	}
	if foreignUID != nil && !foreignKept {
		s.t.Errorf("the foreign owner reference was dropped: %v", sec.OwnerReferences)
	}
}

func ownerRef(o client.Object, kind, apiVersion string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(), Controller: ptr.To(controller)}
}
