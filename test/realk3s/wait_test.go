package realk3s

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/realk3s/provider"
)

// eventually polls check every 2 s until it passes or timeout ends, then fails the
// test with check's last error and the machines' logs.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(ctx); err == nil {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	dumpMachines(t)
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

// clusterAvailable waits for the Cluster's Available condition.
func clusterAvailable(t *testing.T, key client.ObjectKey, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "Cluster "+key.Name+" Available", func(ctx context.Context) error {
		c := &clusterv1.Cluster{}
		if err := env.Client.Get(ctx, key, c); err != nil {
			return err
		}
		if cond := conditions.Get(c, clusterv1.AvailableCondition); cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("Available: %v", cond)
		}
		return nil
	})
}

// workloadConfig reaches the workload cluster through its kubeconfig Secret, as CAPI
// does.
func workloadConfig(t *testing.T, key client.ObjectKey) *rest.Config {
	t.Helper()
	cfg, err := provider.WorkloadConfig(context.Background(), env.Client, key)
	if err != nil {
		t.Fatalf("workload cluster %s: %v", key, err)
	}
	return cfg
}

func workloadClients(t *testing.T, key client.ObjectKey) (client.Client, kubernetes.Interface) {
	t.Helper()
	cfg := workloadConfig(t, key)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs
}

// freshClient reaches the workload cluster on a connection of its own (a dialer in
// the config keeps client-go from sharing its cached transport); the returned func
// closes it.
func freshClient(t *testing.T, key client.ObjectKey) (client.Client, func()) {
	t.Helper()
	cfg := workloadConfig(t, key)
	cfg.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return c, hc.CloseIdleConnections
}

// nodesReady waits until the workload cluster has exactly want Nodes, all Ready.
func nodesReady(t *testing.T, wc client.Client, want int) {
	t.Helper()
	eventually(t, 10*time.Minute, fmt.Sprintf("%d Ready Nodes", want), func(ctx context.Context) error {
		nodes := &corev1.NodeList{}
		if err := wc.List(ctx, nodes); err != nil {
			return err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if len(nodes.Items) != want || ready != want {
			return fmt.Errorf("%d Nodes, %d Ready", len(nodes.Items), ready)
		}
		return nil
	})
}

// dumpMachines logs the end of each machine's logs: its console, the supervisor's,
// k3s's and cloud-init's.
func dumpMachines(t *testing.T) {
	t.Helper()
	if layer == nil {
		return
	}
	for _, m := range layer.Machines() {
		for _, f := range []string{"console.log", "upper/var/log/realk3s/stage-exits", "upper/var/log/minisystemd/minisystemd.log",
			"upper/var/log/cloud-init-output.log", "upper/var/log/minisystemd/k3s.log", "upper/var/log/minisystemd/k3s-agent.log"} {
			b, err := os.ReadFile(filepath.Join(m.Dir(), f))
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if len(lines) > 25 {
				lines = lines[len(lines)-25:]
			}
			t.Logf("--- %s (%s) %s:\n%s", m.Name, m.Address, f, strings.Join(lines, "\n"))
		}
	}
}
