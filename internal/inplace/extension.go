package inplace

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WorkloadClients reaches workload clusters; CAPI's ClusterCache is one. The
// extension reads live (uncached): it is asked rarely, and a cache would watch
// Deployments and Plans on every workload cluster for it.
type WorkloadClients interface {
	GetUncachedClient(ctx context.Context, cluster client.ObjectKey) (client.Client, error)
}

// Extension answers the in-place update hooks.
type Extension struct {
	// Client reads the management cluster (Machines, for their Node).
	Client client.Reader
	// Workload reaches the workload clusters.
	Workload WorkloadClients
	// ServiceAccount and Image go into the Plans (see PlanOptions).
	ServiceAccount string
	Image          string
	// RetryAfterSeconds is how soon CAPI asks again while an update runs.
	RetryAfterSeconds int32
}

// Defaults of the Plans, as SUC's own release manifests and k3s's docs use them.
const (
	DefaultServiceAccount    = "system-upgrade"
	DefaultImage             = "rancher/k3s-upgrade"
	DefaultRetryAfterSeconds = 10
)

func (e *Extension) planOptions(namespace string) PlanOptions {
	o := PlanOptions{Namespace: namespace, ServiceAccount: e.ServiceAccount, Image: e.Image}
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultServiceAccount
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	return o
}

func (e *Extension) retryAfter() int32 {
	if e.RetryAfterSeconds > 0 {
		return e.RetryAfterSeconds
	}
	return DefaultRetryAfterSeconds
}

// sucOf is the workload cluster's SUC install; an error says why the cluster cannot
// be updated in place (errNoSUC) or cannot be reached.
func (e *Extension) sucOf(ctx context.Context, cluster client.ObjectKey) (sucInstall, error) {
	c, err := e.Workload.GetUncachedClient(ctx, cluster)
	if err != nil {
		return sucInstall{}, fmt.Errorf("reaching workload cluster %s: %w", cluster, err)
	}
	return findSUC(ctx, c)
}
