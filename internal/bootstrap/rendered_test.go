package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// After clusterctl move, a config comes without its status, next to the data Secret
// it made and the Machine that names it. Its Secret is taken up as it is: the Secret
// its spec names was left in the old management cluster (shared there), and the
// running machine's data must not turn unavailable for it. A Machine naming a Secret
// the config does not control is rendered for as before.
func TestAMovedConfigTakesUpItsDataWithoutReadingItsInputs(t *testing.T) {
	ns := env.NewNamespace(t)
	ctx := context.Background()
	cluster := newInitializedCluster(t, ns)
	spec := bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{{Path: "/etc/motd",
		ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "left-behind", Key: "text"}}}}}
	config := newMachineWithConfig(t, cluster, "agent-0", false, spec)
	data := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: config.Name, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte("what the machine booted from"), "format": []byte("cloud-config")},
	}
	if err := controllerutil.SetControllerReference(config, data, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, data); err != nil {
		t.Fatal(err)
	}
	nameData(t, config, config.Name)

	if err := pass(env.Client, config); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	got := getConfig(t, config)
	if got.Status.DataSecretName != config.Name || !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) {
		t.Errorf("status dataSecretName %q, dataSecretCreated %v; want the existing Secret taken up",
			got.Status.DataSecretName, got.Status.Initialization.DataSecretCreated)
	}
	if c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("DataSecretAvailable = %+v, want True", c)
	}
	if v := string(getSecret(t, ns, config.Name).Data["value"]); v != "what the machine booted from" {
		t.Errorf("the data Secret was rewritten: %q", v)
	}

	// A Secret of that name that another object controls is not taken up: the config
	// renders, and waits here for its file's Secret.
	other := newMachineWithConfig(t, cluster, "agent-1", false, spec)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: other.Name}, Data: map[string][]byte{"value": []byte("x")}}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	nameData(t, other, other.Name)
	if err := pass(env.Client, other); err == nil {
		t.Error("Reconcile of a config whose file Secret is missing succeeded")
	}
	if ptr.Deref(getConfig(t, other).Status.Initialization.DataSecretCreated, false) {
		t.Error("a Secret the config does not control was taken up as its data")
	}
}

// nameData sets the config's Machine's spec.bootstrap.dataSecretName, as CAPI does
// once the config reports its data.
func nameData(t *testing.T, config *bootstrapv1.KThreesConfig, name string) {
	t.Helper()
	m := &clusterv1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: config.Namespace, Name: config.Name}, m); err != nil {
		t.Fatal(err)
	}
	before := m.DeepCopy()
	m.Spec.Bootstrap.DataSecretName = ptr.To(name)
	if err := env.Client.Patch(context.Background(), m, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}
