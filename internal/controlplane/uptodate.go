package controlplane

import (
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// upToDateReason says why a server needs replacing, or "" when it does not. Versions
// compare by value ("1.31.4+k3s1" equals "v1.31.4+k3s1"), never as strings.
func upToDateReason(m *clusterv1.Machine, kcp *controlplanev1.KThreesControlPlane, now time.Time) string {
	want, err := k3s.ParseVersion(kcp.Spec.Version)
	if err != nil {
		return "the control plane's version is not a k3s version"
	}
	got, err := k3s.ParseVersion(m.Spec.Version)
	if err != nil || !got.Equals(want) {
		return "version " + m.Spec.Version + ", want " + k3s.NormalizeVersion(kcp.Spec.Version)
	}
	if ra := kcp.Spec.RolloutAfter; ra != nil && ra.Time.Before(now) && m.CreationTimestamp.Time.Before(ra.Time) {
		return "created before rolloutAfter " + ra.UTC().Format(time.RFC3339)
	}
	return ""
}

func isUpToDate(m *clusterv1.Machine, kcp *controlplanev1.KThreesControlPlane) bool {
	return upToDateReason(m, kcp, time.Now()) == ""
}
