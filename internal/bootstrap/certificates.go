package bootstrap

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
)

// errCertificatesMissing: a joining machine found no cluster CA. It must never make
// new ones: the running servers would not trust them. Only a NotFound (or an
// incomplete set) means missing; any other read error is returned as it is, so that
// the reconcile is retried instead of waiting for Secrets that may well exist.
var errCertificatesMissing = errors.New("the cluster's CA Secrets do not exist")

// serverCertificates returns the CA files every server gets. The first server may
// create missing CAs (owned by the Cluster, so that no machine's rollout can delete
// them; the control plane takes them over); joining servers only read them.
func serverCertificates(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, mayCreate bool) ([]cloudinit.File, error) {
	certs := k3s.ClusterCertificates()
	key := client.ObjectKeyFromObject(cluster)
	var err error
	if mayCreate {
		owner := metav1.OwnerReference{
			APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster",
			Name: cluster.Name, UID: cluster.UID,
		}
		err = certs.LookupOrGenerate(ctx, c, key, owner)
	} else {
		err = certs.Lookup(ctx, c, key)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's CA Secrets: %w", err)
	}
	if err := certs.EnsureAllExist(); err != nil {
		return nil, fmt.Errorf("%w: %w", errCertificatesMissing, err)
	}
	var files []cloudinit.File
	for _, cert := range certs {
		files = append(files,
			cloudinit.File{Path: cert.CertFile, Owner: "root:root", Permissions: "0644", Content: string(cert.KeyPair.Cert)},
			cloudinit.File{Path: cert.KeyFile, Owner: "root:root", Permissions: "0600", Content: string(cert.KeyPair.Key)},
		)
	}
	return files, nil
}

// serverCACert is the server CA certificate as servers receive it: the join token's
// CA hash is computed over exactly these bytes.
func serverCACert(ctx context.Context, c client.Reader, cluster *clusterv1.Cluster) ([]byte, error) {
	s, err := secret.Get(ctx, c, client.ObjectKeyFromObject(cluster), secret.ClusterCA)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: %w", errCertificatesMissing, err)
	case err != nil:
		// Any other failure says nothing about the Secret: retry, do not wait.
		return nil, fmt.Errorf("reading the cluster's server CA Secret: %w", err)
	}
	crt := s.Data[secret.TLSCrtDataName]
	if len(crt) == 0 {
		return nil, fmt.Errorf("%w: %s has no %s", errCertificatesMissing, s.Name, secret.TLSCrtDataName)
	}
	return crt, nil
}
