package cloudinit

import (
	"fmt"
	"path"
	"slices"
	"sort"

	ign "github.com/coreos/ignition/v2/config/v3_4"
	igntypes "github.com/coreos/ignition/v2/config/v3_4/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// ownedCloudConfigKeys are the cloud-config keys a fragment may not set: the ones
// capk3s writes (a second value would silently replace capk3s's or the user's own
// spec fields, since cloud-init keeps one value per key), and the ones that change
// which modules run or how parts merge, with which a fragment could switch off the
// runcmd that installs k3s and writes the sentinel.
var ownedCloudConfigKeys = map[string]string{
	"write_files":          "spec.files",
	"runcmd":               "spec.preK3sCommands and spec.postK3sCommands",
	"bootcmd":              "spec.bootCommands",
	"users":                "spec.users",
	"groups":               "spec.users",
	"ntp":                  "spec.ntp",
	"disk_setup":           "spec.diskSetup",
	"fs_setup":             "spec.diskSetup",
	"device_aliases":       "spec.diskSetup",
	"mounts":               "spec.mounts",
	"cloud_init_modules":   "",
	"cloud_config_modules": "",
	"cloud_final_modules":  "",
	"merge_how":            "",
	"merge_type":           "",
}

// parseCloudConfigFragment reads spec.additionalUserData.cloudConfig: a YAML
// mapping whose keys capk3s does not own. Errors are one sentence each, for the
// webhook and the renderer alike.
func parseCloudConfigFragment(s string) (map[string]any, []string) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		return nil, []string{fmt.Sprintf("must be a YAML mapping of cloud-config keys: %v", err)}
	}
	if len(m) == 0 {
		return nil, []string{"must be a YAML mapping of cloud-config keys, with at least one key"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		use, owned := ownedCloudConfigKeys[k]
		switch {
		case !owned:
		case use != "":
			errs = append(errs, fmt.Sprintf("key %q is written by capk3s: use %s", k, use))
		default:
			errs = append(errs, fmt.Sprintf("key %q may not be set: it changes what cloud-init runs, and could skip the k3s install", k))
		}
	}
	return m, errs
}

// parseIgnitionFragment reads spec.additionalUserData.ignition with Ignition's own
// parser (specs 3.0 to 3.4, translated to 3.4) and refuses what capk3s writes on
// every machine: a config replace (it would drop capk3s's config), the files it
// writes and its bootstrap unit. Collisions with what only some configs write
// (spec.files, OS setup) are found by mergeIgnition, at render.
func parseIgnitionFragment(s string, files []bootstrapv1.File) (igntypes.Config, []string) {
	cfg, rpt, err := ign.ParseCompatibleVersion([]byte(s))
	if err != nil {
		return cfg, []string{fmt.Sprintf("is not an Ignition config (spec 3.0 to 3.4): %v: %s", err, rpt.String())}
	}
	var errs []string
	if cfg.Ignition.Config.Replace.Source != nil {
		errs = append(errs, "may not set ignition.config.replace: it would replace the config capk3s renders")
	}
	userPaths := map[string]bool{}
	for _, f := range files {
		userPaths[path.Clean(f.Path)] = true
	}
	for _, p := range ignitionFragmentPaths(cfg) {
		if what, ok := reservedIgnitionPaths[p]; ok {
			errs = append(errs, fmt.Sprintf("path %q is where capk3s writes %s", p, what))
		} else if userPaths[p] {
			errs = append(errs, fmt.Sprintf("path %q is already written by spec.files", p))
		}
	}
	for _, u := range cfg.Systemd.Units {
		if u.Name == bootstrapUnitName || u.Name == bootCommandsUnitName {
			errs = append(errs, fmt.Sprintf("unit %q is capk3s's own", u.Name))
		}
	}
	return cfg, errs
}

// ignitionFragmentPaths are the clean paths of a config's files, directories and
// links.
func ignitionFragmentPaths(cfg igntypes.Config) []string {
	var out []string
	for _, f := range cfg.Storage.Files {
		out = append(out, path.Clean(f.Path))
	}
	for _, d := range cfg.Storage.Directories {
		out = append(out, path.Clean(d.Path))
	}
	for _, l := range cfg.Storage.Links {
		out = append(out, path.Clean(l.Path))
	}
	return out
}

// AdditionalUserDataErrors checks spec.additionalUserData as the renderer will
// read it: the fragment of the spec's format only, each parsed and free of what
// capk3s owns. The webhook and Render call it, so both refuse the same input.
func AdditionalUserDataErrors(spec *bootstrapv1.KThreesConfigSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	a := spec.AdditionalUserData
	format := FormatOf(*spec)
	if a.CloudConfig != "" {
		p := fldPath.Child("cloudConfig")
		if format != bootstrapv1.CloudConfig {
			errs = append(errs, field.Invalid(p, "(fragment)", "is for format cloud-config; with format ignition use additionalUserData.ignition"))
		} else {
			_, msgs := parseCloudConfigFragment(a.CloudConfig)
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, "(fragment)", m))
			}
		}
	}
	if a.Ignition != "" {
		p := fldPath.Child("ignition")
		if format != bootstrapv1.Ignition {
			errs = append(errs, field.Invalid(p, "(fragment)", "is for format ignition; with format cloud-config use additionalUserData.cloudConfig"))
		} else {
			_, msgs := parseIgnitionFragment(a.Ignition, spec.Files)
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, "(fragment)", m))
			}
		}
	}
	return errs
}

// mergeCloudConfig appends the fragment's keys to a rendered #cloud-config. The
// keys are disjoint from capk3s's (parseCloudConfigFragment), so two top-level
// mappings written one after the other are one mapping, and capk3s's part stays
// byte for byte what it would be without the fragment.
func mergeCloudConfig(rendered []byte, fragment string) ([]byte, error) {
	m, errs := parseCloudConfigFragment(fragment)
	if len(errs) > 0 {
		return nil, fmt.Errorf("spec.additionalUserData.cloudConfig: %s", errs[0])
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("spec.additionalUserData.cloudConfig: %w", err)
	}
	return append(rendered, out...), nil
}

// mergeIgnition merges the fragment into cfg by Ignition's own merge rules, after
// refusing any path, unit or user that cfg already has: there a merge would let
// one silently replace or alter the other.
func mergeIgnition(cfg igntypes.Config, fragment string, files []bootstrapv1.File) (igntypes.Config, error) {
	frag, errs := parseIgnitionFragment(fragment, files)
	if len(errs) > 0 {
		return cfg, fmt.Errorf("spec.additionalUserData.ignition: %s", errs[0])
	}
	ours := ignitionFragmentPaths(cfg)
	for _, p := range ignitionFragmentPaths(frag) {
		if slices.Contains(ours, p) {
			return cfg, fmt.Errorf("spec.additionalUserData.ignition: path %q is already written by capk3s's config", p)
		}
	}
	for _, u := range frag.Systemd.Units {
		if slices.ContainsFunc(cfg.Systemd.Units, func(o igntypes.Unit) bool { return o.Name == u.Name }) {
			return cfg, fmt.Errorf("spec.additionalUserData.ignition: unit %q is already in capk3s's config", u.Name)
		}
	}
	for _, u := range frag.Passwd.Users {
		if slices.ContainsFunc(cfg.Passwd.Users, func(o igntypes.PasswdUser) bool { return o.Name == u.Name }) {
			return cfg, fmt.Errorf("spec.additionalUserData.ignition: user %q is already set by spec.users", u.Name)
		}
	}
	// The fragment's own version is dropped: the merged config is capk3s's spec.
	frag.Ignition.Version = cfg.Ignition.Version
	return ign.Merge(cfg, frag), nil
}
