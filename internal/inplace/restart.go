package inplace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A restart Plan renews a node's k3s certificates: k3s regenerates at start the leaf
// certificates that expire within 120 days (pkg/daemons/control/deps/deps.go, k3s
// v1.34-v1.36), and an agent asks the server for its certificates at every start. The
// k3s-upgrade image's own script does not serve: it exits without restarting k3s when
// the binary is the running one. So the Plan's upgrade container runs, in the host,
// systemctl restart on the unit k3s's install script creates (k3s for servers,
// k3s-agent for agents). SUC runs that container privileged, with the host's root at
// /host and the host's PID namespace; the image (Alpine) has chroot. Hosts whose k3s
// is not run by systemd (OpenRC) cannot be restarted this way; the Plan's Job fails
// and the failure is reported.

// ErrNoSUC means the workload cluster cannot run Plans (no Plan kind, or no available
// system-upgrade-controller); its message says which.
var ErrNoSUC = errNoSUC

// SUCNamespace is the namespace of the workload cluster's available SUC (where Plans
// go), or an error: wrapping ErrNoSUC when SUC is missing, another when the cluster
// could not be asked.
func SUCNamespace(ctx context.Context, c client.Client) (string, error) {
	suc, err := findSUC(ctx, c)
	return suc.namespace, err
}

const (
	// renewPlanPrefix starts the restart Plans' names.
	renewPlanPrefix = "capk3s-renew-"
	// RenewalLabel marks a restart Plan, so that it is told from upgrade Plans.
	RenewalLabel = "controlplane.cluster.x-k8s.io/k3s-certificates-renewal"
	// RenewalExpiryAnnotation on a restart Plan holds the expiry (RFC 3339) it renews.
	RenewalExpiryAnnotation = "controlplane.cluster.x-k8s.io/k3s-certificates-expiry"
	// sucPlanLabelPrefix: SUC labels a Node plan.upgrade.cattle.io/<plan>=<hash> when
	// the Plan's Job completed there.
	sucPlanLabelPrefix = "plan.upgrade.cattle.io/"
)

// RenewalPlanName is the restart Plan of one Machine for one reported expiry. SUC
// skips a Node already labelled with the Plan's hash, and the hash covers only the
// version, service account and secrets: a second restart under the same name and
// version (a year later) would never run. A name per expiry gives each renewal its
// own label.
func RenewalPlanName(machine *clusterv1.Machine, expiry time.Time) string {
	sum := sha256.Sum256([]byte(machine.Namespace + "/" + machine.Name + "/" + expiry.UTC().Format(time.RFC3339)))
	suffix := hex.EncodeToString(sum[:])[:8]
	name := renewPlanPrefix + machine.Name
	if max := maxPlanName - len(suffix) - 1; len(name) > max {
		name = name[:max]
	}
	return strings.TrimRight(name, "-.") + "-" + suffix
}

// K3sUnit is the systemd unit k3s's install script creates for the role: k3s for a
// server, k3s-agent for an agent.
func K3sUnit(machine *clusterv1.Machine) string {
	if isServer(machine) {
		return "k3s"
	}
	return "k3s-agent"
}

// RestartPlan restarts k3s on the Machine's Node once, to renew the certificates that
// expire at expiry. version is the Machine's k3s (RestartVersion): SUC tags the image
// with it (an upgrade image exists for every k3s release) and the container never
// replaces the binary. Only the Node labelled RestartTargetLabel=<the Plan's name> is
// selected (plantarget.go); nothing is cordoned or drained, since a k3s restart leaves
// the workloads running (the unit's KillMode keeps containerd's shims). The Job
// tolerates every taint.
func RestartPlan(machine *clusterv1.Machine, version string, expiry time.Time, o PlanOptions) *unstructured.Unstructured {
	spec := nodePlanSpec(RestartTargetLabel, RenewalPlanName(machine, expiry), version, o)
	spec["upgrade"] = map[string]any{
		"image":   o.Image,
		"command": []any{"chroot", "/host", "systemctl", "restart", K3sUnit(machine)},
	}
	p := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	p.SetGroupVersionKind(planGVK)
	p.SetNamespace(o.Namespace)
	p.SetName(RenewalPlanName(machine, expiry))
	p.SetLabels(map[string]string{clusterv1.ClusterNameLabel: machine.Spec.ClusterName, RenewalLabel: "true"})
	p.SetAnnotations(map[string]string{
		MachineAnnotation:       machine.Namespace + "/" + machine.Name,
		RenewalExpiryAnnotation: expiry.UTC().Format(time.RFC3339),
	})
	return p
}

// RestartVersion is the k3s version a restart Plan names, which picks the upgrade
// image SUC runs: the Machine's spec.version, or fallback (the control plane's) for
// a Machine without one. Never the Node's reported kubelet version: the node writes
// that itself, and would choose the image.
func RestartVersion(machine *clusterv1.Machine, fallback string) string {
	if machine.Spec.Version != "" {
		return machine.Spec.Version
	}
	return fallback
}

// NewPlan is an empty Plan object, to read one into.
func NewPlan() *unstructured.Unstructured {
	p := &unstructured.Unstructured{}
	p.SetGroupVersionKind(planGVK)
	return p
}

// RestartDone says whether SUC completed the restart Plan on node: SUC labels the
// Node with the Plan's latest hash once its Job succeeded there.
func RestartDone(plan *unstructured.Unstructured, node *corev1.Node) bool {
	hash, _, _ := unstructured.NestedString(plan.Object, "status", "latestHash")
	return hash != "" && node != nil && node.Labels[sucPlanLabelPrefix+plan.GetName()] == hash
}

// RestartFailure is SUC's reason to give up on a restart Plan, or "" (see planFailure).
func RestartFailure(plan *unstructured.Unstructured) string { return planFailure(plan) }

// errNotRestartPlan guards against acting on a Plan that is not a restart Plan.
var errNotRestartPlan = errors.New("not a capk3s certificate renewal Plan")

// CheckRestartPlan refuses a Plan that is not one of capk3s's restart Plans for the
// Machine (a name shared by chance with something else in SUC's namespace).
func CheckRestartPlan(plan *unstructured.Unstructured, machine *clusterv1.Machine) error {
	if plan.GetLabels()[RenewalLabel] != "true" || plan.GetAnnotations()[MachineAnnotation] != machine.Namespace+"/"+machine.Name {
		return errNotRestartPlan
	}
	return nil
}
