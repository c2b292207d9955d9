package bootstrap

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userSecrets is the reader through which a pass reads the Secrets that a config's
// spec names on the user's behalf: spec.files[].contentFrom, the registries' auth and
// CA Secrets, the external datastore's Secrets, the etcd snapshots' S3 Secret and the
// users' password Secrets (spec.users[].passwdFrom). It labels for clusterctl move
// each Secret it reads that the user marked as this cluster's.
//
// clusterctl move carries a Secret along only if it belongs to a moved object's graph
// (owned by one, or named <cluster>-<purpose>) or carries clusterctl's move label, and
// it deletes what it moved from the old management cluster. The user made these
// Secrets and nobody owns them: without the label they stay behind, and the moved
// cluster cannot render data for its next machines; with it they leave, and whatever
// else in the old management cluster used them (a workload's pull Secret, another
// tool's S3 credentials) loses them. Only the user knows which is right, so the label
// is added only to a Secret labelled cluster.x-k8s.io/cluster-name with this config's
// cluster: the user's word that the Secret is this cluster's alone (a Secret carries
// one cluster name). Any other Secret is read and left as it is; docs/install.md says
// how to label it, and a moved cluster that lacks it says which Secret its machines
// wait for.
//
// A label already there, whoever put it, is never removed: the user may have put it,
// or an earlier capk3s that labelled every Secret it read, and the two look alike.
// Removing the user's would leave a Secret behind that they asked to move.
//
// A Secret controlled by another controller (External Secrets, Sealed Secrets) is
// labelled too when it carries the cluster name. The label is additive and belongs to
// clusterctl, and the patch sends that one key with no resourceVersion, so it neither
// conflicts with nor overwrites what the other controller writes. If that controller
// strips the label, we add it again only when a pass reads the Secret again, and a
// Secret event never wakes a config that already has its data: there is no loop.
// clusterctl moves a labelled Secret only once all its owners have moved, so a Secret
// whose controller stays behind also stays behind, next to that controller.
//
// A failed label never holds back a machine's data: moving is rare and later,
// booting is now. The failures are collected and returned with the pass's result, so
// that they are logged, counted as reconcile errors and retried with backoff. A retry
// reads and labels again while the config has not rendered yet; once it has, nothing
// reads these Secrets again, and docs/install.md tells the user how to label them.
type userSecrets struct {
	client.Client
	// cluster is the name of the config's Cluster.
	cluster   string
	labelErrs []error
}

// Get reads like the client and labels a Secret it has read, if it is the cluster's.
func (u *userSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := u.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if s, ok := obj.(*corev1.Secret); ok && clustersOwn(s, u.cluster) {
		if err := ensureMoveLabel(ctx, u.Client, s); err != nil {
			u.labelErrs = append(u.labelErrs, err)
		}
	}
	return nil
}

// labelErr is every label failure of the pass so far, or nil.
func (u *userSecrets) labelErr() error {
	return errors.Join(u.labelErrs...)
}

// clustersOwn says whether the user marked s as cluster's: labelled
// cluster.x-k8s.io/cluster-name=<cluster>.
func clustersOwn(s *corev1.Secret, cluster string) bool {
	name, ok := s.Labels[clusterv1.ClusterNameLabel]
	return ok && cluster != "" && name == cluster
}

// ensureMoveLabel adds clusterctl's move label to s when it has none, whatever the
// value: clusterctl only looks for the key. An idle pass writes nothing. The patch
// carries the label alone, on the Secret's metadata, so the Secret's data is never
// sent back.
func ensureMoveLabel(ctx context.Context, c client.Writer, s *corev1.Secret) error {
	if _, ok := s.Labels[clusterctlv1.ClusterctlMoveLabel]; ok {
		return nil
	}
	meta := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name},
	}
	base := meta.DeepCopy()
	meta.Labels = map[string]string{clusterctlv1.ClusterctlMoveLabel: ""}
	if err := c.Patch(ctx, meta, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted since the read: nothing is left to move.
			return nil
		}
		return fmt.Errorf("labelling Secret %s for clusterctl move: %w", s.Name, err)
	}
	return nil
}
