package bootstrap

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// validateFileSource requires exactly one of secret and configMap, each naming an
// object and a key that can exist.
func validateFileSource(s *bootstrapv1.FileSource, fldPath *field.Path) field.ErrorList {
	hasSecret := s.Secret != (bootstrapv1.SecretFileSource{})
	hasConfigMap := s.ConfigMap != (bootstrapv1.ConfigMapFileSource{})
	switch {
	case hasSecret && hasConfigMap:
		return field.ErrorList{field.Forbidden(fldPath, "set either secret or configMap, not both")}
	case hasConfigMap:
		return validateConfigMapFileSource(&s.ConfigMap, fldPath.Child("configMap"))
	default:
		// Neither reports the Secret's missing name and key, as before ConfigMaps.
		return validateSecretFileSource(&s.Secret, fldPath.Child("secret"))
	}
}

func validateConfigMapFileSource(s *bootstrapv1.ConfigMapFileSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "the name of a ConfigMap in the config's namespace is required"))
	} else if msgs := validation.IsDNS1123Subdomain(s.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, "must be a valid ConfigMap name: "+strings.Join(msgs, "; ")))
	}
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), "the key of the ConfigMap's data or binaryData that holds the file content is required"))
	} else if msgs := validation.IsConfigMapKey(s.Key); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("key"), s.Key, "must be a valid ConfigMap key: "+strings.Join(msgs, "; ")))
	}
	return errs
}
