package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

const (
	// unhealthyAfter is how long a server's Node may be NotReady before the
	// MachineHealthCheck marks it: short, for the scenario's runtime.
	unhealthyAfter = 15 * time.Second
	// noDeletionWindow is how long a refusal to remediate is watched for a deletion
	// that should not come; several passes of the control plane and of the health
	// check (rate-limited to one per 15 s) fit in it.
	noDeletionWindow = 20 * time.Second

	// The KThreesControlPlane's Remediating condition and the reasons seen here.
	remediatingCondition     = "Remediating"
	notRemediatingReason     = "NotRemediating"
	wouldLoseQuorumReason    = "WouldLoseEtcdQuorum"
	remediationForAnnotation = "controlplane.cluster.x-k8s.io/remediation-for"
)

// TestRemediationMachineHealthCheck: a MachineHealthCheck watches three servers. When
// k3s stops on one, capk3s replaces it without losing etcd quorum or touching the
// token; when the kubelets of two report NotReady, capk3s refuses, since deleting
// either would lose quorum, says so in Remediating, deletes nothing, and the cluster
// comes back when the Nodes do.
func TestRemediationMachineHealthCheck(t *testing.T) {
	start := time.Now()
	s := newScenarioWith(t, stack.ClusterOptions{Servers: 3, Version: oldestVersion})
	s.create()
	s.must("creating the MachineHealthCheck", env.Client.Create(s.ctx, s.serverHealthCheck()))
	s.waitServers(3, s.version)
	s.clusterAvailable()
	s.waitHealthCheck(3)
	value := string(s.tokenSecret().Data["value"])

	// One server's k3s stops: its Node goes Unknown and its etcd member down.
	before := s.serverNames()
	victim := sets.List(before)[0]
	stoppedAt := time.Now()
	s.setNodeReady(victim, simv1.NodeReadyUnknown)
	s.eventually("the stopped server to be replaced", func(ctx context.Context) (bool, string, error) {
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		names := sets.New[string]()
		for _, m := range machines {
			names.Insert(m.Name)
		}
		return !names.Has(victim) && names.Len() == 3, fmt.Sprintf("servers %v", sets.List(names)), nil
	})
	s.waitServers(3, s.version)
	t.Logf("server %s replaced %s after its k3s stopped", victim, time.Since(stoppedAt).Round(time.Second))
	after := s.serverNames()
	added := after.Difference(before)
	if after.Has(victim) || added.Len() != 1 {
		t.Fatalf("servers %v after remediating %s (had %v): want the victim gone and one new server", sets.List(after), victim, sets.List(before))
	}
	s.checkReplacement(sets.List(added)[0], victim)
	s.waitHealthCheck(3)

	// Two servers' kubelets report NotReady: etcd still runs on them, but capk3s
	// cannot tell, and deleting either would leave one Ready server of two.
	deletions := watchServerDeletions(t, s.ns)
	deletions.arm()
	pair := sets.List(after)[:2]
	for _, name := range pair {
		s.setNodeReady(name, simv1.NodeReadyFalse)
	}
	refusal := s.waitRemediating(wouldLoseQuorumReason)
	t.Logf("remediation refused: %s", refusal.Message)
	for _, want := range []string{"would lose etcd quorum", "2 servers would remain, 1 of them healthy", "quorum needs 2"} {
		if !strings.Contains(refusal.Message, want) {
			t.Errorf("Remediating message %q does not say %q", refusal.Message, want)
		}
	}
	if !strings.Contains(refusal.Message, pair[0]) && !strings.Contains(refusal.Message, pair[1]) {
		t.Errorf("Remediating message %q names neither unhealthy server %v", refusal.Message, pair)
	}
	s.waitMarkedUnhealthy(pair)
	s.holdWithoutDeletion(deletions, after)

	// The kubelets recover: everything clears, and nothing was deleted.
	for _, name := range pair {
		s.setNodeReady(name, simv1.NodeReadyTrue)
	}
	s.waitServers(3, s.version)
	s.clusterAvailable()
	s.waitHealthCheck(3)
	s.waitRemediating(notRemediatingReason)
	s.waitRemediationCleared(pair)
	if got := deletions.seen(); len(got) > 0 {
		t.Errorf("servers deleted although remediation was refused: %v", got)
	}
	if now := s.serverNames(); !now.Equal(after) {
		t.Errorf("servers %v after the refused remediation, want %v", sets.List(now), sets.List(after))
	}
	if simulator.QuorumLost(s.key) {
		t.Error("etcd lost quorum")
	}
	if got := string(s.tokenSecret().Data["value"]); got != value {
		t.Error("the token's value changed during remediation")
	}
	s.token.check(t)
	t.Logf("scenario took %s", time.Since(start).Round(time.Second))
}

// serverHealthCheck is a MachineHealthCheck of the cluster's servers: Ready False or
// Unknown for unhealthyAfter marks a server unhealthy. A simulated machine gets its
// Node in seconds; the startup timeout only keeps a stuck one from waiting forever.
func (s *scenario) serverHealthCheck() *clusterv1.MachineHealthCheck {
	timeout := ptr.To(int32(unhealthyAfter / time.Second))
	return &clusterv1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.key.Name + "-servers"},
		Spec: clusterv1.MachineHealthCheckSpec{
			ClusterName: s.key.Name,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{
				clusterv1.ClusterNameLabel: s.key.Name, clusterv1.MachineControlPlaneLabel: "",
			}},
			Checks: clusterv1.MachineHealthCheckChecks{
				NodeStartupTimeoutSeconds: ptr.To(int32(waitTimeout / time.Second)),
				UnhealthyNodeConditions: []clusterv1.UnhealthyNodeCondition{
					{Type: corev1.NodeReady, Status: corev1.ConditionFalse, TimeoutSeconds: timeout},
					{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, TimeoutSeconds: timeout},
				},
			},
		},
	}
}

// setNodeReady makes the simulator hold the Node of a Machine at a health
// (simv1.NodeReady*).
func (s *scenario) setNodeReady(machine, health string) {
	s.t.Helper()
	m := &clusterv1.Machine{}
	s.must("reading Machine "+machine, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: machine}, m))
	sm := &simv1.SimMachine{}
	s.must("reading SimMachine of "+machine, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: m.Spec.InfrastructureRef.Name}, sm))
	before := sm.DeepCopy()
	if sm.Annotations == nil {
		sm.Annotations = map[string]string{}
	}
	sm.Annotations[simv1.NodeReadyAnnotation] = health
	s.must("annotating SimMachine "+sm.Name, env.Client.Patch(s.ctx, sm, client.MergeFrom(before)))
}

// waitHealthCheck waits until the MachineHealthCheck has looked at its 3 servers
// and found healthy of them healthy, and every server's HealthCheckSucceeded agrees.
func (s *scenario) waitHealthCheck(healthy int32) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("the MachineHealthCheck to count %d healthy servers", healthy), func(ctx context.Context) (bool, string, error) {
		mhc := &clusterv1.MachineHealthCheck{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.key.Name + "-servers"}, mhc); err != nil {
			return false, "", err
		}
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		passed := 0
		for _, m := range machines {
			if conditions.IsTrue(&m, clusterv1.MachineHealthCheckSucceededCondition) {
				passed++
			}
		}
		st := mhc.Status
		state := fmt.Sprintf("expected=%d currentHealthy=%d, %d servers passed", ptr.Deref(st.ExpectedMachines, -1), ptr.Deref(st.CurrentHealthy, -1), passed)
		return st.ObservedGeneration == mhc.Generation && ptr.Deref(st.ExpectedMachines, -1) == 3 &&
			ptr.Deref(st.CurrentHealthy, -1) == healthy && passed == int(healthy), state, nil
	})
}

// waitMarkedUnhealthy waits until the MachineHealthCheck marked the servers unhealthy
// and handed them to their owner.
func (s *scenario) waitMarkedUnhealthy(names []string) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("servers %v to be marked for remediation", names), func(ctx context.Context) (bool, string, error) {
		var state []string
		ok := true
		for _, name := range names {
			m := &clusterv1.Machine{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, m); err != nil {
				return false, "", err
			}
			marked := conditions.IsFalse(m, clusterv1.MachineHealthCheckSucceededCondition) && conditions.IsFalse(m, clusterv1.MachineOwnerRemediatedCondition)
			ok = ok && marked
			state = append(state, fmt.Sprintf("%s marked=%t", name, marked))
		}
		return ok, strings.Join(state, ", "), nil
	})
}

// waitRemediating waits for the control plane's Remediating condition to have the
// reason, and returns it.
func (s *scenario) waitRemediating(reason string) metav1.Condition {
	s.t.Helper()
	var got metav1.Condition
	s.eventually("Remediating reason "+reason, func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		c := conditions.Get(kcp, remediatingCondition)
		if c == nil {
			return false, "no Remediating condition", nil
		}
		got = *c
		return c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
	return got
}

// checkReplacement checks what capk3s recorded about the remediation: the new server
// carries the remediation it replaces, and the control plane's lastRemediation names
// the victim.
func (s *scenario) checkReplacement(replacement, victim string) {
	s.t.Helper()
	m := &clusterv1.Machine{}
	s.must("reading Machine "+replacement, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: replacement}, m))
	if v := m.Annotations[remediationForAnnotation]; !strings.Contains(v, `"machine":"`+victim+`"`) {
		s.t.Errorf("replacement %s has %s=%q, want it to name %s", replacement, remediationForAnnotation, v, victim)
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading KThreesControlPlane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	if lr := kcp.Status.LastRemediation; lr == nil || lr.Machine != victim || lr.RetryCount != 0 {
		s.t.Errorf("status.lastRemediation = %+v, want machine %s, retry 0", lr, victim)
	}
}

// holdWithoutDeletion watches for noDeletionWindow that the servers stay as they
// are, failing at once if one is deleted.
func (s *scenario) holdWithoutDeletion(deletions *deletionWatch, servers sets.Set[string]) {
	s.t.Helper()
	deadline := time.Now().Add(noDeletionWindow)
	for time.Now().Before(deadline) {
		if err := s.healthy(s.ctx); err != nil {
			s.t.Fatalf("while remediation is refused: %v", err)
		}
		if got := deletions.seen(); len(got) > 0 {
			s.dump()
			s.t.Fatalf("servers deleted although remediation would lose quorum: %v", got)
		}
		if now := s.serverNames(); !now.Equal(servers) {
			s.t.Fatalf("servers became %v, want %v", sets.List(now), sets.List(servers))
		}
		time.Sleep(time.Second)
	}
}

// waitRemediationCleared waits until servers that recovered before their owner
// remediated them no longer say they wait for it: the owner drops OwnerRemediated
// once HealthCheckSucceeded is True again, as KubeadmControlPlane does.
func (s *scenario) waitRemediationCleared(names []string) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("servers %v to drop OwnerRemediated", names), func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, name := range names {
			m := &clusterv1.Machine{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, m); err != nil {
				return false, "", err
			}
			if c := conditions.Get(m, clusterv1.MachineOwnerRemediatedCondition); c != nil {
				waiting = append(waiting, fmt.Sprintf("%s OwnerRemediated=%s %s %q", name, c.Status, c.Reason, c.Message))
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	})
}
