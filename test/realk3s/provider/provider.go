package provider

import (
	"fmt"
	"sync"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
	"github.com/capk3s/capk3s/test/realk3s/host"
	"github.com/capk3s/capk3s/test/realk3s/lb"
)

// Provider runs the layer's infrastructure.
type Provider struct {
	// Client reaches the management cluster.
	Client client.Client
	// Layer makes the machines.
	Layer *host.Layer
	// Binaries maps a Machine's k3s version (spec.version, e.g. v1.36.2+k3s1) to the
	// k3s binary its image carries.
	Binaries map[string]string

	mu        sync.Mutex
	balancers map[client.ObjectKey]*lb.Balancer
}

// SetupWithManager registers the NetnsCluster and NetnsMachine controllers.
func (p *Provider) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	p.balancers = map[client.ObjectKey]*lb.Balancer{}
	if err := ctrl.NewControllerManagedBy(mgr).For(&netnsv1.NetnsCluster{}).
		// A server that comes or goes changes the load balancer's backends.
		Watches(&netnsv1.NetnsMachine{}, handler.EnqueueRequestsFromMapFunc(p.machineToCluster)).
		WithOptions(opts).Named("netnscluster").Complete(&clusterReconciler{p: p}); err != nil {
		return fmt.Errorf("NetnsCluster controller: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).For(&netnsv1.NetnsMachine{}).
		// The Machine's bootstrap data comes after the NetnsMachine.
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(
			util.MachineToInfrastructureMapFunc(netnsv1.GroupVersion.WithKind("NetnsMachine")))).
		WithOptions(opts).Named("netnsmachine").Complete(&machineReconciler{p: p})
}

// Close stops every load balancer.
func (p *Provider) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, b := range p.balancers {
		_ = b.Close()
		delete(p.balancers, k)
	}
}
