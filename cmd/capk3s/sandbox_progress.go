package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
	"github.com/capk3s/capk3s/test/stack"
)

// progressInterval is how often the sandbox looks at the demo cluster: it reports to
// a person, who needs no faster news.
const progressInterval = time.Second

// watchProgress prints a line each time the demo cluster's state changes, until the
// Cluster is Available with every server and agent ready.
func watchProgress(ctx context.Context, env *envtest.Environment, demo *stack.Cluster, say func(string, ...any)) error {
	last := ""
	start := time.Now()
	return envtest.WaitFor(ctx, progressInterval, func(ctx context.Context) (bool, error) {
		line, done, err := progress(ctx, env.Client, demo)
		if err != nil {
			return false, err
		}
		if line != last {
			say("[%3ds] %s", int(time.Since(start).Seconds()), line)
			last = line
		}
		return done, nil
	})
}

// progress describes the demo cluster in one line and says whether it is all up.
func progress(ctx context.Context, c client.Client, demo *stack.Cluster) (string, bool, error) {
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(demo.Cluster), cluster); err != nil {
		return "", false, err
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(demo.ControlPlane), kcp); err != nil {
		return "", false, err
	}
	servers := fmt.Sprintf("servers %d/%d ready", ptr.Deref(kcp.Status.ReadyReplicas, 0), ptr.Deref(kcp.Spec.Replicas, 0))
	done := ptr.Deref(kcp.Status.ReadyReplicas, 0) == ptr.Deref(kcp.Spec.Replicas, 0)
	agents := ""
	if demo.Workers != nil {
		md := &clusterv1.MachineDeployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(demo.Workers), md); err != nil {
			return "", false, err
		}
		agents = fmt.Sprintf(", agents %d/%d ready", ptr.Deref(md.Status.ReadyReplicas, 0), ptr.Deref(md.Spec.Replicas, 0))
		done = done && ptr.Deref(md.Status.ReadyReplicas, 0) == ptr.Deref(md.Spec.Replicas, 0)
	}
	available := "Available: not reported yet"
	if cond := conditions.Get(cluster, clusterv1.AvailableCondition); cond != nil {
		available = "Available=" + string(cond.Status)
		if cond.Status != metav1.ConditionTrue {
			available += " (" + cond.Reason + ")"
		}
		done = done && cond.Status == metav1.ConditionTrue
	} else {
		done = false
	}
	return servers + agents + ", " + available, done, nil
}

// writeWorkloadKubeconfig saves the kubeconfig capk3s wrote for the demo cluster.
func writeWorkloadKubeconfig(ctx context.Context, env *envtest.Environment, demo *stack.Cluster, path string) error {
	data, err := kubeconfig.FromSecret(ctx, env.Client, client.ObjectKeyFromObject(demo.Cluster))
	if err != nil {
		return fmt.Errorf("reading the demo cluster's kubeconfig: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}
