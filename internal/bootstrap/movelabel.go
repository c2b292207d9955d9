package bootstrap

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userSecrets is the reader through which a pass reads the Secrets that a config's
// spec names on the user's behalf: spec.files[].contentFrom, the registries' auth and
// CA Secrets, the external datastore's Secrets and the users' password Secrets
// (spec.users[].passwdFrom). It labels each Secret it reads
// for clusterctl move.
//
// clusterctl move carries a Secret along only if it belongs to a moved object's graph
// (owned by one, or named <cluster>-*) or carries clusterctl's move label. The user
// made these Secrets and nobody owns them, so without the label they stay behind, and
// the moved cluster cannot render data for its next machines.
//
// A Secret controlled by another controller (External Secrets, Sealed Secrets, a
// Cluster) is labelled too. The label is additive and belongs to clusterctl, and the
// patch sends that one key with no resourceVersion, so it neither conflicts with nor
// overwrites what the other controller writes. If that controller strips the label,
// we add it again only when a pass reads the Secret again, and a Secret event never
// wakes a config that already has its data: there is no loop. clusterctl moves a
// labelled Secret only once all its owners have moved, so a Secret whose controller
// stays behind also stays behind, next to that controller.
//
// A failed label never holds back a machine's data: moving is rare and later,
// booting is now. The failures are collected and returned with the pass's result, so
// that they are logged, counted as reconcile errors and retried with backoff. A retry
// reads and labels again while the config has not rendered yet; once it has, nothing
// reads these Secrets again, and docs/install.md tells the user how to label them.
type userSecrets struct {
	client.Client
	labelErrs []error
}

// Get reads like the client and labels a Secret it has read.
func (u *userSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := u.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if s, ok := obj.(*corev1.Secret); ok {
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
