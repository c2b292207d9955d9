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

// datastoreSecretIndex indexes KThreesConfigs by the Secrets their
// serverConfig.datastore and serverConfig.etcd.snapshots.s3 name, so that a Secret event finds the configs waiting for
// it without listing every config of the namespace.
const datastoreSecretIndex = "spec.serverConfig.datastore.secretNames"

// datastoreSecretNames is the index function of datastoreSecretIndex.
func datastoreSecretNames(o client.Object) []string {
	c, ok := o.(*bootstrapv1.KThreesConfig)
	if !ok {
		return nil
	}
	var all []string
	if c.Spec.ServerConfig.Datastore != nil {
		for _, ref := range datastoreRefs(c.Spec.ServerConfig.Datastore) {
			all = append(all, ref.ref.Name)
		}
	}
	// The S3 snapshot Secrets are waited for the same way (etcds3.go).
	all = append(all, etcdS3SecretNames(c)...)
	var names []string
	seen := map[string]bool{}
	for _, n := range all {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

type namedRef struct {
	field string
	ref   bootstrapv1.SecretKeyReference
	set   func(*cloudinit.Datastore, string)
}

// datastoreRefs lists the references that are set, with where each value goes.
func datastoreRefs(d *bootstrapv1.Datastore) []namedRef {
	var refs []namedRef
	for _, r := range []struct {
		field string
		ref   *bootstrapv1.SecretKeyReference
		set   func(*cloudinit.Datastore, string)
	}{
		{"endpointSecret", &d.EndpointSecret, func(v *cloudinit.Datastore, s string) { v.Endpoint = s }},
		{"caSecret", d.CASecret, func(v *cloudinit.Datastore, s string) { v.CACert = s }},
		{"certSecret", d.CertSecret, func(v *cloudinit.Datastore, s string) { v.ClientCert = s }},
		{"keySecret", d.KeySecret, func(v *cloudinit.Datastore, s string) { v.ClientKey = s }},
	} {
		if r.ref != nil {
			refs = append(refs, namedRef{r.field, *r.ref, r.set})
		}
	}
	return refs
}

// datastoreValues reads what spec.serverConfig.datastore references, from Secrets in
// the config's namespace only. missing, when not empty, says which Secret or key does
// not exist yet: the config waits for it (the Secret watch wakes it). Neither missing
// nor an error ever carries a value.
func datastoreValues(ctx context.Context, c client.Reader, config *bootstrapv1.KThreesConfig) (values *cloudinit.Datastore, missing string, err error) {
	d := config.Spec.ServerConfig.Datastore
	values = &cloudinit.Datastore{}
	for _, r := range datastoreRefs(d) {
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: r.ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("Waiting for Secret %s, named by spec.serverConfig.datastore.%s", r.ref.Name, r.field), nil
		case err != nil:
			return nil, "", fmt.Errorf("reading Secret %s of spec.serverConfig.datastore.%s: %w", r.ref.Name, r.field, err)
		}
		v := s.Data[r.ref.Key]
		if len(v) == 0 {
			return nil, fmt.Sprintf("Waiting for key %q in Secret %s, named by spec.serverConfig.datastore.%s",
				r.ref.Key, r.ref.Name, r.field), nil
		}
		r.set(values, string(v))
	}
	return values, "", nil
}
