package token_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// externalTokenSecret creates the token Secret as a third-party controller (a
// SealedSecret, an ExternalSecret) writes it: controlled by that controller's
// object, which the given reference names. value may be empty.
func externalTokenSecret(t *testing.T, f *fixture, controller metav1.OwnerReference, value string, labelled bool) *corev1.Secret {
	t.Helper()
	controller.Controller, controller.BlockOwnerDeletion = new(true), new(true)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: f.ns, Name: token.SecretName(f.cluster.Name),
			OwnerReferences: []metav1.OwnerReference{controller},
		},
		Type: corev1.SecretTypeOpaque,
	}
	if labelled {
		s.Labels = map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}
	}
	if value != "" {
		s.Data = map[string][]byte{token.ServerKey: []byte(value)}
	}
	mustCreate(t, s)
	return s
}

// A token Secret that other software controls is used as it is: never written,
// its controller never demoted, and reported with a reason of its own whose
// message names that controller, never the token.
func TestReconcileUsesAnExternallyControlledTokenReadOnly(t *testing.T) {
	sealed := metav1.OwnerReference{APIVersion: "bitnami.com/v1alpha1", Kind: "SealedSecret", Name: "c1-token", UID: "5ea1ed00-0000-4000-8000-000000000001"}
	external := metav1.OwnerReference{APIVersion: "external-secrets.io/v1beta1", Kind: "ExternalSecret", Name: "k3s-join", UID: "e5000000-0000-4000-8000-000000000002"}
	for _, tc := range []struct {
		name       string
		controller metav1.OwnerReference
		value      string
		labelled   bool
		available  bool
		outcome    token.Outcome
	}{
		{name: "SealedSecret, with a value", controller: sealed, value: "sealed-pass", labelled: true, available: true, outcome: token.ManagedExternally},
		{name: "ExternalSecret, with a value, without the cluster label", controller: external, value: "es-pass", available: true, outcome: token.ManagedExternally},
		{name: "ExternalSecret that has not written a value yet", controller: external, labelled: true, outcome: token.ManagedExternallyWithoutValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.markInitialized(t)
			before := externalTokenSecret(t, f, tc.controller, tc.value, tc.labelled)
			c, err := env.NewCountingClient()
			if err != nil {
				t.Fatal(err)
			}

			for pass := range 2 {
				res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
				if err != nil {
					t.Fatalf("pass %d: Reconcile: %v", pass, err)
				}
				if res.Outcome != tc.outcome || res.Available() != tc.available {
					t.Fatalf("pass %d: Outcome = %s (available %v), want %s (available %v); message %q",
						pass, res.Outcome, res.Available(), tc.outcome, tc.available, res.Message)
				}
				if want := tc.controller.Kind + " " + tc.controller.Name; !strings.Contains(res.Message, want) {
					t.Errorf("message %q does not name the controller %q", res.Message, want)
				}
				requireNoPassphrase(t, res.Message, tc.value)
			}
			if c.Writes() != 0 {
				t.Errorf("writes = %v, want none", c.Counts())
			}
			after := f.tokenSecret(t)
			if after.ResourceVersion != before.ResourceVersion {
				t.Errorf("the Secret was written: owners %+v", after.OwnerReferences)
			}
			if tc.available {
				// The bootstrap side joins with the externally managed value.
				tok, found, err := token.Lookup(t.Context(), env.Client, f.cluster)
				if err != nil || !found || tok.Server != tc.value {
					t.Errorf("Lookup: found %v, err %v, value matches %v", found, err, tok.Server == tc.value)
				}
			}
		})
	}
}

// The same Secret under the real garbage collector: deleting the control plane
// leaves a token Secret that another controller owns exactly as it was.
// A ConfigMap stands for the third-party object: the collector must be able to
// resolve the owner's kind, and this harness installs no SealedSecret CRD.
func TestExternallyControlledTokenSurvivesControlPlaneDeletion(t *testing.T) {
	f := newFixture(t)
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "token-source"}}
	mustCreate(t, source)
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: source.Name, UID: source.UID}
	before := externalTokenSecret(t, f, ref, "third-party-pass", true)

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.ManagedExternally {
		// Not fatal: what the garbage collector does next is the point.
		t.Errorf("Outcome = %s, want %s (message %q)", res.Outcome, token.ManagedExternally, res.Message)
	}

	canary := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "kcp-canary"}}
	if err := controllerutil.SetControllerReference(f.kcp, canary, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, canary)
	if err := env.Client.Delete(t.Context(), f.kcp); err != nil {
		t.Fatalf("deleting the control plane: %v", err)
	}
	err := envtest.Eventually(t.Context(), gcTimeout, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(canary), &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the garbage collector never deleted the canary owned by the deleted control plane: %v", err)
	}
	time.Sleep(2 * time.Second) // let the collector's other workers land

	after := f.tokenSecret(t)
	if string(after.Data[token.ServerKey]) != "third-party-pass" {
		t.Error("the value changed")
	}
	ctl := metav1.GetControllerOf(after)
	if ctl == nil || ctl.Kind != "ConfigMap" || ctl.UID != source.UID {
		t.Errorf("controller = %+v, want the third-party ConfigMap still", ctl)
	}
	if len(after.OwnerReferences) != 1 || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("owner references = %+v, want the third party's alone, never rewritten", after.OwnerReferences)
	}
}
