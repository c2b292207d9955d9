package bootstrap

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdrestores,verbs=get;list;watch

// etcdRestoreGVK is capk3s's KThreesEtcdRestore, read without its Go types: the
// bootstrap manager does not register the control-plane API, and it needs four fields.
var etcdRestoreGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KThreesEtcdRestore"}

// restoreMarked says whether config asks to be the server that a KThreesEtcdRestore
// created to bring a running cluster back to a snapshot: a server config marked by
// the restore (EtcdRestoreAnnotation) that names the snapshot in restoreFrom. Such a
// server initializes the cluster again from the snapshot (cluster-reset) rather than
// joining servers that are gone, but only once restoreInProgress confirms it.
func restoreMarked(config *bootstrapv1.KThreesConfig, owner *configOwner) bool {
	if !owner.server || config.Annotations[controlplanev1.EtcdRestoreAnnotation] == "" {
		return false
	}
	e := config.Spec.ServerConfig.Etcd
	return e != nil && e.RestoreFrom != ""
}

// restoreInProgress says whether a marked config really is a restore's first server:
// the KThreesEtcdRestore its annotation names exists in its namespace, restores this
// cluster, is restoring its first server, has recorded this config's Machine as that
// server, and restores the snapshot the config names. The annotation alone is not
// enough: copied onto other servers (a machine template's metadata), it would make
// each reset the cluster into one of its own. The restore controller records its
// server on the pass after creating it; the watch on restores wakes the config then.
// why says, when not, what is missing, for the config's condition.
func (r *Reconciler) restoreInProgress(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, owner *configOwner) (ok bool, why string, err error) {
	name := config.Annotations[controlplanev1.EtcdRestoreAnnotation]
	restore := &unstructured.Unstructured{}
	restore.SetGroupVersionKind(etcdRestoreGVK)
	// Unstructured reads are not cached by the manager's client: a live read, once
	// per pass of a marked config.
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: name}, restore)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, fmt.Sprintf("the KThreesEtcdRestore %q named by its %s annotation does not exist; only the server a restore in progress creates may restore a snapshot (remove the annotation from anything that copies it onto servers)",
			name, controlplanev1.EtcdRestoreAnnotation), nil
	case err != nil:
		return false, "", fmt.Errorf("reading KThreesEtcdRestore %s: %w", name, err)
	}
	str := func(fields ...string) string {
		v, _, _ := unstructured.NestedString(restore.Object, fields...)
		return v
	}
	prefix := fmt.Sprintf("the KThreesEtcdRestore %q named by its %s annotation", name, controlplanev1.EtcdRestoreAnnotation)
	phase, first := str("status", "phase"), str("status", "firstServer")
	switch {
	case str("spec", "clusterName") != cluster.Name:
		return false, fmt.Sprintf("%s restores Cluster %q, not this server's Cluster %q", prefix, str("spec", "clusterName"), cluster.Name), nil
	case phase != string(controlplanev1.EtcdRestoreRestoringFirstServer):
		return false, fmt.Sprintf("%s is in phase %s, not %s: only its first server restores, while it is being restored", prefix, phase, controlplanev1.EtcdRestoreRestoringFirstServer), nil
	case first == "":
		return false, prefix + " has not recorded its first server yet", nil
	case first != owner.name:
		return false, fmt.Sprintf("%s restores on Machine %q, not on this one (%q)", prefix, first, owner.name), nil
	case str("status", "snapshotName") != config.Spec.ServerConfig.Etcd.RestoreFrom:
		return false, fmt.Sprintf("%s restores snapshot %q, not this config's restoreFrom %q", prefix, str("status", "snapshotName"), config.Spec.ServerConfig.Etcd.RestoreFrom), nil
	}
	return true, "", nil
}
