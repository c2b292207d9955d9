package inplace

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestRestartPlan(t *testing.T) {
	t.Parallel()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "host-1"}}}
	srv := machineNamed("cp-0")
	srv.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	agent := machineNamed("md-0")
	expiry := time.Date(2027, 7, 1, 8, 0, 0, 0, time.UTC)
	o := PlanOptions{Namespace: "system-upgrade", ServiceAccount: "sa", Image: "rancher/k3s-upgrade"}

	for _, tc := range []struct {
		m    *clusterv1.Machine
		unit string
	}{{srv, "k3s"}, {agent, "k3s-agent"}} {
		p := RestartPlan(tc.m, "v1.36.3+k3s1", expiry, o)
		if p.GetNamespace() != "system-upgrade" || !strings.HasPrefix(p.GetName(), "capk3s-renew-"+tc.m.Name+"-") {
			t.Errorf("Plan %s/%s", p.GetNamespace(), p.GetName())
		}
		if err := CheckRestartPlan(p, tc.m); err != nil {
			t.Errorf("%s: %v", p.GetName(), err)
		}
		if p.GetAnnotations()[RenewalExpiryAnnotation] != "2027-07-01T08:00:00Z" || p.GetLabels()[clusterv1.ClusterNameLabel] != "c1" {
			t.Errorf("metadata %v %v", p.GetLabels(), p.GetAnnotations())
		}
		// The image's own script would not restart k3s on the same version: the
		// container restarts the role's unit in the host instead.
		cmd, _, _ := unstructured.NestedStringSlice(p.Object, "spec", "upgrade", "command")
		if want := []string{"chroot", "/host", "systemctl", "restart", tc.unit}; !reflect.DeepEqual(cmd, want) {
			t.Errorf("command = %v, want %v", cmd, want)
		}
		for path, want := range map[string]any{"version": "v1.36.3+k3s1", "concurrency": int64(1), "serviceAccountName": "sa"} {
			if got, _, _ := unstructured.NestedFieldNoCopy(p.Object, "spec", path); got != want {
				t.Errorf("spec.%s = %v, want %v", path, got, want)
			}
		}
		if img, _, _ := unstructured.NestedString(p.Object, "spec", "upgrade", "image"); img != "rancher/k3s-upgrade" {
			t.Errorf("image = %q", img)
		}
		// A restart keeps the workloads: nothing is cordoned or drained.
		spec := p.Object["spec"].(map[string]any)
		if _, ok := spec["cordon"]; ok {
			t.Errorf("a restart Plan cordons")
		}
		if _, ok := spec["drain"]; ok {
			t.Errorf("a restart Plan drains")
		}
		if !selects(t, p, map[string]string{corev1.LabelHostname: "host-1", RestartTargetLabel: p.GetName()}) {
			t.Errorf("the Plan does not select the Node labelled %s=%s: %v", RestartTargetLabel, p.GetName(), spec)
		}
		if selects(t, p, node.Labels) {
			t.Errorf("the Plan selects a Node by its host name alone, which its kubelet may set")
		}
	}
}

// The restart Plan's version picks the image SUC runs privileged on the Node: it is
// the Machine's, never what the Node reports of itself.
func TestRestartVersion(t *testing.T) {
	t.Parallel()
	m := machineNamed("md-0")
	m.Spec.Version = "v1.36.3+k3s1"
	if got := RestartVersion(m, "v1.35.4+k3s1"); got != "v1.36.3+k3s1" {
		t.Errorf("RestartVersion = %q, want the Machine's v1.36.3+k3s1", got)
	}
	m.Spec.Version = ""
	if got := RestartVersion(m, "v1.35.4+k3s1"); got != "v1.35.4+k3s1" {
		t.Errorf("RestartVersion of a Machine without a version = %q, want the control plane's v1.35.4+k3s1", got)
	}
}

// SUC skips a Node labelled with a Plan's hash, which covers only the version, the
// service account and secrets: each expiry gets a Plan of its own name, so that next
// year's restart at the same version still runs.
func TestRenewalPlanName(t *testing.T) {
	t.Parallel()
	m := machineNamed("cp-0")
	a := RenewalPlanName(m, time.Date(2027, 7, 1, 8, 0, 0, 0, time.UTC))
	b := RenewalPlanName(m, time.Date(2028, 7, 1, 8, 0, 0, 0, time.UTC))
	if a == b {
		t.Errorf("two expiries share Plan %s", a)
	}
	if a != RenewalPlanName(m, time.Date(2027, 7, 1, 10, 0, 0, 0, time.FixedZone("x", 2*3600))) {
		t.Errorf("the same instant in another zone names another Plan")
	}
	long := machineNamed(strings.Repeat("m", 80))
	if n := RenewalPlanName(long, time.Now()); len(n) > maxPlanName {
		t.Errorf("name %q is %d characters, over SUC's label limit", n, len(n))
	}
	other := machineNamed("cp-0")
	other.Namespace = "ns2"
	if RenewalPlanName(other, time.Date(2027, 7, 1, 8, 0, 0, 0, time.UTC)) == a {
		t.Errorf("Machines of two namespaces share a Plan")
	}
}

func TestRestartDone(t *testing.T) {
	t.Parallel()
	p := RestartPlan(machineNamed("md-0"), "v1.36.3+k3s1", time.Now(), PlanOptions{})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}}}
	if RestartDone(p, node) {
		t.Errorf("done before SUC resolved the Plan")
	}
	_ = unstructured.SetNestedField(p.Object, "h1", "status", "latestHash")
	if RestartDone(p, node) {
		t.Errorf("done before the Job ran on the Node")
	}
	node.Labels[sucPlanLabelPrefix+p.GetName()] = "h0"
	if RestartDone(p, node) {
		t.Errorf("done with an older hash on the Node")
	}
	node.Labels[sucPlanLabelPrefix+p.GetName()] = "h1"
	if !RestartDone(p, node) || RestartDone(p, nil) {
		t.Errorf("SUC's label for the Plan's hash is the restart done; no Node is not")
	}
	notOurs := p.DeepCopy()
	notOurs.SetLabels(nil)
	if CheckRestartPlan(notOurs, machineNamed("md-0")) == nil || CheckRestartPlan(p, machineNamed("md-1")) == nil {
		t.Errorf("a Plan not made for the Machine is accepted")
	}
}
