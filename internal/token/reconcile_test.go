package token_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// Before initialization, with no server anywhere, Reconcile creates a fresh token.
func TestReconcileCreatesTheSecretOnAFreshCluster(t *testing.T) {
	f := newFixture(t)

	res := f.reconcile(t, env.Client)
	if res.Outcome != token.Created {
		t.Fatalf("Outcome = %s, want %s (message %q)", res.Outcome, token.Created, res.Message)
	}
	if !res.Available() {
		t.Error("Available() = false after creating the token")
	}

	s := f.tokenSecret(t)
	f.requireTokenSecretShape(t, s)
	if len(s.OwnerReferences) != 1 {
		t.Fatalf("owner references = %+v, want exactly the control plane's", s.OwnerReferences)
	}
	ref := s.OwnerReferences[0]
	if ref.APIVersion != "controlplane.cluster.x-k8s.io/v1beta2" || ref.Kind != "KThreesControlPlane" ||
		ref.Name != "c1-control-plane" || ref.UID != f.kcp.UID ||
		ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference = %+v, want a blocking controller reference to KThreesControlPlane c1-control-plane (uid %s)", ref, f.kcp.UID)
	}
	server, agent := string(s.Data[token.ServerKey]), string(s.Data[token.AgentKey])
	for key, v := range map[string]string{token.ServerKey: server, token.AgentKey: agent} {
		if len(v) < 32 {
			t.Errorf("key %q = %d characters, want a generated passphrase (>= 32)", key, len(v))
		}
		if _, err := hex.DecodeString(v); err != nil {
			t.Errorf("key %q is not a generated hex passphrase: %v", key, err)
		}
	}
	if server == agent {
		t.Error("server and agent passphrases are equal")
	}
	if len(s.Data) != 2 {
		t.Errorf("Secret keys = %d, want only %q and %q", len(s.Data), token.ServerKey, token.AgentKey)
	}
	requireNoPassphrase(t, res.Message, server, agent)
}

// The steady state costs reads only: a second pass writes nothing at all.
func TestReconcileSecondPassWritesNothing(t *testing.T) {
	f := newFixture(t)
	c, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}

	if res := f.reconcile(t, c); res.Outcome != token.Created {
		t.Fatalf("first pass: Outcome = %s, want %s", res.Outcome, token.Created)
	}
	if c.Count(envtest.VerbCreate) != 1 {
		t.Fatalf("first pass made %d creates, want 1 (counts %v)", c.Count(envtest.VerbCreate), c.Counts())
	}
	before := f.tokenSecret(t)

	c.Reset()
	res := f.reconcile(t, c)
	if res.Outcome != token.Unchanged {
		t.Errorf("second pass: Outcome = %s, want %s (message %q)", res.Outcome, token.Unchanged, res.Message)
	}
	if res.Message != "" {
		t.Errorf("second pass: Message = %q, want none", res.Message)
	}
	if w := c.Writes(); w != 0 {
		t.Errorf("second pass made %d writes, want 0 (counts %v)", w, c.Counts())
	}
	if c.Count(envtest.VerbGet) == 0 {
		t.Error("second pass made no Get: the counter does not see this client's requests")
	}
	after := f.tokenSecret(t)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("resourceVersion changed from %s to %s on a pass that should write nothing", before.ResourceVersion, after.ResourceVersion)
	}
	if string(after.Data[token.ServerKey]) != string(before.Data[token.ServerKey]) {
		t.Error("the server passphrase changed on the second pass")
	}

	// A Secret taken over once is steady too.
	c.Reset()
	if res := f.reconcile(t, c); res.Outcome != token.Unchanged || c.Writes() != 0 {
		t.Errorf("third pass: Outcome = %s with %d writes, want %s with none", res.Outcome, c.Writes(), token.Unchanged)
	}
}

// failingClient returns a client of the test apiserver whose Gets of Secrets fail with
// getErr, and counts every write it is asked for.
func failingClient(t *testing.T, getErr error) (client.Client, *int) {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	c := interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				return getErr
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes++
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return c, &writes
}

// A failed read is not a missing Secret: it is returned, and nothing is created
// (which would be a second, different token after initialization).
func TestReconcileReturnsGetErrors(t *testing.T) {
	secretsGR := schema.GroupResource{Resource: "secrets"}
	for name, getErr := range map[string]error{
		"forbidden": apierrors.NewForbidden(secretsGR, "c1-token", errors.New("RBAC says no")),
		"internal":  apierrors.NewInternalError(errors.New("etcd is unhappy")),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			c, writes := failingClient(t, getErr)

			res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
			if err == nil {
				t.Fatalf("no error; Outcome = %s", res.Outcome)
			}
			if !errors.Is(err, getErr) {
				t.Errorf("error %v does not wrap the Get error", err)
			}
			if apierrors.ReasonForError(err) != apierrors.ReasonForError(getErr) {
				t.Errorf("error reason = %s, want %s", apierrors.ReasonForError(err), apierrors.ReasonForError(getErr))
			}
			if res.Outcome != "" {
				t.Errorf("Outcome = %s along with an error, want none", res.Outcome)
			}
			if *writes != 0 {
				t.Errorf("%d writes after a failed read, want 0", *writes)
			}
			f.requireNoTokenSecret(t)
		})
	}
}

// An existing Secret with no server passphrase, before initialization, gets one (and
// its owner fixed) in one patch.
func TestReconcileFillsAnEmptySecretBeforeInit(t *testing.T) {
	f := newFixture(t)
	cfg := newKThreesConfig(t, f.ns, "c1-control-plane-abcde")
	empty := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{token.ServerKey: {}},
	}
	if err := controllerutil.SetControllerReference(cfg, empty, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, empty)
	c, err := env.NewCountingClient()
	if err != nil {
		t.Fatal(err)
	}

	res := f.reconcile(t, c)
	if res.Outcome != token.Created {
		t.Errorf("Outcome = %s, want %s (message %q)", res.Outcome, token.Created, res.Message)
	}
	if got := c.Count(envtest.VerbPatch); got != 1 || c.Writes() != 1 {
		t.Errorf("writes = %v, want exactly one patch", c.Counts())
	}
	s := f.tokenSecret(t)
	if s.UID != empty.UID {
		t.Error("the Secret was replaced instead of patched")
	}
	f.requireTokenSecretShape(t, s)
	if len(s.OwnerReferences) != 1 {
		t.Errorf("owner references = %+v, want only the control plane (the KThreesConfig reference dropped)", s.OwnerReferences)
	}
	if v := s.Data[token.ServerKey]; len(v) < 32 {
		t.Errorf("value = %d characters, want a generated passphrase", len(v))
	}
	if v := s.Data[token.AgentKey]; len(v) < 32 {
		t.Errorf("agent-value = %d characters, want a generated passphrase", len(v))
	}

	c.Reset()
	if res := f.reconcile(t, c); res.Outcome != token.Unchanged || c.Writes() != 0 {
		t.Errorf("next pass: Outcome = %s with writes %v, want %s with none", res.Outcome, c.Counts(), token.Unchanged)
	}
}

// A Secret without the cluster-name label gets it; its data and type are left alone.
func TestReconcileAddsTheClusterNameLabel(t *testing.T) {
	f := newFixture(t)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name), Labels: map[string]string{"keep": "me"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{token.ServerKey: []byte("existing-pass")},
	}
	if err := controllerutil.SetControllerReference(f.kcp, s, env.Scheme); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s)

	if res := f.reconcile(t, env.Client); res.Outcome != token.TakenOver {
		t.Errorf("Outcome = %s, want %s", res.Outcome, token.TakenOver)
	}
	got := f.tokenSecret(t)
	if got.Labels[clusterv1.ClusterNameLabel] != f.cluster.Name || got.Labels["keep"] != "me" {
		t.Errorf("labels = %v, want the cluster-name label added and the others kept", got.Labels)
	}
	if got.Type != corev1.SecretTypeOpaque {
		t.Errorf("type = %s, want Opaque kept (the type is immutable)", got.Type)
	}
	if string(got.Data[token.ServerKey]) != "existing-pass" {
		t.Error("the existing server passphrase changed")
	}
	if _, ok := got.Data[token.AgentKey]; ok {
		t.Error("an agent passphrase was added to an existing token")
	}
	f.requireControlledByKCP(t, got)
}

// When the Secret appears between Reconcile's Get and Create (another controller
// instance, or the old bootstrap provider), Reconcile adopts it instead of failing or
// overwriting it.
func TestReconcileAdoptsASecretCreatedConcurrently(t *testing.T) {
	f := newFixture(t)
	cfg := newKThreesConfig(t, f.ns, "c1-control-plane-race")
	theirs := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: token.SecretName(f.cluster.Name)},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{token.ServerKey: []byte("theirs")},
	}
	if err := controllerutil.SetControllerReference(cfg, theirs, env.Scheme); err != nil {
		t.Fatal(err)
	}
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	raced := false
	c := interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if _, ok := obj.(*corev1.Secret); ok && apierrors.IsNotFound(err) && !raced && key.Name == theirs.Name {
				// The other writer wins the race right after this read.
				raced = true
				if err := env.Client.Create(ctx, theirs); err != nil {
					t.Errorf("creating the competing Secret: %v", err)
				}
			}
			return err
		},
	})

	res, err := token.Reconcile(t.Context(), c, f.cluster, f.kcp)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if !raced {
		t.Fatal("the race was not staged: Reconcile did not read a missing Secret")
	}
	if res.Outcome != token.TakenOver {
		t.Errorf("Outcome = %s, want %s", res.Outcome, token.TakenOver)
	}
	s := f.tokenSecret(t)
	if string(s.Data[token.ServerKey]) != "theirs" {
		t.Error("the concurrently created token was overwritten")
	}
	f.requireTokenSecretShape(t, s)
}
