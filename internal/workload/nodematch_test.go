package workload

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
)

func machine(name, providerID, version string) *clusterv1.Machine {
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       clusterv1.MachineSpec{ProviderID: providerID, Version: version},
	}
}

func k3sNode(name, providerID, version string) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: version}},
	}
}

func TestFindMismatches(t *testing.T) {
	t.Parallel()
	const v = "v1.36.3+k3s1"
	embedded := machine("cp-a", "aws:///eu-west-1a/i-0abc", v)
	uninitialized := machine("cp-b", "sim://ns/cp-b", v)
	byAddress := machine("cp-c", "sim://ns/cp-c", v)
	byAddress.Status.Addresses = []clusterv1.MachineAddress{{Type: clusterv1.MachineHostName, Address: "host-c"}}
	airGapped := machine("cp-d", "sim://ns/cp-d", v)
	updating := machine("cp-e", "sim://ns/cp-e", v)
	fine := machine("cp-f", "sim://ns/cp-f", "v1.36.3")
	notYet := machine("cp-g", "", v)
	all := []corev1.Node{
		k3sNode("cp-a", "k3s://cp-a", v),
		k3sNode("cp-b", "", v),
		k3sNode("host-c", "k3s://host-c", v),
		k3sNode("cp-d", "sim://ns/cp-d", "v1.35.4+k3s1"),
		k3sNode("cp-e", "sim://ns/cp-e", "v1.35.4+k3s1"),
		k3sNode("cp-f", "sim://ns/cp-f", "v1.36.3+k3s1"),
		k3sNode("cp-g", "k3s://cp-g", v),
	}
	nodes := Nodes{"cp-d": &all[3], "cp-e": &all[4], "cp-f": &all[5]}
	machines := collections.FromMachines(embedded, uninitialized, byAddress, airGapped, updating, fine, notYet)
	got := findMismatches(machines, all, nodes, func(m *clusterv1.Machine) bool { return m.Name == "cp-e" })
	want := Mismatches{
		ProviderID: []string{
			`Machine cp-a has providerID "aws:///eu-west-1a/i-0abc", its Node cp-a "k3s://cp-a": Cluster API matches only equal IDs`,
			`Machine cp-b has providerID "sim://ns/cp-b", its Node cp-b none: no cloud controller initialized the Node`,
			`Machine cp-c has providerID "sim://ns/cp-c", its Node host-c "k3s://host-c": Cluster API matches only equal IDs`,
		},
		Version: []string{"Machine cp-d asks for k3s v1.36.3+k3s1, its Node cp-d runs v1.35.4+k3s1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findMismatches =\n%#v\nwant\n%#v", got, want)
	}
}
