package controlplane

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/workload"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

func TestServerRestartBlocked(t *testing.T) {
	three := collections.FromMachines(
		cpfixtures.ServerMachine("a"),
		cpfixtures.ServerMachine("b"),
		cpfixtures.ServerMachine("c"),
	)
	kcp := cpfixtures.DecisionKCP(3, nil)
	removed := cpfixtures.ReadyNodes("a", "b", "c")
	removed["b"].Annotations = map[string]string{k3s.EtcdRemovedNodeNameAnnotation: "b"}
	one := collections.FromMachines(cpfixtures.ServerMachine("a"))
	deleting := three.DeepCopy()
	deleting["c"].DeletionTimestamp = ptr.To(metav1.NewTime(time.Now()))
	notInitialized := cpfixtures.DecisionKCP(3, nil)
	notInitialized.Status.Initialization.ControlPlaneInitialized = nil
	cases := []struct {
		name     string
		kcp      *controlplanev1.KThreesControlPlane
		machines collections.Machines
		nodes    workload.Nodes
		want     string
	}{
		{"all healthy", kcp, three, cpfixtures.ReadyNodes("a", "b", "c"), ""},
		{"another server's Node not Ready", kcp, three, cpfixtures.ReadyNodes("a", "b"), "waiting for the node of Machine c to be Ready"},
		{"unreachable", kcp, three, nil, serverplan.BlockedUnreachable},
		{"a server being deleted", kcp, deleting, cpfixtures.ReadyNodes("a", "b", "c"), "waiting for Machine c to be deleted"},
		{"not initialized", notInitialized, three, cpfixtures.ReadyNodes("a", "b", "c"), "waiting for the first server"},
		{"another member removed: the restart would lose quorum", kcp, three, removed, "restarting k3s on a would leave 1 of 3 etcd members healthy, fewer than a quorum of 2"},
		{"a single server has no quorum to keep", cpfixtures.DecisionKCP(1, nil), one, cpfixtures.ReadyNodes("a"), ""},
		{"external datastore: the others serve", cpfixtures.OnDatastore(cpfixtures.DecisionKCP(3, nil)), three, removed, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := serverRestartBlocked(tc.kcp, tc.machines, tc.nodes, tc.machines["a"])
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("blocked = %q, want %q", got, tc.want)
			}
		})
	}
}
