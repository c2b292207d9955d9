package realk3s

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/realk3s/images"
)

// TestHAClusterWithAgents: three servers on embedded etcd and two agents from a
// MachineDeployment, all booted by cloud-init and installed by k3s's install.sh,
// reach Available; the Nodes are Ready; a workload runs on an agent and its log is
// read through the API server (k3s's agent tunnel). With an S3 gateway: an on-demand
// snapshot lands in the bucket, a restore of a missing snapshot is refused with every
// server kept, and a restore brings the cluster back to the snapshot with no agent
// replaced. Before those, a critical setting's change is refused at admission, by
// real k3s when a server joins with it, and held by capk3s when forced past the
// webhook.
func TestHAClusterWithAgents(t *testing.T) {
	startStack(t)
	s := &scenario{t: t, ctx: context.Background(), ns: env.NewNamespace(t)}
	s.c = newCluster(clusterOptions{namespace: s.ns, name: "ha", servers: 3, agents: 2, version: k3sVersion})
	s.key = client.ObjectKeyFromObject(s.c.cluster)
	if s3 != nil {
		s.withSnapshotsToS3()
	}
	start := time.Now()
	for _, o := range s.c.objects() {
		s.must(fmt.Sprintf("creating %T %s", o, o.GetName()), env.Client.Create(s.ctx, o))
	}
	clusterAvailable(t, s.key, 20*time.Minute)
	t.Logf("3 servers + 2 agents: kubectl apply to Available in %s (k3s %s)", time.Since(start).Round(time.Second), k3sVersion)
	s.wc, s.cs = workloadClients(t, s.key)
	nodesReady(t, s.wc, 5)
	t.Logf("all 5 Nodes Ready %s after apply", time.Since(start).Round(time.Second))
	runWorkload(t, s.wc, s.cs)
	s.criticalSettingRefused()
	if s3 == nil {
		t.Logf("no S3 gateway (%s): the snapshot and restore steps are left out", gatewayEnv)
		return
	}
	s.writeMarker("marker-before-snapshot")
	snap := s.snapshotOnDemand("on-demand")
	s.writeMarker("marker-after-snapshot")
	s.restoreOfAMissingSnapshotRefused()
	s.restoreTo(snap, "marker-before-snapshot", "marker-after-snapshot")
}

// runWorkload runs the scenarios' workload on an agent and reads its log through the
// API server, which reaches the kubelet through k3s's tunnel.
func runWorkload(t *testing.T, wc client.Client, cs kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "workload"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workload"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"capk3s.io/role": "agent"},
					Containers: []corev1.Container{{
						Name: "workload", Image: images.WorkloadImage, ImagePullPolicy: corev1.PullNever,
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
					}},
				},
			},
		},
	}
	if err := wc.Create(ctx, d); err != nil {
		t.Fatalf("creating the workload: %v", err)
	}
	var pod corev1.Pod
	eventually(t, 5*time.Minute, "the workload's pod Running", func(ctx context.Context) error {
		pods := &corev1.PodList{}
		if err := wc.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels(labels)); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				pod = p
				return nil
			}
		}
		return fmt.Errorf("pods: %s", podPhases(pods.Items))
	})
	eventually(t, 2*time.Minute, "the workload's log through the API server", func(ctx context.Context) error {
		b, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "workload started") {
			return fmt.Errorf("log: %q", b)
		}
		return nil
	})
	t.Logf("workload pod %s runs on %s; its log came through the API server", pod.Name, pod.Spec.NodeName)
}

func podPhases(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := p.Name + "=" + string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Waiting != nil {
				s += "(" + c.State.Waiting.Reason + ")"
			}
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}
