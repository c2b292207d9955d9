package token

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lookup reads a cluster's token for the bootstrap side. found is false, with no
// error, when the Secret does not exist yet: the caller waits for the control plane
// to create it (a watch on Secrets wakes it). Any other API error is returned, and so
// is a Secret without a server passphrase.
func Lookup(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster) (tok Token, found bool, err error) {
	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: SecretName(cluster.Name)}
	if err := r.Get(ctx, key, s); err != nil {
		if apierrors.IsNotFound(err) {
			return Token{}, false, nil
		}
		return Token{}, false, fmt.Errorf("reading join token Secret %s: %w", key, err)
	}
	tok, err = fromSecret(s)
	if err != nil {
		return Token{}, false, err
	}
	return tok, true, nil
}
