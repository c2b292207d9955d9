package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// machine is a Machine of cluster "c".
func machine(name, version string, server, ready, upToDate, deleting bool) clusterv1.Machine {
	m := clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:       clusterv1.MachineSpec{ClusterName: "c", Version: version},
	}
	if server {
		m.Labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	if deleting {
		m.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	m.Status.Conditions = []metav1.Condition{
		{Type: clusterv1.ReadyCondition, Status: status(ready)},
		{Type: clusterv1.MachineUpToDateCondition, Status: status(upToDate)},
	}
	return m
}

func status(b bool) metav1.ConditionStatus {
	if b {
		return metav1.ConditionTrue
	}
	return metav1.ConditionFalse
}

func availableCluster(name string) clusterv1.Cluster {
	return clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: clusterv1.ClusterStatus{Conditions: []metav1.Condition{
			{Type: clusterv1.AvailableCondition, Status: metav1.ConditionTrue},
		}},
	}
}

// The agents are bumped once every server runs the new version, and the cluster is
// upgraded once every Machine does, is Ready and UpToDate, and no old one is left;
// the same for both providers.
func TestAClusterIsUpgradedWhenEveryMachineOfItsShapeIsAtTheNewVersion(t *testing.T) {
	const from, to = "v1.36.1+k3s1", "v1.36.3+k3s1"
	s := shape{Servers: 3, Agents: 2}
	newServers := []clusterv1.Machine{
		machine("s4", to, true, true, true, false),
		machine("s5", to, true, true, true, false),
		machine("s6", to, true, true, true, false),
	}
	oldAgents := []clusterv1.Machine{
		machine("a1", from, false, true, true, false),
		machine("a2", from, false, true, true, false),
	}
	newAgents := []clusterv1.Machine{
		machine("a3", to, false, true, true, false),
		machine("a4", to, false, true, true, false),
	}
	for _, tc := range []struct {
		name                string
		machines            []clusterv1.Machine
		serversDone, isDone bool
	}{
		{"before the upgrade", append([]clusterv1.Machine{
			machine("s1", from, true, true, true, false),
			machine("s2", from, true, true, true, false),
			machine("s3", from, true, true, true, false),
		}, oldAgents...), false, false},
		{"an old server is still being deleted", append(append([]clusterv1.Machine{
			machine("s3", from, true, false, false, true),
		}, newServers...), oldAgents...), false, false},
		{"a new server is not Ready yet", append([]clusterv1.Machine{
			machine("s4", to, true, true, true, false),
			machine("s5", to, true, true, true, false),
			machine("s6", to, true, false, true, false),
		}, oldAgents...), false, false},
		{"every server upgraded, the agents not", append(append([]clusterv1.Machine(nil), newServers...), oldAgents...), true, false},
		{"an old agent is still being deleted", append(append(append([]clusterv1.Machine(nil), newServers...), newAgents...),
			machine("a2", from, false, false, true, true)), true, false},
		{"a new agent is not UpToDate", append(append([]clusterv1.Machine(nil), newServers...),
			machine("a3", to, false, true, true, false), machine("a4", to, false, true, false, false)), true, false},
		{"every Machine upgraded", append(append([]clusterv1.Machine(nil), newServers...), newAgents...), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := upgradeStates([]clusterv1.Cluster{availableCluster("c")}, tc.machines, to)["c"]
			if got := st.serversDone(s); got != tc.serversDone {
				t.Errorf("servers done: got %t, want %t (%+v)", got, tc.serversDone, *st)
			}
			if got := st.done(s); got != tc.isDone {
				t.Errorf("done: got %t, want %t (%+v)", got, tc.isDone, *st)
			}
		})
	}
}

func TestAClusterThatIsNotAvailableIsNotUpgraded(t *testing.T) {
	const to = "v1.32.2"
	c := availableCluster("c")
	c.Status.Conditions[0].Status = metav1.ConditionFalse
	st := upgradeStates([]clusterv1.Cluster{c}, []clusterv1.Machine{machine("s1", to, true, true, true, false)}, to)["c"]
	if st.done(shape{Servers: 1}) {
		t.Errorf("a cluster that is not Available counts as upgraded")
	}
}
