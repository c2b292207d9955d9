package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// Provider is the simulated infrastructure: its reconcilers and the workload clusters
// they run. The zero value with Client set is ready for SetupWithManager.
type Provider struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// Dir holds the workload clusters' files; "" is the system's temporary directory.
	Dir string
	// KeepRunning leaves the workload clusters running when a manager the Provider is
	// set up with stops; the caller ends them with Stop. With it, the Provider can be
	// set up again on another manager (once the first has stopped, and with Client set
	// to the new manager's) and carries on with the same workload clusters: a test of
	// clusterctl move hands the infrastructure to the target management cluster so.
	KeepRunning bool
	// SnapshotInterval is how often a running server whose config.yaml has an etcd
	// snapshot schedule records another snapshot, instead of following the cron
	// schedule; 0 records only the one taken when the server joins.
	SnapshotInterval time.Duration
	// CertificateCheckInterval is how often each machine's k3s certificate monitor
	// checks and records its Events (certmonitor.go); 0 is k3s's 30 minutes. A
	// SimCluster's simv1.CertificateCheckIntervalAnnotation overrides it.
	CertificateCheckInterval time.Duration
	// SystemUpgradeController installs the system-upgrade-controller on every
	// workload cluster (see suc.go); without it, only on those of SimClusters with
	// simv1.SystemUpgradeControllerAnnotation.
	SystemUpgradeController bool

	mu       sync.Mutex
	clusters map[client.ObjectKey]*workloadCluster
	// simClusters maps a Cluster to its SimCluster, for status refreshes.
	simClusters map[client.ObjectKey]client.ObjectKey
	reserved    map[client.ObjectKey]net.Listener
	changes     chan event.GenericEvent
	// stopped is set by Stop: clusters registered after it start nothing.
	stopped bool
}

// SetupWithManager registers the SimCluster, SimMachine and SimMachinePool reconcilers,
// and stops every workload cluster when the manager stops (unless KeepRunning).
func (p *Provider) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if !p.KeepRunning || p.clusters == nil {
		p.clusters = map[client.ObjectKey]*workloadCluster{}
		p.simClusters = map[client.ObjectKey]client.ObjectKey{}
		p.reserved = map[client.ObjectKey]net.Listener{}
		// Buffered: a change only asks for a status refresh, and one pending is enough.
		p.changes = make(chan event.GenericEvent, 1024)
	}

	if err := ctrl.NewControllerManagedBy(mgr).Named("simcluster").
		For(&simv1.SimCluster{}).
		WithOptions(opts).
		WatchesRawSource(source.Channel(p.changes, &handler.EnqueueRequestForObject{})).
		Complete(&clusterReconciler{p: p}); err != nil {
		return fmt.Errorf("SimCluster controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("simmachine").
		For(&simv1.SimMachine{}).
		WithOptions(opts).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(
			util.MachineToInfrastructureMapFunc(simv1.GroupVersion.WithKind("SimMachine")))).
		Complete(&machineReconciler{p: p}); err != nil {
		return fmt.Errorf("SimMachine controller: %w", err)
	}
	pools := &poolReconciler{p: p}
	if err := ctrl.NewControllerManagedBy(mgr).Named("simmachinepool").
		For(&simv1.SimMachinePool{}).
		WithOptions(opts).
		Watches(&clusterv1.MachinePool{}, handler.EnqueueRequestsFromMapFunc(machinePoolToPool)).
		// Metadata only: a data Secret's update is all the pool needs to hear of.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(pools.dataSecretToPools), builder.OnlyMetadata).
		Complete(pools); err != nil {
		return fmt.Errorf("SimMachinePool controller: %w", err)
	}
	if p.KeepRunning {
		return nil
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return p.Stop()
	}))
}

// Stop ends every workload cluster and frees every reserved port.
func (p *Provider) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	var errs []error
	for key, c := range p.clusters {
		errs = append(errs, c.stop())
		delete(p.clusters, key)
	}
	for key, l := range p.reserved {
		errs = append(errs, l.Close())
		delete(p.reserved, key)
	}
	return errors.Join(errs...)
}

// reservePort picks the endpoint's port for a cluster and holds it until the
// cluster's API starts; asked again, it gives the same port.
func (p *Provider) reservePort(key client.ObjectKey) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.reserved[key]; ok {
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	l, err := listenForEndpoint()
	if err != nil {
		return 0, fmt.Errorf("reserving a port for the endpoint: %w", err)
	}
	p.reserved[key] = l
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (p *Provider) releasePort(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.reserved[key]; ok {
		_ = l.Close()
		delete(p.reserved, key)
	}
}

// ensureCluster registers the workload cluster of a Cluster whose endpoint is known.
func (p *Provider) ensureCluster(key, simCluster client.ObjectKey, port int) *workloadCluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.simClusters[key] = simCluster
	if c, ok := p.clusters[key]; ok {
		return c
	}
	c := &workloadCluster{
		key: key, port: port, dir: p.Dir, onChange: p.changed,
		release: func() { p.releasePort(key) },
		closed:  p.stopped,
	}
	p.clusters[key] = c
	return c
}

// cluster is the workload cluster of a Cluster, or nil before its SimCluster has an
// endpoint.
func (p *Provider) cluster(key client.ObjectKey) *workloadCluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clusters[key]
}

// forget stops a Cluster's workload cluster and frees its port.
func (p *Provider) forget(key client.ObjectKey) error {
	p.mu.Lock()
	c := p.clusters[key]
	delete(p.clusters, key)
	delete(p.simClusters, key)
	p.mu.Unlock()
	p.releasePort(key)
	if c == nil {
		return nil
	}
	return c.stop()
}

// changed asks for the SimCluster's status to be refreshed.
func (p *Provider) changed(key client.ObjectKey) {
	p.mu.Lock()
	sc, ok := p.simClusters[key]
	p.mu.Unlock()
	if !ok {
		return
	}
	obj := &simv1.SimCluster{}
	obj.SetNamespace(sc.Namespace)
	obj.SetName(sc.Name)
	select {
	case p.changes <- event.GenericEvent{Object: obj}:
	default:
	}
}

// QuorumLost says whether a Cluster's etcd has lost quorum at any time since the
// cluster started or was last restored from a snapshot (a restore starts a new etcd
// cluster; Restores counts them).
func (p *Provider) QuorumLost(cluster types.NamespacedName) bool {
	c := p.cluster(cluster)
	if c == nil {
		return false
	}
	_, lost := c.status()
	return lost
}

// Restores counts the restores that brought a Cluster back after all its servers
// were gone (cluster-reset on a new first server).
func (p *Provider) Restores(cluster types.NamespacedName) int {
	c := p.cluster(cluster)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restores
}

// WorkloadAPIPort is the port of the kube-apiserver behind a Cluster's endpoint (the
// endpoint itself is the supervisor's front, cluster.go), so that a test can stop that
// very process; an error while the API does not run.
func (p *Provider) WorkloadAPIPort(cluster types.NamespacedName) (int, error) {
	c := p.cluster(cluster)
	if c == nil {
		return 0, fmt.Errorf("no simulated workload cluster %s", cluster)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api == nil {
		return 0, fmt.Errorf("the workload API of %s does not run", cluster)
	}
	return c.api.Port, nil
}

// EtcdMembers lists a Cluster's etcd members by name.
func (p *Provider) EtcdMembers(cluster types.NamespacedName) []string {
	c := p.cluster(cluster)
	if c == nil {
		return nil
	}
	return c.memberNames()
}

// WorkloadClient is an admin client of a Cluster's workload API, once it serves.
func (p *Provider) WorkloadClient(cluster types.NamespacedName) (client.Client, error) {
	c := p.cluster(cluster)
	if c == nil {
		return nil, errNotInitialized
	}
	cl, _, err := c.ready()
	return cl, err
}
