package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

const etcdS3Field = "spec.serverConfig.etcd.snapshots.s3"

// etcdS3Of is the config's S3 snapshot target, or nil.
func etcdS3Of(config *bootstrapv1.KThreesConfig) *bootstrapv1.EtcdSnapshotsS3 {
	e := config.Spec.ServerConfig.Etcd
	if e == nil || e.Snapshots == nil {
		return nil
	}
	return e.Snapshots.S3
}

// etcdS3SecretNames are the Secrets a config's S3 snapshot target names, for the
// same index as the datastore's: a Secret event wakes the configs waiting for it.
func etcdS3SecretNames(config *bootstrapv1.KThreesConfig) []string {
	s3 := etcdS3Of(config)
	if s3 == nil {
		return nil
	}
	var names []string
	if s3.CredentialsSecret != nil {
		names = append(names, s3.CredentialsSecret.Name)
	}
	if s3.EndpointCASecret != nil {
		names = append(names, s3.EndpointCASecret.Name)
	}
	return names
}

// etcdS3Values reads what spec.serverConfig.etcd.snapshots.s3 references, from
// Secrets in the config's namespace only: the credentials Secret's two documented
// keys and the endpoint CA's key. missing, when not empty, says which Secret or key
// does not exist yet; the config waits for it. Neither missing nor an error ever
// carries a value. Nil values and no error when no Secret is named.
func etcdS3Values(ctx context.Context, c client.Reader, config *bootstrapv1.KThreesConfig) (values *cloudinit.EtcdS3, missing string, err error) {
	s3 := etcdS3Of(config)
	if s3 == nil || (s3.CredentialsSecret == nil && s3.EndpointCASecret == nil) {
		return nil, "", nil
	}
	values = &cloudinit.EtcdS3{}
	read := func(name, key, field string) (string, string, error) {
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return "", fmt.Sprintf("Waiting for Secret %s, named by %s.%s", name, etcdS3Field, field), nil
		case err != nil:
			return "", "", fmt.Errorf("reading Secret %s of %s.%s: %w", name, etcdS3Field, field, err)
		}
		v := s.Data[key]
		if len(v) == 0 {
			return "", fmt.Sprintf("Waiting for key %q in Secret %s, named by %s.%s", key, name, etcdS3Field, field), nil
		}
		return string(v), "", nil
	}
	if ref := s3.CredentialsSecret; ref != nil {
		for _, k := range []struct {
			key string
			set *string
		}{
			{bootstrapv1.EtcdS3AccessKeyIDKey, &values.AccessKeyID},
			{bootstrapv1.EtcdS3SecretAccessKeyKey, &values.SecretAccessKey},
		} {
			v, missing, err := read(ref.Name, k.key, "credentialsSecret")
			if err != nil || missing != "" {
				return nil, missing, err
			}
			*k.set = v
		}
	}
	if ref := s3.EndpointCASecret; ref != nil {
		v, missing, err := read(ref.Name, ref.Key, "endpointCASecret")
		if err != nil || missing != "" {
			return nil, missing, err
		}
		values.EndpointCA = v
	}
	return values, "", nil
}
