package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/test/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
	"github.com/capk3s/capk3s/internal/workload"

	"github.com/capk3s/capk3s/test/cpfixtures"
)

// reconcileRemediation against the apiserver: an unhealthy server of three is deleted
// and the remediation recorded on the control plane; with two unhealthy servers of
// three nothing is touched, nor with one unhealthy and one whose k3s is being
// restarted (its Node still Ready, its etcd member down meanwhile).
func TestReconcileRemediationDeletesAnUnhealthyServer(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		unhealthy []string
		// restarting marks s3 as a server whose k3s is being restarted.
		restarting map[string]string
		refused    bool
	}{
		{name: "remediated", unhealthy: []string{"s2"}},
		{name: "refused", unhealthy: []string{"s2", "s3"}, refused: true},
		{name: "refused while another server is updated in place", unhealthy: []string{"s2"},
			restarting: map[string]string{clusterv1.UpdateInProgressAnnotation: ""}, refused: true},
		{name: "refused while another server restarts to renew its certificates", unhealthy: []string{"s2"},
			restarting: map[string]string{controlplanev1.CertificatesRenewingAnnotation: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			cluster, kcp, nodes := threeServerControlPlane(t, ns)
			if tc.restarting != nil {
				s3 := &clusterv1.Machine{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s3"}, s3); err != nil {
					t.Fatal(err)
				}
				s3.Annotations = tc.restarting
				if err := env.Client.Update(ctx, s3); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range tc.unhealthy {
				m := &clusterv1.Machine{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
					t.Fatal(err)
				}
				cpfixtures.MarkUnhealthy(m)
				if err := env.Client.Status().Update(ctx, m); err != nil {
					t.Fatal(err)
				}
				delete(nodes, name)
			}

			r := &Reconciler{Client: env.Client}
			machines, err := r.controlPlaneMachines(ctx, cluster, kcp)
			if err != nil {
				t.Fatal(err)
			}
			if machines.Len() != 3 {
				t.Fatalf("control plane machines = %v, want 3", machines.Names())
			}
			kcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
			seen := &observed{machines: machines, nodes: nodes}

			// As Reconcile does: the control plane is patched after the pass.
			patchHelper, err := patch.NewHelper(kcp, env.Client)
			if err != nil {
				t.Fatal(err)
			}
			done, result, err := r.reconcileRemediation(ctx, cluster, kcp, seen)
			if err != nil {
				t.Fatal(err)
			}
			if err := patchHelper.Patch(ctx, kcp); err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter != 0 {
				t.Errorf("RequeueAfter = %s, want none", result.RequeueAfter)
			}

			got := &controlplanev1.KThreesControlPlane{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
				t.Fatal(err)
			}
			cond := conditions.Get(got, remediatingCondition)
			s2 := &clusterv1.Machine{}
			s2Err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s2"}, s2)
			s2Deleted := apierrors.IsNotFound(s2Err) || (s2Err == nil && !s2.DeletionTimestamp.IsZero())

			if tc.refused {
				if done || s2Deleted || s2Err != nil {
					t.Errorf("refused remediation: done = %v, s2 deleted = %v (%v)", done, s2Deleted, s2Err)
				}
				if _, ok := got.Annotations[serverplan.RemediationInProgressAnnotation]; ok || got.Status.LastRemediation != nil {
					t.Errorf("refused remediation recorded one: annotations %v, lastRemediation %+v", got.Annotations, got.Status.LastRemediation)
				}
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != serverplan.RemediationWouldLoseQuorumReason {
					t.Fatalf("Remediating = %+v, want False/%s", cond, serverplan.RemediationWouldLoseQuorumReason)
				}
				if tc.restarting != nil && !strings.Contains(cond.Message, "s3") {
					t.Errorf("Remediating message %q does not name the restarting server s3", cond.Message)
				}
				return
			}

			if !done || !s2Deleted {
				t.Fatalf("done = %v, s2 deleted = %v (%v); want both", done, s2Deleted, s2Err)
			}
			for _, name := range []string{"s1", "s3"} {
				m := &clusterv1.Machine{}
				if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil || !m.DeletionTimestamp.IsZero() {
					t.Errorf("healthy server %s was touched (err %v)", name, err)
				}
			}
			lr := got.Status.LastRemediation
			if lr == nil || lr.Machine != "s2" || lr.RetryCount != 0 || time.Since(lr.Time.Time) > time.Minute {
				t.Errorf("status.lastRemediation = %+v, want s2, retry 0, now", lr)
			}
			data, err := serverplan.ParseRemediationData(got.Annotations[serverplan.RemediationInProgressAnnotation])
			if err != nil || data.Machine != "s2" || data.RetryCount != 0 {
				t.Errorf("in-progress annotation = %q (%v), want machine s2, retry 0", got.Annotations[serverplan.RemediationInProgressAnnotation], err)
			}
			if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "s2") {
				t.Errorf("Remediating = %+v, want True naming s2", cond)
			}
			if _, value, ok := serverplan.RemediationFor(got); !ok || value != got.Annotations[serverplan.RemediationInProgressAnnotation] {
				t.Errorf("remediationFor after remediating = %q, %v; want the in-progress data", value, ok)
			}
		})
	}
}

// A retry inside retryPeriod holds scaling back and asks to be woken when the period
// ends: no watch would report that.
// A mark older than its server's recovery does not hold scaling, but asks to be woken
// when its grace ends: no watch would, since the health check leaves a mark it keeps
// unchanged.
func TestReconcileRemediationAsksToLookAgainAfterAStaleMark(t *testing.T) {
	kcp := cpfixtures.RemediationKCP(true, 3, nil)
	seen := &observed{}
	seen.machines, seen.nodes = cpfixtures.Observe([]cpfixtures.Server{{Name: "a", Ready: true}, {Name: "c", Ready: true},
		{Name: "b", Unhealthy: true, Ready: true, MarkedAgo: time.Hour, ReadyAgo: time.Minute}})
	now := time.Now()
	for _, m := range seen.machines {
		if c := conditions.Get(m, clusterv1.MachineHealthCheckSucceededCondition); c != nil {
			c.LastTransitionTime = metav1.NewTime(now.Add(-time.Hour))
			conditions.Set(m, *c)
		}
	}
	seen.nodes["b"].Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))

	done, result, err := (&Reconciler{}).reconcileRemediation(context.Background(), nil, kcp, seen)
	if err != nil {
		t.Fatal(err)
	}
	if done || result.RequeueAfter <= 50*time.Second || result.RequeueAfter > serverplan.HealthCheckRecheckGrace-time.Minute {
		t.Errorf("done, RequeueAfter = %v, %s; want false, about 1m", done, result.RequeueAfter)
	}
	if c := conditions.Get(kcp, remediatingCondition); c == nil || c.Reason != serverplan.RemediationWaitingForHealthCheckReason {
		t.Errorf("Remediating = %+v, want reason %s", c, serverplan.RemediationWaitingForHealthCheckReason)
	}
}

func TestReconcileRemediationWaitsForRetryPeriod(t *testing.T) {
	kcp := cpfixtures.RemediationKCP(true, 3, &controlplanev1.RemediationStrategy{RetryPeriod: metav1.Duration{Duration: 10 * time.Minute}})
	seen := &observed{}
	seen.machines, seen.nodes = cpfixtures.Observe([]cpfixtures.Server{{Name: "a", Ready: true}, {Name: "c", Ready: true}})
	b := cpfixtures.Server{Name: "b", Unhealthy: true}.Machine()
	last, err := serverplan.RemediationData{Machine: "old", Timestamp: metav1.NewTime(time.Now().Add(-time.Minute)), RetryCount: 1}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b.Annotations = map[string]string{serverplan.RemediationForAnnotation: last}
	seen.machines.Insert(b)

	done, result, err := (&Reconciler{}).reconcileRemediation(context.Background(), nil, kcp, seen)
	if err != nil {
		t.Fatal(err)
	}
	if !done || result.RequeueAfter <= 8*time.Minute || result.RequeueAfter > 9*time.Minute {
		t.Errorf("done, RequeueAfter = %v, %s; want true, about 9m", done, result.RequeueAfter)
	}
	c := conditions.Get(kcp, remediatingCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != serverplan.RemediationWaitingForRetryPeriodReason {
		t.Errorf("Remediating = %+v, want False/%s", c, serverplan.RemediationWaitingForRetryPeriodReason)
	}
	if _, ok := kcp.Annotations[serverplan.RemediationInProgressAnnotation]; ok || kcp.Status.LastRemediation != nil {
		t.Error("a remediation that waits recorded one")
	}
}

// threeServerControlPlane creates a paused control plane of three servers s1..s3 (so
// that a manager running in the package leaves it to direct calls), with their Ready
// Nodes as a pass would see them.
func threeServerControlPlane(t *testing.T, ns string) (*clusterv1.Cluster, *controlplanev1.KThreesControlPlane, workload.Nodes) {
	t.Helper()
	ctx := context.Background()
	cluster, kcp := newClusterWithControlPlane(t, ns, true)
	kcp.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Update(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	nodes := workload.Nodes{}
	for _, name := range []string{"s1", "s2", "s3"} {
		m := desiredMachine(kcp, cluster, name, "", clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.BootstrapGroupVersion.Group, Kind: builder.GenericBootstrapConfigKind, Name: name,
		}, clusterv1.ContractVersionedObjectReference{
			APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachineKind, Name: name,
		})
		if err := env.Client.Create(ctx, m); err != nil {
			t.Fatal(err)
		}
		nodes[name] = cpfixtures.ReadyNode(name)
	}
	return cluster, kcp, nodes
}
