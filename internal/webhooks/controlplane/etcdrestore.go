package controlplane

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// +kubebuilder:webhook:verbs=create;update,path=/validate-controlplane-cluster-x-k8s-io-v1beta2-kthreesetcdrestore,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdrestores,versions=v1beta2,name=validation.kthreesetcdrestore.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// KThreesEtcdRestore validates restores of running clusters. A restore that cannot
// work is refused when it is created, before the controller could delete a server:
// one for a cluster that another restore is restoring, one for a control plane that
// is not on embedded etcd or has no S3 (a new server can only read a snapshot from
// there), one whose snapshot name k3s would not read from the bucket's folder. The
// spec never changes afterwards. What may change while the restore waits (another
// operation on the servers) the controller checks, and explains in the status.
type KThreesEtcdRestore struct {
	// Reader reads the Cluster, its control plane and the other restores past any
	// cache: a stale list could let two restores of one cluster in.
	Reader client.Reader
}

func restoreInvalid(r *controlplanev1.KThreesEtcdRestore, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(controlplanev1.GroupVersion.WithKind("KThreesEtcdRestore").GroupKind(), r.Name, errs)
}

// ValidateCreate refuses a restore that cannot work, or that would run beside another.
func (v *KThreesEtcdRestore) ValidateCreate(ctx context.Context, r *controlplanev1.KThreesEtcdRestore) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch s := r.Spec; {
	case (s.SnapshotName == "") == (s.SnapshotRef == ""):
		errs = append(errs, field.Invalid(spec, "", "set exactly one of snapshotName and snapshotRef"))
	case s.SnapshotName != "" && !k3s.EtcdS3SnapshotName(s.SnapshotName):
		errs = append(errs, field.Invalid(spec.Child("snapshotName"), s.SnapshotName,
			"must be the name of a snapshot in the cluster's S3 folder (no absolute path, no .., no trailing /)"))
	}
	if len(errs) > 0 {
		return nil, restoreInvalid(r, errs)
	}
	clusterPath := spec.Child("clusterName")
	cluster := &clusterv1.Cluster{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.ClusterName}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, restoreInvalid(r, field.ErrorList{field.NotFound(clusterPath, r.Spec.ClusterName)})
		}
		return nil, fmt.Errorf("reading Cluster %s: %w", r.Spec.ClusterName, err)
	}
	if why, err := v.unrestorable(ctx, cluster); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return nil, restoreInvalid(r, field.ErrorList{field.Forbidden(clusterPath, why)})
	}
	restores := &controlplanev1.KThreesEtcdRestoreList{}
	if err := v.Reader.List(ctx, restores, client.InNamespace(r.Namespace)); err != nil {
		return nil, fmt.Errorf("listing KThreesEtcdRestores: %w", err)
	}
	for _, other := range restores.Items {
		if other.Name != r.Name && other.Spec.ClusterName == r.Spec.ClusterName && !other.Status.Phase.Finished() {
			return nil, restoreInvalid(r, field.ErrorList{field.Forbidden(clusterPath, fmt.Sprintf(
				"KThreesEtcdRestore %s of this cluster is in progress (phase %s); wait for it to end, or delete it if it never started", other.Name, phaseOrPending(other.Status.Phase)))})
		}
	}
	return nil, nil
}

// unrestorable says why the Cluster's control plane cannot be restored this way.
func (v *KThreesEtcdRestore) unrestorable(ctx context.Context, cluster *clusterv1.Cluster) (string, error) {
	ref := cluster.Spec.ControlPlaneRef
	if ref.APIGroup != controlplanev1.GroupVersion.Group || ref.Kind != "KThreesControlPlane" {
		return "the Cluster's control plane is not a KThreesControlPlane", nil
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, kcp); err != nil {
		if apierrors.IsNotFound(err) {
			return "the Cluster's KThreesControlPlane " + ref.Name + " does not exist", nil
		}
		return "", fmt.Errorf("reading KThreesControlPlane %s: %w", ref.Name, err)
	}
	sc := kcp.Spec.KThreesConfigSpec.ServerConfig
	if sc.Datastore != nil {
		return "the control plane runs on an external datastore (serverConfig.datastore), not embedded etcd: restore the datastore instead", nil
	}
	if sc.Etcd == nil || sc.Etcd.Snapshots == nil || sc.Etcd.Snapshots.S3 == nil {
		return "the control plane has no kthreesConfigSpec.serverConfig.etcd.snapshots.s3: a new server can only read a snapshot from S3", nil
	}
	return "", nil
}

func phaseOrPending(p controlplanev1.EtcdRestorePhase) controlplanev1.EtcdRestorePhase {
	if p == "" {
		return controlplanev1.EtcdRestorePending
	}
	return p
}

// ValidateUpdate refuses any change of the spec: a restore is one act.
func (v *KThreesEtcdRestore) ValidateUpdate(_ context.Context, oldR, newR *controlplanev1.KThreesEtcdRestore) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(oldR.Spec, newR.Spec) {
		return nil, nil
	}
	return nil, restoreInvalid(newR, field.ErrorList{field.Forbidden(field.NewPath("spec"),
		"is immutable: delete this restore and create another")})
}

// ValidateDelete allows every deletion. A restore that holds the control plane's
// servers keeps its finalizer until it ends or a new restore takes over
// (docs/etcd-snapshots.md).
func (v *KThreesEtcdRestore) ValidateDelete(context.Context, *controlplanev1.KThreesEtcdRestore) (admission.Warnings, error) {
	return nil, nil
}
