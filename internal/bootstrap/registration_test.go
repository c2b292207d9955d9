package bootstrap

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// A control plane that joins machines through a server's address sends its joiners
// to the server it published, not to the endpoint; until it publishes one they wait,
// and the publication wakes them.
func TestJoinersUseThePublishedRegistrationServer(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster) // makes the KThreesControlPlane too
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Spec.ControlPlaneRef.Name}, kcp); err != nil {
		t.Fatal(err)
	}
	kcp.Spec.RegistrationMethod = controlplanev1.RegistrationInternalAddress
	// Cluster API labels the control plane with its cluster's name (and owns it).
	kcp.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if err := env.Client.Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	if err := k3s.ClusterCertificates().LookupOrGenerate(ctx, env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}); err != nil {
		t.Fatal(err)
	}
	markInitialized(t, cluster)
	agent := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	server := newMachineWithConfig(t, cluster, "server-1", true, bootstrapv1.KThreesConfigSpec{})
	waitForReason(t, agent, bootstrapv1.WaitingForRegistrationServerReason)
	waitForReason(t, server, bootstrapv1.WaitingForRegistrationServerReason)

	kcp.Status.Registration = &controlplanev1.RegistrationStatus{Machine: "server-0", Address: "192.168.7.4", Port: 6443}
	if err := env.Client.Status().Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*bootstrapv1.KThreesConfig{agent, server} {
		cfg := k3sConfig(t, waitForDataSecret(t, c).Data["value"])
		if cfg["server"] != "https://192.168.7.4:6443" {
			t.Errorf("%s joins through %v, want the published server https://192.168.7.4:6443", c.Name, cfg["server"])
		}
	}
}
