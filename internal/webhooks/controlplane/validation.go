package controlplane

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	bootstrapwebhooks "github.com/capk3s/capk3s/internal/webhooks/bootstrap"
	"github.com/capk3s/capk3s/internal/webhooks/webhookutil"
)

// maxTimeout is the longest duration the int32 *TimeoutSeconds fields hold.
const maxTimeout = math.MaxInt32 * time.Second

// validateSpec checks a KThreesControlPlaneSpec for what the CRD schema cannot
// express. namespace is the control plane's own; run it on a defaulted spec.
func validateSpec(spec *controlplanev1.KThreesControlPlaneSpec, namespace string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	datastore := hasDatastore(spec)
	errs = append(errs, validateReplicas(spec.Replicas, datastore, fldPath.Child("replicas"))...)
	errs = append(errs, validateVersion(spec.Version, fldPath.Child("version"))...)
	errs = append(errs, validateMachineTemplate(&spec.MachineTemplate, namespace, fldPath.Child("machineTemplate"))...)
	// Unset replicas mean the default, 1, which matters for the maxSurge rule.
	replicas := ptr.To(ptr.Deref(spec.Replicas, 1))
	errs = append(errs, validateRolloutStrategy(spec.RolloutStrategy, replicas, datastore, fldPath.Child("rolloutStrategy"))...)
	errs = append(errs, validateRemediationStrategy(spec.RemediationStrategy, fldPath.Child("remediationStrategy"))...)
	errs = append(errs, validateMachineNaming(spec.MachineNaming, fldPath.Child("machineNaming"))...)
	errs = append(errs, validateInPlaceUpdates(spec.InPlaceUpdates, fldPath.Child("inPlaceUpdates"))...)
	errs = append(errs, validateCAValidity(spec.CACertificateValidityPeriodDays, fldPath.Child("caCertificateValidityPeriodDays"))...)
	cfgPath := fldPath.Child("kthreesConfigSpec")
	errs = append(errs, bootstrapwebhooks.ValidateSpecForVersion(&spec.KThreesConfigSpec, spec.Version, cfgPath)...)
	errs = append(errs, bootstrapwebhooks.ValidateControlPlaneExtraConfig(&spec.KThreesConfigSpec, cfgPath)...)
	return errs
}

// hasDatastore says the servers use an external datastore rather than embedded etcd.
func hasDatastore(spec *controlplanev1.KThreesControlPlaneSpec) bool {
	return spec.KThreesConfigSpec.ServerConfig.Datastore != nil
}

// validateReplicas requires an odd number of servers on embedded etcd. Every k3s
// server is then an etcd member, and etcd needs a majority: 2 members stop when
// either fails (worse than 1), and any even count survives no more failures than the
// odd count below it while needing more members to agree. With an external datastore
// the servers hold no quorum, so any count from 1 is fine (2 is the usual HA setup).
// Unset means the default, 1.
func validateReplicas(replicas *int32, datastore bool, fldPath *field.Path) field.ErrorList {
	if replicas == nil {
		return nil
	}
	n := *replicas
	switch {
	case n < 1:
		return field.ErrorList{field.Invalid(fldPath, n, "must be at least 1: a control plane without servers has no API and no datastore")}
	case datastore:
		return nil
	case n == 2:
		return field.ErrorList{field.Invalid(fldPath, n,
			"must be odd: an embedded etcd cluster of 2 members loses quorum when one fails; use 1, 3 or 5")}
	case n%2 == 0:
		return field.ErrorList{field.Invalid(fldPath, n, fmt.Sprintf(
			"must be odd: an embedded etcd cluster of %d members survives no more failures than one of %d, and needs more members to agree; use %d or %d",
			n, n-1, n-1, n+1))}
	}
	return nil
}

// validateVersion requires a k3s release version; the schema's pattern lets through
// what the install script and semantic-version comparisons cannot use. ParseVersion
// is tolerant of leading zeros ("1.031.4" reads as 1.31.4), which no release name
// has, so the strict semantic-version form is required as well: the string is what
// the install script downloads.
func validateVersion(version string, fldPath *field.Path) field.ErrorList {
	if version == "" {
		return field.ErrorList{field.Required(fldPath, "the k3s version of the servers, such as v1.31.4+k3s1, is required")}
	}
	_, err := k3s.ParseVersion(version)
	if err == nil {
		_, err = semver.Parse(strings.TrimPrefix(k3s.NormalizeVersion(version), "v"))
	}
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, version, fmt.Sprintf(
			"must be a k3s version such as v1.31.4+k3s1, v1.31.4 or v1.31.4-rc1+k3s1: %v", err))}
	}
	return nil
}

// validateVersionChange allows an upgrade of at most one minor version, and no
// downgrade. Kubernetes supports neither skipping a minor version (API storage
// migrations and version-skew guarantees span one minor) nor going back (the
// datastore may already hold what only the newer version reads). Semantic-version
// precedence ignores build metadata, so moving between k3s revisions of one release
// (+k3s1 ↔ +k3s2) is allowed both ways: that is how a broken revision is left.
//
// A stored version that does not parse (written before this webhook) gives nothing to
// compare with; the new version is still validated on its own.
func validateVersionChange(oldVersion, newVersion string, fldPath *field.Path) field.ErrorList {
	from, err := k3s.ParseVersion(oldVersion)
	if err != nil {
		return nil
	}
	to, err := k3s.ParseVersion(newVersion)
	if err != nil {
		return nil
	}
	switch {
	case to.LT(from):
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf(
			"cannot downgrade from %s: Kubernetes does not support downgrades, and the servers' datastore may already hold data only the newer version reads",
			oldVersion))}
	case to.Major != from.Major:
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf(
			"cannot change the major version from %s", oldVersion))}
	case to.Minor > from.Minor+1:
		return field.ErrorList{field.Invalid(fldPath, newVersion, fmt.Sprintf(
			"cannot upgrade from %s directly: upgrade one minor version at a time: v%d.%d.x → v%d.%d.x first",
			oldVersion, from.Major, from.Minor, from.Major, from.Minor+1))}
	}
	return nil
}

// validateMachineTemplate checks the machine template's metadata and infrastructure
// reference, and explains every deprecated field that defaulting had to leave in
// place.
func validateMachineTemplate(mt *controlplanev1.KThreesControlPlaneMachineTemplate, namespace string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, mt.ObjectMeta.Validate(fldPath.Child("metadata"))...)
	errs = append(errs, webhookutil.RestoreMarkErrors(mt.ObjectMeta.Annotations, fldPath.Child("metadata"))...)

	specPath := fldPath.Child("spec")
	errs = append(errs, validateTaints(mt.Spec.Taints, specPath.Child("taints"))...)
	refPath := specPath.Child("infrastructureRef")
	ref := mt.Spec.InfrastructureRef
	if old := *deprecatedRef(mt); old != nil {
		oldPath := fldPath.Child("infrastructureRef")
		oldErrs := validateDeprecatedRef(old, namespace, oldPath, refPath)
		errs = append(errs, oldErrs...)
		if converted, ok := convertibleRef(old, namespace); ok && ref.IsDefined() && converted != ref {
			errs = append(errs, field.Invalid(oldPath, describeDeprecatedRef(old), fmt.Sprintf(
				"conflicts with %s, which refers to %s: the deprecated %s is replaced by %s; remove it, or make both refer to the same template",
				refPath, describeRef(ref), oldPath, refPath)))
		}
		// The new reference is missing because the old one could not be moved; saying
		// so again under refPath would only repeat the errors above.
		if !ref.IsDefined() && len(oldErrs) > 0 {
			return append(errs, validateDeprecatedTimeouts(deprecatedTimeouts(mt), fldPath)...)
		}
	}
	if ref.APIGroup == "" {
		errs = append(errs, field.Required(refPath.Child("apiGroup"),
			"the API group of the infrastructure machine template, such as infrastructure.cluster.x-k8s.io, is required"))
	}
	if ref.Kind == "" {
		errs = append(errs, field.Required(refPath.Child("kind"),
			"the kind of the infrastructure machine template, such as DockerMachineTemplate, is required"))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"),
			"the name of the infrastructure machine template, in the control plane's namespace, is required"))
	}
	return append(errs, validateDeprecatedTimeouts(deprecatedTimeouts(mt), fldPath)...)
}

// validateDeprecatedRef says why a cluster-api-k3s infrastructureRef could not be
// moved to newPath; it reports nothing for a reference convertibleRef accepts.
func validateDeprecatedRef(old *controlplanev1.DeprecatedObjectReference, namespace string, fldPath, newPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if old.APIVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), fmt.Sprintf(
			"the infrastructure template's apiVersion, such as infrastructure.cluster.x-k8s.io/v1beta1, is required to convert this deprecated reference to %s (or set %s instead)",
			newPath, newPath)))
	} else if gv, err := schema.ParseGroupVersion(old.APIVersion); err != nil || gv.Group == "" || gv.Version == "" {
		errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), old.APIVersion,
			"must be the group/version of an infrastructure machine template, such as infrastructure.cluster.x-k8s.io/v1beta1"))
	}
	if old.Kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"),
			"the kind of the infrastructure machine template, such as DockerMachineTemplate, is required"))
	}
	if old.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"),
			"the name of the infrastructure machine template is required"))
	}
	if old.Namespace != "" && old.Namespace != namespace {
		errs = append(errs, field.Invalid(fldPath.Child("namespace"), old.Namespace, fmt.Sprintf(
			"must be empty or %q, the control plane's namespace: %s, which replaces this deprecated reference, can only refer to templates in the control plane's namespace; copy the template there",
			namespace, newPath)))
	}
	return errs
}

// validateDeprecatedTimeouts explains each cluster-api-k3s timeout of the machine
// template at fldPath that defaulting could not move to its spec.deletion.
func validateDeprecatedTimeouts(timeouts []deprecatedTimeout, fldPath *field.Path) field.ErrorList {
	deletionPath := fldPath.Child("spec", "deletion")
	var errs field.ErrorList
	for _, t := range timeouts {
		errs = append(errs, validateDeprecatedTimeout(*t.old, *t.seconds, fldPath.Child(t.oldName), deletionPath.Child(t.newName))...)
	}
	return errs
}

func validateDeprecatedTimeout(old *metav1.Duration, seconds *int32, fldPath, newPath *field.Path) field.ErrorList {
	if old == nil {
		return nil
	}
	d := old.Duration
	if d < 0 {
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf(
			"must not be negative: %s, which replaces this deprecated field, counts whole seconds, 0 meaning no limit", newPath))}
	}
	s, ok := durationSeconds(d)
	if !ok {
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf(
			"must be at most %s: %s, which replaces this deprecated field, holds at most %d seconds", maxTimeout, newPath, math.MaxInt32))}
	}
	if seconds != nil && *seconds != s {
		return field.ErrorList{field.Invalid(fldPath, d.String(), fmt.Sprintf(
			"conflicts with %s (%d): the deprecated %s (%ds) is replaced by %s; remove it, or make both the same",
			newPath, *seconds, fldPath, s, newPath))}
	}
	return nil
}

// validateRolloutStrategy repeats the schema's type and maxSurge rules, so that the
// function alone is a complete check, and adds the one that needs the replica count.
// replicas is nil for a template, whose replicas come from the Cluster's topology.
func validateRolloutStrategy(rs *controlplanev1.RolloutStrategy, replicas *int32, datastore bool, fldPath *field.Path) field.ErrorList {
	if rs == nil {
		return nil
	}
	var errs field.ErrorList
	if rs.Type != "" && rs.Type != controlplanev1.RollingUpdateStrategyType {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), rs.Type,
			[]controlplanev1.RolloutStrategyType{controlplanev1.RollingUpdateStrategyType}))
	}
	if rs.RollingUpdate == nil || rs.RollingUpdate.MaxSurge == nil {
		return errs
	}
	surgePath := fldPath.Child("rollingUpdate", "maxSurge")
	surge, ok := maxSurgeValue(*rs.RollingUpdate.MaxSurge)
	switch {
	case !ok:
		errs = append(errs, field.Invalid(surgePath, rs.RollingUpdate.MaxSurge.String(),
			"must be 0 or 1: servers are replaced one at a time, created before (1) or after (0) the old one is removed"))
	case surge == 0 && datastore && replicas != nil && *replicas < 2:
		errs = append(errs, field.Invalid(surgePath, 0,
			"maxSurge 0 removes a server before creating its replacement; with a single server that leaves the cluster without an API server during every rollout: use maxSurge 1, or at least 2 replicas"))
	case surge == 0 && !datastore && replicas != nil && *replicas < 3:
		errs = append(errs, field.Invalid(surgePath, 0, fmt.Sprintf(
			"maxSurge 0 removes a server before creating its replacement; with fewer than 3 servers that loses etcd quorum (spec.replicas is %d): use maxSurge 1, or at least 3 replicas",
			*replicas)))
	}
	return errs
}

// maxSurgeValue reads maxSurge as 0 or 1, the only values a one-at-a-time rollout
// has, accepting them as integers or as the strings the schema also lets through.
func maxSurgeValue(v intstr.IntOrString) (int32, bool) {
	switch {
	case v.Type == intstr.Int && (v.IntVal == 0 || v.IntVal == 1):
		return v.IntVal, true
	case v.Type == intstr.String && v.StrVal == "0":
		return 0, true
	case v.Type == intstr.String && v.StrVal == "1":
		return 1, true
	}
	return 0, false
}

// validateRemediationStrategy rejects negative bounds, which the controller could only
// read as "retry never" or "always healthy enough", never what was meant.
func validateRemediationStrategy(rs *controlplanev1.RemediationStrategy, fldPath *field.Path) field.ErrorList {
	if rs == nil {
		return nil
	}
	var errs field.ErrorList
	if rs.MaxRetry != nil && *rs.MaxRetry < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("maxRetry"), *rs.MaxRetry,
			"must not be negative; leave it unset for no limit"))
	}
	if rs.RetryPeriod.Duration < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("retryPeriod"), rs.RetryPeriod.Duration.String(),
			"must not be negative"))
	}
	if rs.MinHealthyPeriod != nil && rs.MinHealthyPeriod.Duration < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("minHealthyPeriod"), rs.MinHealthyPeriod.Duration.String(),
			"must not be negative"))
	}
	return errs
}

// immutableServerSettings are the serverConfig fields a running k3s cluster cannot
// change: k3s keeps them in its datastore and in every node's configuration, and
// what was derived from them (addresses, DNS names, certificates) stays behind.
var immutableServerSettings = []struct {
	name string
	get  func(*bootstrapv1.KThreesServerConfig) string
	why  string
}{
	{"clusterCidr", func(c *bootstrapv1.KThreesServerConfig) string { return c.ClusterCidr },
		"every node's pod range and every pod's address come from it"},
	{"serviceCidr", func(c *bootstrapv1.KThreesServerConfig) string { return c.ServiceCidr },
		"every Service's cluster IP, the API server's included, comes from it"},
	{"clusterDNS", func(c *bootstrapv1.KThreesServerConfig) string { return c.ClusterDNS },
		"every pod's resolv.conf points at it"},
	{"clusterDomain", func(c *bootstrapv1.KThreesServerConfig) string { return c.ClusterDomain },
		"every pod's DNS search path and the serving certificates' names use it"},
}

// validateImmutable forbids changes of the immutableServerSettings. A rollout would
// not help: new servers would join a datastore that still holds the old values.
func validateImmutable(oldSpec, newSpec *controlplanev1.KThreesControlPlaneSpec, fldPath *field.Path) field.ErrorList {
	serverConfigPath := fldPath.Child("kthreesConfigSpec", "serverConfig")
	var errs field.ErrorList
	for _, s := range immutableServerSettings {
		before, after := s.get(&oldSpec.KThreesConfigSpec.ServerConfig), s.get(&newSpec.KThreesConfigSpec.ServerConfig)
		if before == after {
			continue
		}
		errs = append(errs, field.Forbidden(serverConfigPath.Child(s.name), fmt.Sprintf(
			"is immutable (was %s, now %s): %s, so changing it on a running k3s cluster breaks the cluster; create a new cluster with the new value instead",
			describeSetting(before), describeSetting(after), s.why)))
	}
	return append(errs, validateCAValidityUnchanged(oldSpec.CACertificateValidityPeriodDays, newSpec.CACertificateValidityPeriodDays,
		fldPath.Child("caCertificateValidityPeriodDays"))...)
}

// describeSetting names a serverConfig value in a message; empty means k3s's default.
func describeSetting(v string) string {
	if v == "" {
		return "unset, k3s's default"
	}
	return fmt.Sprintf("%q", v)
}

// validateTemplateSpec checks a template's spec with the control plane's rules that
// apply without replicas and version, which the Cluster's topology sets.
func validateTemplateSpec(spec *controlplanev1.KThreesControlPlaneTemplateResourceSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if mt := spec.MachineTemplate; mt != nil {
		mtPath := fldPath.Child("machineTemplate")
		errs = append(errs, mt.ObjectMeta.Validate(mtPath.Child("metadata"))...)
		errs = append(errs, webhookutil.RestoreMarkErrors(mt.ObjectMeta.Annotations, mtPath.Child("metadata"))...)
		errs = append(errs, validateTaints(mt.Spec.Taints, mtPath.Child("spec", "taints"))...)
		errs = append(errs, validateDeprecatedTimeouts(templateDeprecatedTimeouts(mt), mtPath)...)
	}
	errs = append(errs, validateRolloutStrategy(spec.RolloutStrategy, nil, spec.KThreesConfigSpec.ServerConfig.Datastore != nil, fldPath.Child("rolloutStrategy"))...)
	errs = append(errs, validateRemediationStrategy(spec.RemediationStrategy, fldPath.Child("remediationStrategy"))...)
	errs = append(errs, validateMachineNaming(spec.MachineNaming, fldPath.Child("machineNaming"))...)
	errs = append(errs, validateInPlaceUpdates(spec.InPlaceUpdates, fldPath.Child("inPlaceUpdates"))...)
	errs = append(errs, validateCAValidity(spec.CACertificateValidityPeriodDays, fldPath.Child("caCertificateValidityPeriodDays"))...)
	errs = append(errs, bootstrapwebhooks.ValidateSpec(&spec.KThreesConfigSpec, fldPath.Child("kthreesConfigSpec"))...)
	errs = append(errs, bootstrapwebhooks.ValidateControlPlaneExtraConfig(&spec.KThreesConfigSpec, fldPath.Child("kthreesConfigSpec"))...)
	return errs
}

func describeDeprecatedRef(r *controlplanev1.DeprecatedObjectReference) string {
	s := fmt.Sprintf("%s %s %s", r.APIVersion, r.Kind, r.Name)
	if r.Namespace != "" {
		s += " in namespace " + r.Namespace
	}
	return s
}

func describeRef(r clusterv1.ContractVersionedObjectReference) string {
	return fmt.Sprintf("%s %s %s", r.APIGroup, r.Kind, r.Name)
}

// validateInPlaceUpdates refuses a policy the controller does not know. The schema
// refuses it too; this keeps the message when the webhook validates on its own.
func validateInPlaceUpdates(policy controlplanev1.InPlaceUpdatePolicy, fldPath *field.Path) field.ErrorList {
	switch policy {
	case "", controlplanev1.InPlaceUpdateIfPossible, controlplanev1.InPlaceUpdateNever:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, policy,
		[]controlplanev1.InPlaceUpdatePolicy{controlplanev1.InPlaceUpdateIfPossible, controlplanev1.InPlaceUpdateNever})}
}
