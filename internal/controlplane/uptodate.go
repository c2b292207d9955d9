package controlplane

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
)

// serverObjects are a server's bootstrap config and infrastructure machine, as read
// this pass; either may be nil when it could not be read (then it is not compared).
type serverObjects struct {
	config *bootstrapv1.KThreesConfig
	infra  *unstructured.Unstructured
}

// upToDateReason is serverplan.UpToDateReason for a server as this pass read it: why
// it needs replacing, or "" when it does not. Whether it is being updated in place is
// the in-place code's verdict (inplace.go).
func upToDateReason(m *clusterv1.Machine, objs serverObjects, kcp *controlplanev1.KThreesControlPlane, now time.Time) string {
	return serverplan.UpToDateReason(m, serverplan.ServerObjects{Config: objs.config, Infra: objs.infra}, updatingInPlace(m), kcp, now)
}
