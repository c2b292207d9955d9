package bootstrap

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// secretWrites is a real client that records every write to a Secret by name, with
// the body of each patch, and can make patches of some Secrets fail.
type secretWrites struct {
	client.Client
	mu      sync.Mutex
	writes  map[string]int
	patches map[string][]string
}

func newSecretWrites(t *testing.T, failPatch map[string]error) *secretWrites {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &secretWrites{writes: map[string]int{}, patches: map[string][]string{}}
	record := func(obj client.Object, p client.Patch) error {
		if !isSecret(obj) {
			return nil
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.writes[obj.GetName()]++
		if p != nil {
			body, err := p.Data(obj)
			if err != nil {
				return err
			}
			w.patches[obj.GetName()] = append(w.patches[obj.GetName()], string(body))
		}
		return nil
	}
	w.Client = interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := record(obj, p); err != nil {
				return err
			}
			if err := failPatch[obj.GetName()]; err != nil && isSecret(obj) {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := record(obj, nil); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	return w
}

func isSecret(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.Secret:
		return true
	case *metav1.PartialObjectMetadata:
		return o.GroupVersionKind() == schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	}
	return false
}

// count returns how often each named Secret was written, and resets the record.
func (w *secretWrites) count(names ...string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, n := range names {
		out[n] = w.writes[n]
	}
	w.writes = map[string]int{}
	return out
}

func getSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func resourceVersions(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		out[n] = getSecret(t, ns, n).ResourceVersion
	}
	return out
}

// assertNoWrites fails for every named Secret that was written, or whose
// resourceVersion moved from before, since the last count.
func assertNoWrites(t *testing.T, when string, w *secretWrites, ns string, before map[string]string) {
	t.Helper()
	names := make([]string, 0, len(before))
	for n := range before {
		names = append(names, n)
	}
	for n, c := range w.count(names...) {
		if c != 0 {
			t.Errorf("%s: Secret %s written %d times, want none", when, n, c)
		}
	}
	for n, rv := range resourceVersions(t, ns, names...) {
		if rv != before[n] {
			t.Errorf("%s: Secret %s resourceVersion %s -> %s, want unchanged", when, n, before[n], rv)
		}
	}
}

// pass runs one Reconcile of the config, as the controller would.
func pass(c client.Client, config *bootstrapv1.KThreesConfig) error {
	r := &Reconciler{Client: c}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)})
	return err
}

func registriesSpec(auth, ca string) *bootstrapv1.Registries {
	return &bootstrapv1.Registries{Configs: []bootstrapv1.RegistryConfig{{
		Registry:   "registry.example.com",
		AuthSecret: &bootstrapv1.SecretReference{Name: auth},
		CASecret:   &bootstrapv1.SecretReference{Name: ca},
	}}}
}

// createClusterSecret creates a user Secret labelled as cluster's own
// (cluster.x-k8s.io/cluster-name), as a user marks a Secret made for one cluster.
func createClusterSecret(t *testing.T, cluster *clusterv1.Cluster, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		StringData: data,
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// Every Secret a config names for the user (a file's content, registry credentials
// and CA, the external datastore's Secrets) that the user labelled with the config's
// cluster name gets clusterctl's move label the first time a pass reads it, by a
// patch that carries that label alone: the Secret keeps its data and its other
// labels. A pass that reads a labelled Secret again, and the idle pass after the data
// is made, write none of them.
func TestUserSecretsAreLabelledForClusterctlMove(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createClusterSecret(t, cluster, "pg", map[string]string{"endpoint": datastoreEndpoint})
	createClusterSecret(t, cluster, "pg-tls", map[string]string{"ca.crt": "CA PEM\n", "tls.crt": "CERT PEM\n", "tls.key": "KEY PEM\n"})
	createClusterSecret(t, cluster, "registry-auth", map[string]string{"username": "u", "password": "p"})
	createClusterSecret(t, cluster, "registry-ca", map[string]string{"ca.crt": "REGISTRY CA\n"})
	motd := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "motd", Labels: map[string]string{"team": "a", clusterv1.ClusterNameLabel: cluster.Name}},
		StringData: map[string]string{"text": "welcome\n"},
	}
	if err := env.Client.Create(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	datastore := []string{"pg", "pg-tls"}
	all := []string{"pg", "pg-tls", "registry-auth", "registry-ca", "motd"}
	original := map[string]*corev1.Secret{}
	for _, n := range all {
		original[n] = getSecret(t, ns, n)
	}

	spec := datastoreSpec()
	spec.Files = []bootstrapv1.File{{Path: "/etc/motd",
		ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "motd", Key: "text"}}}}
	spec.AgentConfig.Registries = registriesSpec("registry-auth", "registry-ca")
	config := newMachineWithConfig(t, cluster, "server-0", true, spec)
	w := newSecretWrites(t, nil)

	// Without a join token the first server reads its datastore Secrets, then waits.
	if err := pass(w, config); err != nil {
		t.Fatal(err)
	}
	waitForReason(t, config, bootstrapv1.WaitingForTokenReason)
	for _, n := range datastore {
		if _, ok := getSecret(t, ns, n).Labels[clusterctlv1.ClusterctlMoveLabel]; !ok {
			t.Errorf("Secret %s read by a waiting server has no %s label", n, clusterctlv1.ClusterctlMoveLabel)
		}
	}
	// pg-tls is read three times (CA, certificate, key) and written once.
	if got, want := w.count(datastore...), map[string]int{"pg": 1, "pg-tls": 1}; !maps.Equal(got, want) {
		t.Errorf("first pass: writes %v, want %v", got, want)
	}
	before := resourceVersions(t, ns, datastore...)
	if err := pass(w, config); err != nil {
		t.Fatal(err)
	}
	assertNoWrites(t, "a waiting pass reading labelled Secrets", w, ns, before)

	createToken(t, cluster)
	if err := pass(w, config); err != nil {
		t.Fatalf("rendering pass: %v", err)
	}
	waitForDataSecret(t, config)
	// The datastore Secrets were labelled before the token existed.
	wantWrites := map[string]int{"pg": 0, "pg-tls": 0, "registry-auth": 1, "registry-ca": 1, "motd": 1}
	if got := w.count(all...); !maps.Equal(got, wantWrites) {
		t.Errorf("rendering pass: writes %v, want %v", got, wantWrites)
	}
	wantPatch := `{"metadata":{"labels":{"` + clusterctlv1.ClusterctlMoveLabel + `":""}}}`
	for n, bodies := range w.patches {
		for _, b := range bodies {
			if b != wantPatch {
				t.Errorf("Secret %s patched with %s, want only the label: %s", n, b, wantPatch)
			}
		}
	}
	for _, n := range all {
		got := getSecret(t, ns, n)
		if v, ok := got.Labels[clusterctlv1.ClusterctlMoveLabel]; !ok || v != "" {
			t.Errorf("Secret %s: %s label = %q (set %v), want \"\"", n, clusterctlv1.ClusterctlMoveLabel, v, ok)
		}
		wantLabels := maps.Clone(original[n].Labels)
		if wantLabels == nil {
			wantLabels = map[string]string{}
		}
		wantLabels[clusterctlv1.ClusterctlMoveLabel] = ""
		if !maps.Equal(got.Labels, wantLabels) {
			t.Errorf("Secret %s labels = %v, want %v", n, got.Labels, wantLabels)
		}
		if !maps.EqualFunc(got.Data, original[n].Data, func(a, b []byte) bool { return string(a) == string(b) }) || got.Type != original[n].Type {
			t.Errorf("Secret %s: data or type changed", n)
		}
	}

	before = resourceVersions(t, ns, all...)
	if err := pass(w, config); err != nil {
		t.Fatalf("idle pass: %v", err)
	}
	assertNoWrites(t, "the idle pass", w, ns, before)
}

// A Secret the user did not mark as this cluster's is read and never labelled:
// clusterctl move would delete it from the old management cluster, where something
// else may use it. Unmarked (shared with whatever else uses it) or marked as another
// cluster's, it keeps its labels and is not written; the one marked as this cluster's
// is labelled.
func TestSecretsNotMarkedAsTheClustersAreNotLabelledForClusterctlMove(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	createSecret(t, ns, "motd", map[string]string{"text": "welcome\n"})
	other := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "registry-auth", Labels: map[string]string{clusterv1.ClusterNameLabel: "another"}},
		StringData: map[string]string{"username": "u", "password": "p"},
	}
	if err := env.Client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	createClusterSecret(t, cluster, "registry-ca", map[string]string{"ca.crt": "REGISTRY CA\n"})
	notOurs := []string{"motd", "registry-auth"}
	original := map[string]*corev1.Secret{}
	for _, n := range notOurs {
		original[n] = getSecret(t, ns, n)
	}
	before := resourceVersions(t, ns, notOurs...)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		Files: []bootstrapv1.File{{Path: "/etc/motd",
			ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "motd", Key: "text"}}}},
		AgentConfig: bootstrapv1.KThreesAgentConfig{Registries: registriesSpec("registry-auth", "registry-ca")},
	})
	w := newSecretWrites(t, nil)

	if err := pass(w, config); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if !strings.Contains(string(waitForDataSecret(t, config).Data["value"]), "welcome") {
		t.Error("bootstrap data lacks the file read from the Secret")
	}
	assertNoWrites(t, "rendering with Secrets not marked as the cluster's", w, ns, before)
	for _, n := range notOurs {
		if got := getSecret(t, ns, n).Labels; !maps.Equal(got, original[n].Labels) {
			t.Errorf("Secret %s: labels %v, want %v unchanged", n, got, original[n].Labels)
		}
	}
	if _, ok := getSecret(t, ns, "registry-ca").Labels[clusterctlv1.ClusterctlMoveLabel]; !ok {
		t.Errorf("Secret registry-ca, marked as the cluster's, has no %s label", clusterctlv1.ClusterctlMoveLabel)
	}
}

// A Secret that already carries the label, whatever its value, is read and never
// written: clusterctl only looks for the key. Nor is the label taken away from a
// Secret that is not marked as the cluster's (registry-ca, labelled as an earlier
// capk3s labelled every Secret it read, or as the user labels one): it cannot be
// told apart from the user's own, which asked for the move.
func TestAlreadyLabelledUserSecretIsNotWritten(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	labels := map[string]map[string]string{
		"motd":          {clusterctlv1.ClusterctlMoveLabel: "true", clusterv1.ClusterNameLabel: cluster.Name},
		"registry-auth": {clusterctlv1.ClusterctlMoveLabel: "true"},
		"registry-ca":   {clusterctlv1.ClusterctlMoveLabel: ""},
	}
	for name, l := range labels {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			StringData: map[string]string{"text": "welcome\n", "username": "u", "password": "p", "ca.crt": "CA\n"},
		}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"motd", "registry-auth", "registry-ca"}
	before := resourceVersions(t, ns, names...)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		Files: []bootstrapv1.File{{Path: "/etc/motd",
			ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "motd", Key: "text"}}}},
		AgentConfig: bootstrapv1.KThreesAgentConfig{Registries: registriesSpec("registry-auth", "registry-ca")},
	})
	w := newSecretWrites(t, nil)

	if err := pass(w, config); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	waitForDataSecret(t, config)
	assertNoWrites(t, "rendering with labelled Secrets", w, ns, before)
	for _, n := range names {
		if got := getSecret(t, ns, n).Labels; !maps.Equal(got, labels[n]) {
			t.Errorf("Secret %s: labels %v, want %v kept", n, got, labels[n])
		}
	}
}

// A label that cannot be added does not keep the machine from its data: the data
// Secret is made, and the failure comes back as the pass's error, naming the Secret,
// so that it is logged and retried. DataSecretAvailable says nothing of it: the data
// is there.
func TestFailedMoveLabelDoesNotHoldBackData(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	createClusterSecret(t, cluster, "motd", map[string]string{"text": "welcome\n"})
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		Files: []bootstrapv1.File{{Path: "/etc/motd",
			ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "motd", Key: "text"}}}},
	})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "motd", nil)
	w := newSecretWrites(t, map[string]error{"motd": forbidden})

	err := pass(w, config)
	if err == nil || !strings.Contains(err.Error(), "Secret motd") || !strings.Contains(err.Error(), "clusterctl move") || !apierrors.IsForbidden(err) {
		t.Errorf("Reconcile = %v, want the label failure of Secret motd", err)
	}
	if n := w.count("motd")["motd"]; n == 0 {
		t.Error("the label patch was never tried")
	}
	if !strings.Contains(string(waitForDataSecret(t, config).Data["value"]), "welcome") {
		t.Error("bootstrap data lacks the file read from the Secret")
	}
	got := getConfig(t, config)
	if !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
		t.Error("status.initialization.dataSecretCreated is not true")
	}
	if c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("DataSecretAvailable = %+v, want True", c)
	}
	if _, ok := getSecret(t, ns, "motd").Labels[clusterctlv1.ClusterctlMoveLabel]; ok {
		t.Error("the Secret is labelled although every patch failed")
	}
}
