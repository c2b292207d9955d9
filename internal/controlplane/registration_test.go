package controlplane

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func withAddresses(pairs ...string) cpfixtures.MachineOpt {
	return func(m *clusterv1.Machine) {
		for i := 0; i+1 < len(pairs); i += 2 {
			m.Status.Addresses = append(m.Status.Addresses, clusterv1.MachineAddress{Type: clusterv1.MachineAddressType(pairs[i]), Address: pairs[i+1]})
		}
	}
}

func markDeleted(m *clusterv1.Machine) {
	m.DeletionTimestamp = &metav1.Time{Time: cpfixtures.T0}
	m.Finalizers = []string{"test"}
}

// The control plane publishes one fit server for joiners, keeps it while it stays fit,
// and chooses the newest fit server when it goes away.
func TestSetRegistrationChoosesAndKeepsAServer(t *testing.T) {
	ready := withMachineCondition(clusterv1.MachineReadyCondition, metav1.ConditionTrue)
	notReady := withMachineCondition(clusterv1.MachineReadyCondition, metav1.ConditionFalse)
	old := cpfixtures.DecisionMachine("old", 3*time.Hour, ready, withAddresses("Hostname", "old", "InternalIP", "10.0.0.1", "ExternalIP", "203.0.113.1"))
	mid := cpfixtures.DecisionMachine("mid", 2*time.Hour, ready, withAddresses("InternalDNS", "mid.internal", "ExternalDNS", "mid.example.com"))
	young := cpfixtures.DecisionMachine("young", time.Hour, notReady, withAddresses("InternalIP", "10.0.0.3"))
	noAddr := cpfixtures.DecisionMachine("noaddr", time.Minute, ready)
	gone := cpfixtures.DecisionMachine("gone", 30*time.Minute, ready, markDeleted, withAddresses("InternalIP", "10.0.0.9"))

	for _, tc := range []struct {
		name    string
		method  controlplanev1.RegistrationMethod
		port    string
		current *controlplanev1.RegistrationStatus
		servers []*clusterv1.Machine
		want    *controlplanev1.RegistrationStatus
	}{
		{name: "endpoint method publishes nothing", method: "", servers: []*clusterv1.Machine{old},
			current: &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443}},
		{name: "newest ready server with an internal address; DNS when no IP", method: controlplanev1.RegistrationInternalAddress,
			servers: []*clusterv1.Machine{old, mid, young, noAddr, gone},
			want:    &controlplanev1.RegistrationStatus{Machine: "mid", Address: "mid.internal", Port: 6443}},
		{name: "external address and the servers' https-listen-port", method: controlplanev1.RegistrationExternalAddress, port: "7443",
			servers: []*clusterv1.Machine{old, young},
			want:    &controlplanev1.RegistrationStatus{Machine: "old", Address: "203.0.113.1", Port: 7443}},
		{name: "a fit current choice is kept", method: controlplanev1.RegistrationInternalAddress,
			servers: []*clusterv1.Machine{old, mid},
			current: &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443},
			want:    &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443}},
		{name: "a deleted choice is replaced", method: controlplanev1.RegistrationInternalAddress,
			servers: []*clusterv1.Machine{old, gone},
			current: &controlplanev1.RegistrationStatus{Machine: "gone", Address: "10.0.0.9", Port: 6443},
			want:    &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443}},
		{name: "a choice that is no longer Ready is replaced", method: controlplanev1.RegistrationInternalAddress,
			servers: []*clusterv1.Machine{old, young},
			current: &controlplanev1.RegistrationStatus{Machine: "young", Address: "10.0.0.3", Port: 6443},
			want:    &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443}},
		{name: "a choice whose address changed is replaced", method: controlplanev1.RegistrationInternalAddress,
			servers: []*clusterv1.Machine{old},
			current: &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.7", Port: 6443},
			want:    &controlplanev1.RegistrationStatus{Machine: "old", Address: "10.0.0.1", Port: 6443}},
		{name: "no fit server: nothing published", method: controlplanev1.RegistrationExternalAddress,
			servers: []*clusterv1.Machine{young, noAddr, gone},
			current: &controlplanev1.RegistrationStatus{Machine: "gone", Address: "10.0.0.9", Port: 6443}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kcp := cpfixtures.DecisionKCP(3, nil)
			kcp.Spec.RegistrationMethod = tc.method
			kcp.Spec.KThreesConfigSpec.ServerConfig.HTTPSListenPort = tc.port
			kcp.Status.Registration = tc.current
			setStatus(statusCluster(), kcp, etcdSeen(tc.servers))
			got := kcp.Status.Registration
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("registration = %+v, want %+v", got, tc.want)
			}
		})
	}
}
