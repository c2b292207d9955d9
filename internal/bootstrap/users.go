package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// passwdSecretIndex indexes KThreesConfigs by the Secrets their users' passwdFrom
// name, so that creating such a Secret wakes the configs waiting for it.
const passwdSecretIndex = "spec.users.passwdFrom.secretNames"

// passwdSecretNames is the index function of passwdSecretIndex.
func passwdSecretNames(o client.Object) []string {
	c, ok := o.(*bootstrapv1.KThreesConfig)
	if !ok {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, u := range c.Spec.Users {
		if u.PasswdFrom != nil && !seen[u.PasswdFrom.Secret.Name] {
			seen[u.PasswdFrom.Secret.Name] = true
			names = append(names, u.PasswdFrom.Secret.Name)
		}
	}
	return names
}

// userPasswords reads each spec.users[].passwdFrom, keyed by user name, from
// Secrets in the config's namespace. The value is handed to the renderer as it is
// (a crypt(3) hash; the renderer refuses anything else). missing, when not empty,
// says which Secret or key does not exist yet: the config waits for it. Neither
// missing nor an error ever carries a value.
func userPasswords(ctx context.Context, c client.Reader, config *bootstrapv1.KThreesConfig) (passwords map[string]string, missing string, err error) {
	for i, u := range config.Spec.Users {
		if u.PasswdFrom == nil {
			continue
		}
		ref := u.PasswdFrom.Secret
		s := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: config.Namespace, Name: ref.Name}, s)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Sprintf("Waiting for Secret %s, named by spec.users[%d].passwdFrom (user %s)", ref.Name, i, u.Name), nil
		case err != nil:
			return nil, "", fmt.Errorf("reading Secret %s of spec.users[%d].passwdFrom: %w", ref.Name, i, err)
		}
		v, ok := s.Data[ref.Key]
		if !ok || len(v) == 0 {
			return nil, fmt.Sprintf("Waiting for key %q in Secret %s, named by spec.users[%d].passwdFrom (user %s)", ref.Key, ref.Name, i, u.Name), nil
		}
		if passwords == nil {
			passwords = map[string]string{}
		}
		passwords[u.Name] = string(v)
	}
	return passwords, "", nil
}
