package bootstrap

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/test/envtest"
)

// An in-place update (CAPI's MachineSet controller, or the control plane) changes a
// KThreesConfig's spec under the update-in-progress annotation once its machine
// runs: the bootstrap data stays what the machine booted with, and the config stays
// ready, so that nothing about the machine is re-rendered or refused.
func TestInPlaceSpecChangeKeepsTheData(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	if err := k3s.ClusterCertificates().LookupOrGenerate(ctx, env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}); err != nil {
		t.Fatal(err)
	}
	markInitialized(t, cluster)
	agent := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"pool=a"}},
	})
	before := waitForDataSecret(t, agent)

	got := getConfig(t, agent)
	patched := got.DeepCopy()
	patched.Annotations = map[string]string{clusterv1.UpdateInProgressAnnotation: ""}
	patched.Spec.Version = "v1.32.1+k3s1"
	if err := env.Client.Patch(ctx, patched, client.MergeFrom(got)); err != nil {
		t.Fatalf("updating the spec in place: %v", err)
	}
	// Reconciled once the status observes the new generation.
	var last *bootstrapv1.KThreesConfig
	err := envtest.Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		last = &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(agent), last); err != nil {
			return false, err
		}
		return last.Status.ObservedGeneration == last.Generation && last.Generation > got.Generation, nil
	})
	if err != nil {
		t.Fatalf("the changed config was not reconciled: %v", err)
	}
	if !ptr.Deref(last.Status.Initialization.DataSecretCreated, false) || !conditions.IsTrue(last, bootstrapv1.DataSecretAvailableCondition) {
		t.Errorf("after the in-place change: dataSecretCreated %v, DataSecretAvailable %+v",
			last.Status.Initialization.DataSecretCreated, conditions.Get(last, bootstrapv1.DataSecretAvailableCondition))
	}
	after := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(before), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || string(after.Data["value"]) != string(before.Data["value"]) {
		t.Errorf("the bootstrap data Secret was rewritten by an in-place spec change")
	}
}
