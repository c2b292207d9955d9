package bootstrap

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// userInputError is a referenced Secret whose content is not what the spec needs:
// the user must fix it, and the config says so.
type userInputError struct{ msg string }

func (e *userInputError) Error() string { return e.msg }

func userInputErrorf(format string, args ...any) error {
	return &userInputError{msg: fmt.Sprintf(format, args...)}
}

func isUserInputError(err error) bool {
	var u *userInputError
	return errors.As(err, &u)
}

// userFiles resolves spec.files: contentFrom is read from its Secret or ConfigMap
// here, so that the renderer never talks to the API server. Both are read live (the
// manager's client caches neither) when the config renders, and never again: the
// data is rendered once, like every input, so a later change reaches only machines
// created after it.
func userFiles(ctx context.Context, c client.Reader, config *bootstrapv1.KThreesConfig) ([]cloudinit.File, error) {
	files := make([]cloudinit.File, 0, len(config.Spec.Files))
	for i, f := range config.Spec.Files {
		content, fromSecret := f.Content, false
		switch {
		case f.ContentFrom == nil:
		case f.ContentFrom.ConfigMap != (bootstrapv1.ConfigMapFileSource{}):
			ref := f.ContentFrom.ConfigMap
			data, err := configMapValue(ctx, c, config.Namespace, ref.Name, ref.Key)
			if err != nil {
				return nil, fmt.Errorf("spec.files[%d] (%s): %w", i, f.Path, err)
			}
			content = data
		default:
			ref := f.ContentFrom.Secret
			data, err := secretValue(ctx, c, config.Namespace, ref.Name, ref.Key)
			if err != nil {
				return nil, fmt.Errorf("spec.files[%d] (%s): %w", i, f.Path, err)
			}
			content, fromSecret = string(data), true
		}
		files = append(files, cloudinit.File{
			Path: f.Path, Owner: f.Owner, Permissions: f.Permissions, Encoding: f.Encoding, Content: content,
			FromSecret: fromSecret,
		})
	}
	return files, nil
}

// configMapValue is one key of a ConfigMap, from data or, for content that is not
// UTF-8, binaryData.
func configMapValue(ctx context.Context, c client.Reader, namespace, name, key string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return "", fmt.Errorf("reading ConfigMap %s: %w", name, err)
	}
	if v, ok := cm.Data[key]; ok {
		return v, nil
	}
	if v, ok := cm.BinaryData[key]; ok {
		return string(v), nil
	}
	return "", userInputErrorf("configmap %s has no key %q in data or binaryData", name, key)
}

// registryCredentials resolves the Secrets that spec.agentConfig.registries.configs
// name, keyed by registry host.
func registryCredentials(ctx context.Context, c client.Reader, config *bootstrapv1.KThreesConfig) (map[string]cloudinit.RegistryCredentials, error) {
	regs := config.Spec.AgentConfig.Registries
	if regs == nil {
		return nil, nil
	}
	out := map[string]cloudinit.RegistryCredentials{}
	for _, rc := range regs.Configs {
		var creds cloudinit.RegistryCredentials
		if rc.AuthSecret != nil {
			s, err := readSecret(ctx, c, config.Namespace, rc.AuthSecret.Name)
			if err != nil {
				return nil, fmt.Errorf("registry %s: %w", rc.Registry, err)
			}
			creds.Username = string(s.Data["username"])
			creds.Password = string(s.Data["password"])
			creds.Auth = string(s.Data["auth"])
			creds.IdentityToken = string(s.Data["identitytoken"])
			if creds == (cloudinit.RegistryCredentials{}) {
				return nil, userInputErrorf("registry %s: secret %s has none of the keys username/password, auth, identitytoken",
					rc.Registry, rc.AuthSecret.Name)
			}
		}
		if rc.CASecret != nil {
			ca, err := secretValue(ctx, c, config.Namespace, rc.CASecret.Name, "ca.crt")
			if err != nil {
				return nil, fmt.Errorf("registry %s: %w", rc.Registry, err)
			}
			creds.CACert = string(ca)
		}
		out[rc.Registry] = creds
	}
	return out, nil
}

func readSecret(ctx context.Context, c client.Reader, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return s, nil
}

func secretValue(ctx context.Context, c client.Reader, namespace, name, key string) ([]byte, error) {
	s, err := readSecret(ctx, c, namespace, name)
	if err != nil {
		return nil, err
	}
	v, ok := s.Data[key]
	if !ok {
		return nil, userInputErrorf("secret %s has no key %q", name, key)
	}
	return v, nil
}
