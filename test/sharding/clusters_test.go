package sharding

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/stack"
)

const k3sVersion = "v1.35.4+k3s1"

// newCluster is a cluster of one server and one agent, labelled for the shard
// watchFilter ("" is no label) the way a CAPI user labels one: every object they
// apply, and the MachineDeployment's machine template, which CAPI copies to the
// agents' Machines and KThreesConfigs. The control plane's machine template is left
// as it is: the label on the KThreesControlPlane is the user's whole say.
func newCluster(ns, name, watchFilter string) *stack.Cluster {
	c := stack.NewCluster(stack.ClusterOptions{Namespace: ns, Name: name, Servers: 1, Agents: 1, Version: k3sVersion})
	if watchFilter == "" {
		return c
	}
	for _, o := range c.Objects() {
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[clusterv1.WatchLabel] = watchFilter
		o.SetLabels(labels)
	}
	c.Workers.Spec.Template.Labels[clusterv1.WatchLabel] = watchFilter
	return c
}

func create(ctx context.Context, t *testing.T, c *stack.Cluster) {
	t.Helper()
	for _, o := range c.Objects() {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// waitFor polls cond until it holds or bound passes; the error names the last state
// seen.
func waitFor(ctx context.Context, bound time.Duration, cond func(context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	last := ""
	err := envtest.WaitFor(ctx, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		if err != nil {
			state = err.Error()
		}
		last = state
		return ok && err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w; last seen: %s", err, last)
	}
	return nil
}

// available: the Cluster is Available, with its server and agent ready and available.
func available(c *stack.Cluster) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		cl, kcp, md := &clusterv1.Cluster{}, &controlplanev1.KThreesControlPlane{}, &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.Cluster), cl); err != nil {
			return false, "", err
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.Workers), md); err != nil {
			return false, "", err
		}
		cond := conditions.Get(cl, clusterv1.AvailableCondition)
		state := fmt.Sprintf("Cluster Available: %v; servers ready %d available %d; agents ready %d available %d",
			cond != nil && cond.Status == metav1.ConditionTrue,
			ptr.Deref(kcp.Status.ReadyReplicas, 0), ptr.Deref(kcp.Status.AvailableReplicas, 0),
			ptr.Deref(md.Status.ReadyReplicas, 0), ptr.Deref(md.Status.AvailableReplicas, 0))
		ok := cond != nil && cond.Status == metav1.ConditionTrue &&
			ptr.Deref(kcp.Status.ReadyReplicas, 0) == 1 && ptr.Deref(kcp.Status.AvailableReplicas, 0) == 1 &&
			ptr.Deref(md.Status.ReadyReplicas, 0) == 1 && ptr.Deref(md.Status.AvailableReplicas, 0) == 1
		return ok, state, nil
	}
}

// agentConfigs are the KThreesConfigs of the cluster's agents.
func agentConfigs(ctx context.Context, c *stack.Cluster) ([]bootstrapv1.KThreesConfig, error) {
	configs := &bootstrapv1.KThreesConfigList{}
	err := env.Client.List(ctx, configs, client.InNamespace(c.Cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: c.Cluster.Name, stack.PoolLabel: "agents"})
	return configs.Items, err
}

// hasAgentConfig: CAPI has made the agent's KThreesConfig.
func hasAgentConfig(c *stack.Cluster) func(context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		configs, err := agentConfigs(ctx, c)
		return len(configs) > 0, fmt.Sprintf("%d agent KThreesConfigs", len(configs)), err
	}
}

// untouched says what a capk3s manager would have left on a cluster it handled: a
// control plane status, server Machines, an agent config's status.
func untouched(ctx context.Context, c *stack.Cluster) error {
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c.ControlPlane), kcp); err != nil {
		return err
	}
	if kcp.Status.ObservedGeneration != 0 || len(kcp.Status.Conditions) > 0 {
		return fmt.Errorf("cluster %s: a manager wrote the status of KThreesControlPlane %s", c.Cluster.Name, kcp.Name)
	}
	machines := &clusterv1.MachineList{}
	if err := env.Client.List(ctx, machines, client.InNamespace(c.Cluster.Namespace),
		client.MatchingLabels{clusterv1.MachineControlPlaneNameLabel: kcp.Name}); err != nil {
		return err
	}
	if len(machines.Items) > 0 {
		return fmt.Errorf("cluster %s: a manager created %d server Machines", c.Cluster.Name, len(machines.Items))
	}
	configs, err := agentConfigs(ctx, c)
	if err != nil {
		return err
	}
	for _, cfg := range configs {
		if cfg.Status.ObservedGeneration != 0 || len(cfg.Status.Conditions) > 0 || cfg.Status.DataSecretName != "" {
			return fmt.Errorf("cluster %s: a manager wrote the status of KThreesConfig %s", c.Cluster.Name, cfg.Name)
		}
	}
	return nil
}
