package token_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

const gcTimeout = 60 * time.Second

// legacyTokenSecret is the token Secret as cluster-api-k3s left it: controlled by
// one server's KThreesConfig, a server passphrase and no agent passphrase, plus
// plain references to extraOwners.
func legacyTokenSecret(t *testing.T, f *fixture, cfg *bootstrapv1.KThreesConfig, value string, extraOwners ...client.Object) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: f.ns,
			Name:      token.SecretName(f.cluster.Name),
			Labels:    map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{token.ServerKey: []byte(value)},
	}
	if err := controllerutil.SetControllerReference(cfg, s, env.Scheme); err != nil {
		t.Fatal(err)
	}
	for _, o := range extraOwners {
		if err := controllerutil.SetOwnerReference(o, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, s)
}

// canarySecret is owned by cfg alone: once it is gone, the garbage collector has
// processed cfg's deletion.
func canarySecret(t *testing.T, ns string, cfg *bootstrapv1.KThreesConfig) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"}}
	if err := controllerutil.SetControllerReference(cfg, s, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s)
	return s
}

// deleteAndWaitForGC deletes cfg as a rollout does and waits until the garbage
// collector has deleted canary, then a little longer, so that every dependent of cfg
// has been handled.
func deleteAndWaitForGC(t *testing.T, cfg *bootstrapv1.KThreesConfig, canary *corev1.Secret) {
	t.Helper()
	ctx := t.Context()
	if err := env.Client.Delete(ctx, cfg); err != nil {
		t.Fatalf("deleting the KThreesConfig: %v", err)
	}
	err := envtest.Eventually(ctx, gcTimeout, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(canary), &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the garbage collector never deleted the canary owned by the deleted KThreesConfig: %v", err)
	}
	// The collector may handle the dependents of one owner on several workers; give
	// the others time to land before checking that the token survived.
	time.Sleep(2 * time.Second)
}

func ownerRefTo(s *corev1.Secret, kind, name string) *metav1.OwnerReference {
	for i := range s.OwnerReferences {
		if s.OwnerReferences[i].Kind == kind && s.OwnerReferences[i].Name == name {
			return &s.OwnerReferences[i]
		}
	}
	return nil
}

// The heart of the token's ownership: after Reconcile takes over a Secret that
// cluster-api-k3s gave to a KThreesConfig, rolling that server out (deleting its
// KThreesConfig) no longer lets the real garbage collector delete the token.
func TestTakenOverTokenSurvivesTheGarbageCollector(t *testing.T) {
	for _, withForeignOwner := range []bool{false, true} {
		name := "KThreesConfig is the only owner"
		if withForeignOwner {
			name = "KThreesConfig controller plus a ConfigMap owner"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			cfg := newKThreesConfig(t, f.ns, "c1-control-plane-x7k2p")
			var foreign *corev1.ConfigMap
			var extra []client.Object
			if withForeignOwner {
				foreign = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "foreign-owner"}}
				mustCreate(t, foreign)
				extra = append(extra, foreign)
			}
			legacyTokenSecret(t, f, cfg, "legacy-server-pass", extra...)
			canary := canarySecret(t, f.ns, cfg)

			res := f.reconcile(t, env.Client)
			if res.Outcome != token.TakenOver {
				// Not fatal: what the garbage collector does next is the point.
				t.Errorf("Outcome = %s, want %s (message %q)", res.Outcome, token.TakenOver, res.Message)
			}
			requireNoPassphrase(t, res.Message, "legacy-server-pass")
			requireTakenOver := func(when string) {
				t.Helper()
				s := f.tokenSecret(t)
				if got := string(s.Data[token.ServerKey]); got != "legacy-server-pass" {
					t.Errorf("%s: value = %q, want the original legacy-server-pass", when, got)
				}
				if _, ok := s.Data[token.AgentKey]; ok {
					t.Errorf("%s: the Secret gained %q; servers of a taken-over cluster have no agent token", when, token.AgentKey)
				}
				f.requireTokenSecretShape(t, s)
				if r := ownerRefTo(s, "KThreesConfig", cfg.Name); r != nil {
					t.Errorf("%s: the KThreesConfig reference is still there: %+v", when, *r)
				}
				wantRefs := 1
				if withForeignOwner {
					wantRefs = 2
					r := ownerRefTo(s, "ConfigMap", foreign.Name)
					switch {
					case r == nil:
						t.Errorf("%s: the ConfigMap owner reference was lost: %+v", when, s.OwnerReferences)
					case r.UID != foreign.UID:
						t.Errorf("%s: the ConfigMap reference has uid %s, want %s", when, r.UID, foreign.UID)
					case r.Controller != nil && *r.Controller:
						t.Errorf("%s: the ConfigMap reference became a controller", when)
					}
				}
				if len(s.OwnerReferences) != wantRefs {
					t.Errorf("%s: owner references = %+v, want %d", when, s.OwnerReferences, wantRefs)
				}
			}
			requireTakenOver("after Reconcile")

			deleteAndWaitForGC(t, cfg, canary)
			requireTakenOver("after the garbage collector handled the KThreesConfig's deletion")

			// And the control plane has nothing more to write.
			c, err := env.NewCountingClient()
			if err != nil {
				t.Fatal(err)
			}
			if res := f.reconcile(t, c); res.Outcome != token.Unchanged || c.Writes() != 0 {
				t.Errorf("after the rollout: Outcome = %s with writes %v, want %s with none", res.Outcome, c.Counts(), token.Unchanged)
			}
		})
	}
}

// The counter-test: without Reconcile, the same Secret dies with its KThreesConfig.
// This is what makes the test above able to fail.
func TestGarbageCollectorDeletesATokenLeftToAKThreesConfig(t *testing.T) {
	f := newFixture(t)
	cfg := newKThreesConfig(t, f.ns, "c1-control-plane-x7k2p")
	legacyTokenSecret(t, f, cfg, "legacy-server-pass")
	canary := canarySecret(t, f.ns, cfg)

	if err := env.Client.Delete(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	err := envtest.Eventually(t.Context(), gcTimeout, func(ctx context.Context) (bool, error) {
		err := env.Client.Get(ctx, f.tokenKey(), &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the garbage collector did not delete the token Secret left to the deleted KThreesConfig: %v", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(canary), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the canary still exists (err %v)", err)
	}
}

// Other shapes older software left behind: the Cluster as controller, the
// KThreesControlPlane as a plain owner next to a KThreesConfig controller, and
// references to KThreesConfigs of older API versions.
func TestReconcileTakesOverOtherLegacyShapes(t *testing.T) {
	t.Run("Cluster is the controller", func(t *testing.T) {
		f := newFixture(t)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name),
				Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
			Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{token.ServerKey: []byte("cluster-owned-pass")},
		}
		if err := controllerutil.SetControllerReference(f.cluster, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s)

		if res := f.reconcile(t, env.Client); res.Outcome != token.TakenOver {
			t.Fatalf("Outcome = %s, want %s", res.Outcome, token.TakenOver)
		}
		got := f.tokenSecret(t)
		f.requireTokenSecretShape(t, got)
		r := ownerRefTo(got, "Cluster", f.cluster.Name)
		switch {
		case r == nil:
			t.Fatalf("the Cluster reference was dropped: %+v", got.OwnerReferences)
		case r.Controller != nil && *r.Controller:
			t.Error("the Cluster is still a controller")
		case r.UID != f.cluster.UID || r.APIVersion != clusterv1.GroupVersion.String():
			t.Errorf("the Cluster reference changed: %+v", *r)
		}
		if len(got.OwnerReferences) != 2 {
			t.Errorf("owner references = %+v, want the Cluster and the control plane", got.OwnerReferences)
		}
		if string(got.Data[token.ServerKey]) != "cluster-owned-pass" || len(got.Data) != 1 {
			t.Errorf("data changed: keys %d, value kept %v", len(got.Data), string(got.Data[token.ServerKey]) == "cluster-owned-pass")
		}
	})

	t.Run("control plane is a plain owner, KThreesConfigs of two versions", func(t *testing.T) {
		f := newFixture(t)
		cfg := newKThreesConfig(t, f.ns, "c1-control-plane-old")
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name),
				Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
			Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{token.ServerKey: []byte("pass")},
		}
		if err := controllerutil.SetOwnerReference(f.kcp, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
		if err := controllerutil.SetControllerReference(cfg, s, env.Scheme); err != nil {
			t.Fatal(err)
		}
		s.OwnerReferences = append(s.OwnerReferences, metav1.OwnerReference{
			APIVersion: "bootstrap.cluster.x-k8s.io/v1beta1", Kind: "KThreesConfig",
			Name: "c1-control-plane-older", UID: "5a1c0c9e-0000-4000-8000-000000000001",
		})
		mustCreate(t, s)

		if res := f.reconcile(t, env.Client); res.Outcome != token.TakenOver {
			t.Fatalf("Outcome = %s, want %s", res.Outcome, token.TakenOver)
		}
		got := f.tokenSecret(t)
		f.requireTokenSecretShape(t, got)
		if len(got.OwnerReferences) != 1 {
			t.Errorf("owner references = %+v, want the control plane only", got.OwnerReferences)
		}
	})
}
