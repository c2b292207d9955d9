package controlplane

import (
	"sort"
	"strconv"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// setRegistration publishes the server that joining machines are sent to while the
// control plane's registrationMethod names a server address. The bootstrap provider
// renders it into every joining server's and agent's data, so the choice is kept as
// long as that server stays fit: each change only moves later joiners. When the
// server goes away (deleted, no longer Ready, its address gone), the newest fit
// server is chosen: rollouts and scale-downs remove the oldest servers first, so the
// newest is the one most likely to stay. No fit server means no registration, and
// joiners wait.
func setRegistration(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines) {
	method := kcp.Spec.RegistrationMethod
	if !method.ByServerAddress() {
		kcp.Status.Registration = nil
		return
	}
	port := int32(k3s.DefaultHTTPSListenPort)
	if p, err := strconv.ParseInt(kcp.Spec.KThreesConfigSpec.ServerConfig.HTTPSListenPort, 10, 32); err == nil && p > 0 && p <= 65535 {
		port = int32(p)
	}
	if cur := kcp.Status.Registration; cur != nil && cur.Port == port {
		if m, ok := machines[cur.Machine]; ok && fitForRegistration(m) && registrationAddress(m, method) == cur.Address {
			return
		}
	}
	fit := machines.Filter(fitForRegistration, func(m *clusterv1.Machine) bool { return registrationAddress(m, method) != "" }).UnsortedList()
	if len(fit) == 0 {
		kcp.Status.Registration = nil
		return
	}
	sort.Slice(fit, func(i, j int) bool {
		ti, tj := fit[i].CreationTimestamp, fit[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return tj.Before(&ti)
		}
		return fit[i].Name > fit[j].Name
	})
	m := fit[0]
	kcp.Status.Registration = &controlplanev1.RegistrationStatus{Machine: m.Name, Address: registrationAddress(m, method), Port: port}
}

// fitForRegistration: a server a new machine can join through: not being deleted,
// and Ready by its Machine's condition (its Node is healthy).
func fitForRegistration(m *clusterv1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && conditions.IsTrue(m, clusterv1.MachineReadyCondition)
}

// registrationAddress is the server's first address of the method's type: an IP,
// else a DNS name.
func registrationAddress(m *clusterv1.Machine, method controlplanev1.RegistrationMethod) string {
	types := []clusterv1.MachineAddressType{clusterv1.MachineInternalIP, clusterv1.MachineInternalDNS}
	if method == controlplanev1.RegistrationExternalAddress {
		types = []clusterv1.MachineAddressType{clusterv1.MachineExternalIP, clusterv1.MachineExternalDNS}
	}
	for _, t := range types {
		for _, a := range m.Status.Addresses {
			if a.Type == t && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}
