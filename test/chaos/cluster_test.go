package chaos

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/stack"
)

const (
	oldVersion = "v1.35.4+k3s1"
	newVersion = "v1.36.1+k3s1"
	// stepTimeout bounds each step of a cluster's timeline while the faults go on: a
	// killed leader costs the lease (4 s) and a restart, an apiserver restart a few
	// seconds more, and there is one every few seconds.
	stepTimeout = 5 * time.Minute
)

// chaosCluster is one cluster of a round, and what the checkers know of it.
type chaosCluster struct {
	key  types.NamespacedName
	objs *stack.Cluster
	t    *tracked
	// abort, if it returns an error, ends every wait early: an invariant broke.
	abort func() error
}

func newChaosCluster(reg *registry, ns, name string, servers, agents int32, abort func() error) *chaosCluster {
	objs := stack.NewCluster(stack.ClusterOptions{Namespace: ns, Name: name, Servers: servers, Agents: agents, Version: oldVersion})
	key := types.NamespacedName{Namespace: ns, Name: name}
	return &chaosCluster{key: key, objs: objs, t: reg.add(key, objs.ControlPlane.Name, servers), abort: abort}
}

// retry calls f until it succeeds: the apiserver may be restarting.
func retry(ctx context.Context, what string, f func(ctx context.Context) error) error {
	var last error
	err := envtest.Eventually(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		if last != nil {
			time.Sleep(500 * time.Millisecond)
		}
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %w)", what, err, last)
	}
	return nil
}

func (c *chaosCluster) create(ctx context.Context) error {
	for _, o := range c.objs.Objects() {
		if err := retry(ctx, "creating "+o.GetName(), func(ctx context.Context) error {
			err := env.Client.Create(ctx, o)
			if err != nil && client.IgnoreAlreadyExists(err) == nil {
				return nil
			}
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// patchKCP changes the control plane's spec.
func (c *chaosCluster) patchKCP(ctx context.Context, change func(*controlplanev1.KThreesControlPlane)) error {
	return retry(ctx, "patching the KThreesControlPlane", func(ctx context.Context) error {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.objs.ControlPlane), kcp); err != nil {
			return err
		}
		before := kcp.DeepCopy()
		change(kcp)
		return env.Client.Patch(ctx, kcp, client.MergeFrom(before))
	})
}

// setServers asks for n servers.
func (c *chaosCluster) setServers(ctx context.Context, n int32) error {
	c.t.setReplicas(n)
	return c.patchKCP(ctx, func(k *controlplanev1.KThreesControlPlane) { k.Spec.Replicas = ptr.To(n) })
}

// rolloutAgents restarts the agents' rollout and returns when it asked.
func (c *chaosCluster) rolloutAgents(ctx context.Context) (time.Time, error) {
	at := time.Now().Truncate(time.Second)
	return at, retry(ctx, "patching the MachineDeployment", func(ctx context.Context) error {
		md := &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.objs.Workers), md); err != nil {
			return err
		}
		before := md.DeepCopy()
		md.Spec.Rollout.After = metav1.NewTime(at)
		return env.Client.Patch(ctx, md, client.MergeFrom(before))
	})
}

// wait polls cond until it holds, the timeout passes, or abort reports a problem.
// Errors reading count as "not yet": the apiserver may be restarting.
func (c *chaosCluster) wait(ctx context.Context, what string, timeout time.Duration, cond func(ctx context.Context) (bool, string, error)) error {
	last := ""
	err := envtest.Eventually(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := c.abort(); err != nil {
			return false, err
		}
		ok, state, err := cond(ctx)
		if err != nil {
			state = err.Error()
		}
		if state != "" {
			last = state
		}
		time.Sleep(200 * time.Millisecond)
		return ok && err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: waiting for %s: %w; last seen: %s", c.key, what, err, last)
	}
	return nil
}

// serversReady: want servers, all Ready, Available, UpToDate at version, each with
// its Node, and as many etcd members.
func (c *chaosCluster) serversReady(want int32, version string) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		machines := &clusterv1.MachineList{}
		if err := env.Client.List(ctx, machines, client.InNamespace(c.key.Namespace),
			client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: kcp.Name}); err != nil {
			return false, "", err
		}
		st := kcp.Status
		members := simulator.EtcdMembers(c.key)
		state := fmt.Sprintf("servers: replicas=%d ready=%d available=%d upToDate=%d; %d Machines; %d etcd members",
			ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1),
			ptr.Deref(st.UpToDateReplicas, -1), len(machines.Items), len(members))
		ok := kcp.Status.ObservedGeneration == kcp.Generation &&
			ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines.Items) == int(want) && allUpToDate(machines.Items, version, time.Time{}) && len(members) == int(want)
		return ok, state, nil
	}
}

// agentsReady: want agents, all Ready, Available, UpToDate, created after since.
func (c *chaosCluster) agentsReady(want int32, since time.Time) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		md := &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.objs.Workers), md); err != nil {
			return false, "", err
		}
		machines := &clusterv1.MachineList{}
		if err := env.Client.List(ctx, machines, client.InNamespace(c.key.Namespace), client.MatchingLabels{stack.PoolLabel: "agents"}); err != nil {
			return false, "", err
		}
		st := md.Status
		state := fmt.Sprintf("agents: replicas=%d ready=%d available=%d upToDate=%d; %d Machines",
			ptr.Deref(st.Replicas, -1), ptr.Deref(st.ReadyReplicas, -1), ptr.Deref(st.AvailableReplicas, -1),
			ptr.Deref(st.UpToDateReplicas, -1), len(machines.Items))
		ok := md.Status.ObservedGeneration == md.Generation &&
			ptr.Deref(st.Replicas, -1) == want && ptr.Deref(st.ReadyReplicas, -1) == want &&
			ptr.Deref(st.AvailableReplicas, -1) == want && ptr.Deref(st.UpToDateReplicas, -1) == want &&
			len(machines.Items) == int(want) && allUpToDate(machines.Items, md.Spec.Template.Spec.Version, since)
		return ok, state, nil
	}
}

// available: the Cluster's Available condition is true.
func (c *chaosCluster) available(ctx context.Context) (bool, string, error) {
	cl := &clusterv1.Cluster{}
	if err := env.Client.Get(ctx, c.key, cl); err != nil {
		return false, "", err
	}
	cond := conditions.Get(cl, clusterv1.AvailableCondition)
	if cond == nil {
		return false, "Cluster: no Available condition", nil
	}
	return cond.Status == metav1.ConditionTrue, "Cluster: Available " + string(cond.Status) + ": " + cond.Reason, nil
}

// allUpToDate: every Machine runs version with its Node, is not being deleted, has
// UpToDate true, and was created no earlier than since.
func allUpToDate(machines []clusterv1.Machine, version string, since time.Time) bool {
	for _, m := range machines {
		if !m.Status.NodeRef.IsDefined() || m.Spec.Version != version || !m.DeletionTimestamp.IsZero() ||
			!conditions.IsTrue(&m, clusterv1.MachineUpToDateCondition) || m.CreationTimestamp.Time.Before(since) {
			return false
		}
	}
	return true
}

// converged is every condition of a finished cluster at once.
func (c *chaosCluster) converged(servers int32, version string, agents int32) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		var states []string
		for _, cond := range []func(context.Context) (bool, string, error){
			c.available, c.serversReady(servers, version), c.agentsOrNone(agents),
		} {
			ok, state, err := cond(ctx)
			if err != nil || !ok {
				return false, state, err
			}
			states = append(states, state)
		}
		return true, fmt.Sprint(states), nil
	}
}

func (c *chaosCluster) agentsOrNone(agents int32) func(ctx context.Context) (bool, string, error) {
	if c.objs.Workers == nil {
		return func(context.Context) (bool, string, error) { return true, "", nil }
	}
	return c.agentsReady(agents, time.Time{})
}

// workloadPort is the port of the kube-apiserver process behind the cluster's endpoint.
func (c *chaosCluster) workloadPort(context.Context) (int, error) {
	return simulator.WorkloadAPIPort(c.key)
}
