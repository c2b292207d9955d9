package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdsnapshots,verbs=get;list;watch;create

// rolloutSnapshotAttempts is how many snapshots one rollout tries before it stops
// and says so; rolloutSnapshotBackoff[i] is the wait after failed attempt i+1.
const rolloutSnapshotAttempts = 3

var rolloutSnapshotBackoff = []time.Duration{time.Minute, 5 * time.Minute}

// snapshotGate is whether the pass's rollout step may go ahead.
type snapshotGate struct {
	proceed bool
	// reason and message, for RollingOut, when it may not.
	reason, message string
	// create is the attempt to create now (0: none).
	create int
	// requeueAfter is when the next attempt is due.
	requeueAfter time.Duration
}

// rolloutSnapshotWanted says the rollout must be preceded by a snapshot: on by
// default, on an initialized control plane on embedded etcd.
func rolloutSnapshotWanted(kcp *controlplanev1.KThreesControlPlane) bool {
	if rs := kcp.Spec.RolloutStrategy; rs != nil && rs.EtcdSnapshot == controlplanev1.EtcdSnapshotBeforeRolloutDisabled {
		return false
	}
	return !externalDatastore(kcp) && isTrue(kcp.Status.Initialization.ControlPlaneInitialized)
}

// rolloutID names a rollout by what makes servers outdated: the version, the k3s
// configuration, the infrastructure template and the rollout deadlines. Every step
// of one rollout, in any process, computes the same name; a new spec is a new
// rollout with a snapshot of its own.
func rolloutID(kcp *controlplanev1.KThreesControlPlane) string {
	b, _ := json.Marshal(struct {
		Version string `json:"v"`
		Config  any    `json:"c"`
		Infra   any    `json:"i"`
		After   any    `json:"a"`
	}{kcp.Spec.Version, serverplan.NormalizedConfigSpec(kcp.Spec.KThreesConfigSpec), kcp.Spec.MachineTemplate.Spec.InfrastructureRef, serverplan.RolloutDeadlines(kcp)})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// rolloutSnapshotName is the attempt's object name: fixed, so that a pass reading
// a cache without its own create, or a restarted manager, cannot make a second.
func rolloutSnapshotName(kcp *controlplanev1.KThreesControlPlane, id string, attempt int) string {
	suffix := "-before-rollout-" + id + "-" + strconv.Itoa(attempt)
	name := kcp.Name
	if max := 253 - len(suffix); len(name) > max {
		name = name[:max]
	}
	return name + suffix
}

// decideRolloutSnapshot reads the snapshots made for one rollout. Pure.
func decideRolloutSnapshot(snaps []controlplanev1.KThreesEtcdSnapshot, label string, now time.Time) snapshotGate {
	if len(snaps) == 0 {
		return snapshotGate{create: 1, reason: controlplanev1.WaitingForEtcdSnapshotReason, message: "an etcd snapshot is requested before the rollout"}
	}
	var last *controlplanev1.KThreesEtcdSnapshot
	lastAttempt := 0
	for i := range snaps {
		s := &snaps[i]
		switch s.Status.Phase {
		case controlplanev1.EtcdSnapshotSucceeded:
			return snapshotGate{proceed: true}
		case controlplanev1.EtcdSnapshotFailed:
		default:
			return snapshotGate{reason: controlplanev1.WaitingForEtcdSnapshotReason,
				message: fmt.Sprintf("the rollout waits for etcd snapshot %s (KThreesEtcdSnapshot)", s.Name)}
		}
		if n, _ := strconv.Atoi(s.Labels[controlplanev1.EtcdSnapshotAttemptLabel]); n >= lastAttempt {
			last, lastAttempt = s, n
		}
	}
	failed := fmt.Sprintf("etcd snapshot %s failed: %s", last.Name, last.Status.Error)
	if len(snaps) >= rolloutSnapshotAttempts {
		return snapshotGate{reason: controlplanev1.EtcdSnapshotBeforeRolloutFailedReason, message: fmt.Sprintf(
			"%d etcd snapshots before this rollout failed, the last: %s; the rollout stops. Delete the KThreesEtcdSnapshots labelled %s to try again, or set spec.rolloutStrategy.etcdSnapshot to Disabled to roll out without one",
			len(snaps), failed, label)}
	}
	wait := rolloutSnapshotBackoff[min(len(snaps), len(rolloutSnapshotBackoff))-1]
	due := now
	if t := last.Status.CompletionTime; t != nil {
		due = t.Add(wait)
	}
	if now.Before(due) {
		return snapshotGate{reason: controlplanev1.WaitingForEtcdSnapshotReason, requeueAfter: due.Sub(now), message: fmt.Sprintf(
			"%s; attempt %d of %d at %s", failed, len(snaps)+1, rolloutSnapshotAttempts, due.UTC().Format(time.RFC3339))}
	}
	return snapshotGate{create: lastAttempt + 1, reason: controlplanev1.WaitingForEtcdSnapshotReason,
		message: fmt.Sprintf("%s; attempt %d of %d is requested", failed, len(snaps)+1, rolloutSnapshotAttempts)}
}

// snapshotBeforeRollout holds a rollout's server step until a KThreesEtcdSnapshot
// of this rollout succeeded, creating it (and, after failures, up to
// rolloutSnapshotAttempts in all) when needed.
func (r *Reconciler) snapshotBeforeRollout(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) (snapshotGate, error) {
	if !rolloutSnapshotWanted(kcp) {
		return snapshotGate{proceed: true}, nil
	}
	id := rolloutID(kcp)
	list := &controlplanev1.KThreesEtcdSnapshotList{}
	if err := r.Client.List(ctx, list, client.InNamespace(kcp.Namespace), client.MatchingLabels{
		controlplanev1.EtcdSnapshotRolloutLabel: id, clusterv1.ClusterNameLabel: cluster.Name,
	}); err != nil {
		return snapshotGate{}, fmt.Errorf("listing the etcd snapshots before the rollout: %w", err)
	}
	gate := decideRolloutSnapshot(list.Items, controlplanev1.EtcdSnapshotRolloutLabel+"="+id, time.Now())
	if gate.create == 0 {
		return gate, nil
	}
	s := &controlplanev1.KThreesEtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: kcp.Namespace,
			Name:      rolloutSnapshotName(kcp, id, gate.create),
			Labels: map[string]string{
				clusterv1.ClusterNameLabel:              cluster.Name,
				controlplanev1.EtcdSnapshotRolloutLabel: id,
				controlplanev1.EtcdSnapshotAttemptLabel: strconv.Itoa(gate.create),
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
			}},
		},
		Spec: controlplanev1.KThreesEtcdSnapshotSpec{ClusterName: cluster.Name, NamePrefix: "pre-rollout"},
	}
	// A sharded manager (--watch-filter) sees only objects with its label: the
	// snapshot controller and this controller's watch must see this one.
	if v, ok := kcp.Labels[clusterv1.WatchLabel]; ok {
		s.Labels[clusterv1.WatchLabel] = v
	}
	if err := r.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return snapshotGate{}, fmt.Errorf("creating the etcd snapshot before the rollout: %w", err)
	}
	gate.message = fmt.Sprintf("the rollout waits for etcd snapshot %s (KThreesEtcdSnapshot)", s.Name)
	return gate, nil
}

// rolloutSnapshotToControlPlane wakes the control plane whose rollout a snapshot guards.
func (r *Reconciler) rolloutSnapshotToControlPlane(ctx context.Context, o client.Object) []reconcile.Request {
	if _, ok := o.GetLabels()[controlplanev1.EtcdSnapshotRolloutLabel]; !ok {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetLabels()[clusterv1.ClusterNameLabel]}, cluster); err != nil {
		return nil
	}
	return clusterToControlPlane(ctx, cluster)
}
