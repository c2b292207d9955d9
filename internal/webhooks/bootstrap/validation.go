package bootstrap

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/blang/semver/v4"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
)

// permissionsPattern repeats the CRD schema's pattern so that ValidateSpec alone is a
// complete check, for callers whose schema does not carry it (a spec embedded in
// another kind) and for unit tests without an apiserver.
var permissionsPattern = regexp.MustCompile(`^0?[0-7]{3}$`)

// ValidateSpec checks a KThreesConfigSpec for what the CRD schema cannot express.
// fldPath is where the spec sits in its object (spec, spec.template.spec, ...), so
// every error names the full field path. Run it on a defaulted spec.
func ValidateSpec(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	return validateSpec(spec, fldPath)
}

// ValidateSpecForVersion is ValidateSpec for a spec whose machines install k3s version
// (the KThreesControlPlane's spec.version) rather than the spec's own: the k3s options
// are checked against that version's minor.
func ValidateSpecForVersion(spec *bootstrapv1.KThreesConfigSpec, version string, fldPath *field.Path) field.ErrorList {
	return validateSpecAt(spec, version, fldPath)
}

func validateSpec(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	return validateSpecAt(spec, spec.Version, fldPath)
}

func validateSpecAt(spec *bootstrapv1.KThreesConfigSpec, version string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateVersion(spec.Version, fldPath.Child("version"))...)
	errs = append(errs, validateFiles(spec.Files, fldPath.Child("files"))...)
	errs = append(errs, validateServerConfig(&spec.ServerConfig, fldPath.Child("serverConfig"))...)
	errs = append(errs, validateRegistries(spec.AgentConfig.Registries, fldPath.Child("agentConfig", "registries"))...)
	// The renderer's own check: the values reach shell command lines.
	errs = append(errs, cloudinit.InstallErrors(&spec.AgentConfig, fldPath.Child("agentConfig"))...)
	errs = append(errs, validateExtraConfig(spec, version, fldPath)...)
	errs = append(errs, validateOSSetup(spec, fldPath)...)
	errs = append(errs, validateInlineSize(spec, fldPath)...)
	return errs
}

// validateVersion accepts k3s release versions: semantic versions with an optional
// "v", pre-release and build metadata (v1.31.4+k3s1, v1.31.4, v1.31.4-rc1+k3s1). The
// schema's pattern lets through what semver forbids (leading zeros, an empty
// pre-release such as "v1.31.4-", a "+" inside build metadata); install scripts and
// CAPI's version comparisons would then fail long after admission.
func validateVersion(version string, fldPath *field.Path) field.ErrorList {
	if version == "" {
		return nil
	}
	if _, err := semver.Parse(strings.TrimPrefix(version, "v")); err != nil {
		return field.ErrorList{field.Invalid(fldPath, version, fmt.Sprintf(
			"must be a k3s version such as v1.31.4+k3s1, v1.31.4 or v1.31.4-rc1+k3s1 (semantic version with an optional leading v): %v", err))}
	}
	return nil
}

func validateFiles(files []bootstrapv1.File, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Keyed by the cleaned path so that two spellings of one file are caught even
	// when one of them is also reported as not clean.
	firstIndex := make(map[string]int, len(files))
	for i := range files {
		f := &files[i]
		p := fldPath.Index(i)
		errs = append(errs, validateFile(f, p)...)
		if f.Path == "" {
			continue
		}
		key := path.Clean(f.Path)
		if j, ok := firstIndex[key]; ok {
			dup := field.Duplicate(p.Child("path"), f.Path)
			dup.Detail = fmt.Sprintf("%s also writes %q; each file must have a unique path, merge the two entries",
				fldPath.Index(j).Child("path"), key)
			errs = append(errs, dup)
			continue
		}
		firstIndex[key] = i
	}
	return errs
}

// validateFile checks one file. A file with neither content nor contentFrom is
// allowed on purpose: it is written empty, which is how k3s users create marker
// files (and "content" is omitempty, so an explicit "" cannot be told apart anyway).
func validateFile(f *bootstrapv1.File, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateFilePath(f.Path, fldPath.Child("path"))...)

	if f.Permissions != "" && !permissionsPattern.MatchString(f.Permissions) {
		errs = append(errs, field.Invalid(fldPath.Child("permissions"), f.Permissions,
			"must be an octal file mode of three digits with an optional leading 0, such as 0644 or 600"))
	}

	switch f.Encoding {
	case "", bootstrapv1.Base64, bootstrapv1.Gzip, bootstrapv1.GzipBase64:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("encoding"), f.Encoding,
			[]bootstrapv1.Encoding{bootstrapv1.Base64, bootstrapv1.Gzip, bootstrapv1.GzipBase64}))
	}

	if f.Content != "" && f.ContentFrom != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("contentFrom"),
			"set either content or contentFrom, not both"))
	}

	// Only inline content can be checked here; a Secret's data is read when the
	// bootstrap data is rendered.
	if f.Content != "" && (f.Encoding == bootstrapv1.Base64 || f.Encoding == bootstrapv1.GzipBase64) {
		if _, err := decodeBase64(f.Content); err != nil {
			// The value is left out of the message: inline content may be a secret.
			errs = append(errs, field.Invalid(fldPath.Child("content"), field.OmitValueType{}, fmt.Sprintf(
				"encoding is %s, so content must be standard base64 (line breaks allowed), which it is not: %v; encode the content or change encoding",
				f.Encoding, err)))
		}
	}

	if f.ContentFrom != nil {
		errs = append(errs, validateSecretFileSource(&f.ContentFrom.Secret, fldPath.Child("contentFrom", "secret"))...)
	}
	return errs
}

// validateFilePath requires an absolute path in its clean form. A relative path would
// land wherever cloud-init happens to run; ".." segments, repeated or trailing
// slashes make two entries name one file without looking alike, and invite writing
// outside the directory a reviewer believes is targeted.
func validateFilePath(p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return field.ErrorList{field.Required(fldPath, "an absolute path such as /etc/rancher/k3s/registries.yaml is required")}
	}
	if !strings.HasPrefix(p, "/") {
		return field.ErrorList{field.Invalid(fldPath, p, "must be an absolute path, starting with /")}
	}
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return field.ErrorList{field.Invalid(fldPath, p, "must not contain control characters such as newlines or tabs")}
	}
	for _, segment := range strings.Split(p, "/") {
		if segment == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain .. segments; write the path it resolves to")}
		}
	}
	if clean := path.Clean(p); clean != p {
		return field.ErrorList{field.Invalid(fldPath, p, fmt.Sprintf(
			"must be a clean path without ., empty or trailing segments: write %q", clean))}
	}
	return nil
}

func validateSecretFileSource(s *bootstrapv1.SecretFileSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateSecretName(s.Name, fldPath.Child("name"))...)
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), "the key of the Secret's data that holds the file content is required"))
	} else if msgs := validation.IsConfigMapKey(s.Key); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("key"), s.Key,
			"must be a valid Secret data key: "+strings.Join(msgs, "; ")))
	}
	return errs
}

// validateSecretName rejects names no Secret can have, which would otherwise only
// show up as a config stuck waiting for a Secret that can never exist.
func validateSecretName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "the name of a Secret in the config's namespace is required")}
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a valid Secret name: "+strings.Join(msgs, "; "))}
	}
	return nil
}

// validateServerConfig checks the ports k3s parses as integers (the schema only
// requires one to five digits, which lets 0 and 70000 through), and the addresses and
// networks k3s parses (see validateServerNetwork).
func validateServerConfig(c *bootstrapv1.KThreesServerConfig, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validatePort(c.HTTPSListenPort, fldPath.Child("httpsListenPort"))...)
	errs = append(errs, validatePort(c.AdvertisePort, fldPath.Child("advertisePort"))...)
	errs = append(errs, validateServerNetwork(c, fldPath)...)
	errs = append(errs, validateDatastore(c.Datastore, fldPath.Child("datastore"))...)
	errs = append(errs, validateEtcd(c, fldPath.Child("etcd"))...)
	return errs
}

func validatePort(port string, fldPath *field.Path) field.ErrorList {
	if port == "" {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return field.ErrorList{field.Invalid(fldPath, port, "must be a TCP port number between 1 and 65535")}
	}
	return nil
}

// validateRegistries checks what k3s's registries.yaml needs: both lists become YAML
// maps keyed by registry host, so a host listed twice would be a duplicate key (one
// entry silently wins, or the file does not parse), and containerd only follows
// http(s) mirror endpoints. Hosts are compared case-insensitively, as hostnames are;
// the schema's listType=map only catches exact repeats.
func validateRegistries(r *bootstrapv1.Registries, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList

	mirrorsPath := fldPath.Child("mirrors")
	mirrorHosts := make(map[string]int, len(r.Mirrors))
	for i := range r.Mirrors {
		m := &r.Mirrors[i]
		p := mirrorsPath.Index(i)
		errs = append(errs, validateRegistryHost(m.Registry, mirrorHosts, i, mirrorsPath, p.Child("registry"))...)
		if len(m.Endpoints) == 0 {
			errs = append(errs, field.Required(p.Child("endpoints"), "at least one http(s) endpoint URL is required"))
		}
		for j, endpoint := range m.Endpoints {
			errs = append(errs, validateEndpoint(endpoint, p.Child("endpoints").Index(j))...)
		}
	}

	configsPath := fldPath.Child("configs")
	configHosts := make(map[string]int, len(r.Configs))
	for i := range r.Configs {
		c := &r.Configs[i]
		p := configsPath.Index(i)
		errs = append(errs, validateRegistryHost(c.Registry, configHosts, i, configsPath, p.Child("registry"))...)
		if c.AuthSecret != nil {
			errs = append(errs, validateSecretName(c.AuthSecret.Name, p.Child("authSecret", "name"))...)
		}
		if c.CASecret != nil {
			errs = append(errs, validateSecretName(c.CASecret.Name, p.Child("caSecret", "name"))...)
		}
	}
	return errs
}

// validateRegistryHost requires a host and records it in seen (host → first index),
// reporting a repeat with the index of the entry it repeats.
func validateRegistryHost(host string, seen map[string]int, i int, listPath, fldPath *field.Path) field.ErrorList {
	if host == "" {
		return field.ErrorList{field.Required(fldPath, "a registry host such as docker.io or registry.example.com:5000 is required")}
	}
	key := strings.ToLower(host)
	if j, ok := seen[key]; ok {
		dup := field.Duplicate(fldPath, host)
		dup.Detail = fmt.Sprintf("%s already configures this registry; list each registry host once and merge the entries",
			listPath.Index(j).Child("registry"))
		return field.ErrorList{dup}
	}
	seen[key] = i
	return nil
}

func validateEndpoint(endpoint string, fldPath *field.Path) field.ErrorList {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return field.ErrorList{field.Invalid(fldPath, endpoint,
			"must be an http:// or https:// URL with a host, such as https://mirror.example.com:5000")}
	}
	return nil
}

// decodeBase64 decodes standard base64 the way cloud-init does for b64 content:
// whitespace (line wrapping, as `base64` prints it) is ignored.
func decodeBase64(s string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s))
}
