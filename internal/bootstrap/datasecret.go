package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// dataSecretContent is the data Secret's content: the bootstrap data, and the
// contract's "format" key naming what the renderer wrote (cloud-config or ignition).
func dataSecretContent(config *bootstrapv1.KThreesConfig, data []byte) map[string][]byte {
	return map[string][]byte{"value": data, "format": []byte(cloudinit.FormatOf(config.Spec))}
}

// createDataSecret stores the data Secret's content in a Secret named after the config and
// controlled by it, as the bootstrap contract expects. A Secret left by an earlier
// pass whose status update failed is kept as it is, if this config controls it:
// rendering again could differ (a new lock holder, a new token form) from what a
// machine may already have read.
func createDataSecret(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, data map[string][]byte) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: config.Namespace,
			Name:      config.Name,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Type: clusterv1.ClusterSecretType,
		Data: data,
	}
	if err := controllerutil.SetControllerReference(config, s, c.Scheme()); err != nil {
		return fmt.Errorf("owning bootstrap data Secret: %w", err)
	}
	err := c.Create(ctx, s)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating bootstrap data Secret: %w", err)
	}
	existing := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), existing); err != nil {
		return fmt.Errorf("reading bootstrap data Secret: %w", err)
	}
	return refuseForeignDataSecret(existing, config)
}

// refuseForeignDataSecret refuses a Secret under the config's name that the config
// does not control: it is someone else's, and never this config's data.
func refuseForeignDataSecret(existing *corev1.Secret, config *bootstrapv1.KThreesConfig) error {
	if !metav1.IsControlledBy(existing, config) {
		return fmt.Errorf("secret %s exists and is not this KThreesConfig's bootstrap data", existing.Name)
	}
	return nil
}
