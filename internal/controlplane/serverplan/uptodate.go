package serverplan

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// ServerObjects are a server's bootstrap config and infrastructure machine, as a pass
// read them; either may be nil when it could not be read (then it is not compared).
type ServerObjects struct {
	Config *bootstrapv1.KThreesConfig
	Infra  *unstructured.Unstructured
}

// UpToDateReason says why a server needs replacing, or "" when it does not. A server
// being updated in place (updatingInPlace, the in-place code's verdict) is not up to
// date until the update is done. Otherwise it compares the server with what the
// controller would create today: the version (by value: "1.31.4+k3s1" equals
// "v1.31.4+k3s1"), the KThreesConfig spec, the infrastructure template it was cloned
// from, and rolloutAfter (or rollout.after). Labels, annotations, deletion timeouts
// and taints are propagated in place and never cause a rollout; the name
// (spec.machineNaming) only applies to new servers and is not compared either.
func UpToDateReason(m *clusterv1.Machine, objs ServerObjects, updatingInPlace bool, kcp *controlplanev1.KThreesControlPlane, now time.Time) string {
	if updatingInPlace {
		// Its specs may already be the desired ones; the server is not, until the
		// update is done.
		return "updating in place"
	}
	want, err := k3s.ParseVersion(kcp.Spec.Version)
	if err != nil {
		return "the control plane's version is not a k3s version"
	}
	got, err := k3s.ParseVersion(m.Spec.Version)
	// Semantic versioning ignores build metadata, but "+k3s2" is a different k3s
	// release than "+k3s1": compare the parsed versions including it.
	if err != nil || got.String() != want.String() {
		return "version " + m.Spec.Version + ", want " + k3s.NormalizeVersion(kcp.Spec.Version)
	}
	if objs.Config != nil && !equality.Semantic.DeepEqual(NormalizedConfigSpec(objs.Config.Spec), NormalizedConfigSpec(kcp.Spec.KThreesConfigSpec)) {
		return "kthreesConfigSpec changed"
	}
	if objs.Infra != nil {
		if reason := InfraTemplateChanged(objs.Infra, kcp); reason != "" {
			return reason
		}
	}
	for _, ra := range RolloutDeadlines(kcp) {
		if ra.Before(now) && m.CreationTimestamp.Time.Before(ra) {
			return "created before rolloutAfter " + ra.UTC().Format(time.RFC3339)
		}
	}
	return ""
}

// NormalizedConfigSpec drops what desiredKThreesConfig leaves to the Machine (the
// version) and what renders the same bootstrap data either way (format
// cloud-config or unset, and the ignored etcdProxyImage). equality.Semantic already
// treats empty and nil lists alike, so a round trip through the apiserver does not
// count as a change.
func NormalizedConfigSpec(spec bootstrapv1.KThreesConfigSpec) bootstrapv1.KThreesConfigSpec {
	out := *spec.DeepCopy()
	out.Version = ""
	// Spelling out the default format changes no machine's bootstrap data.
	if out.Format == bootstrapv1.CloudConfig {
		out.Format = ""
	}
	// cluster-api-k3s's etcd proxy image is kept but never used: adding or removing
	// it, as the admission warning suggests, must not replace every server.
	out.ServerConfig.DeprecatedEtcdProxyImage = "" //nolint:staticcheck // clearing the ignored field is the point
	// restoreFrom acts once, on the server that initializes (or re-initializes, in a
	// KThreesEtcdRestore) the cluster; every other server ignores it. The server a
	// restore made carries the restore's snapshot, and a snapshot named on the control
	// plane for its first server means nothing to the servers after: neither is a
	// reason to replace a server.
	if e := out.ServerConfig.Etcd; e != nil {
		e.RestoreFrom = ""
		if *e == (bootstrapv1.Etcd{}) {
			out.ServerConfig.Etcd = nil
		}
	}
	return out
}

// InfraTemplateChanged compares the template an infrastructure machine was cloned
// from (CAPI's cloned-from annotations) with the one the control plane names now. A
// machine without the annotations (adopted from other software) is not judged by it.
func InfraTemplateChanged(infra *unstructured.Unstructured, kcp *controlplanev1.KThreesControlPlane) string {
	annotations := infra.GetAnnotations()
	name, hasName := annotations[clusterv1.TemplateClonedFromNameAnnotation]
	groupKind, hasGroupKind := annotations[clusterv1.TemplateClonedFromGroupKindAnnotation]
	if !hasName || !hasGroupKind {
		return ""
	}
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	wantGroupKind := ref.Kind + "." + ref.APIGroup
	if name != ref.Name || groupKind != wantGroupKind {
		return "infrastructure template " + groupKind + "/" + name + ", want " + wantGroupKind + "/" + ref.Name
	}
	return ""
}
