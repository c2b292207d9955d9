package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
	"github.com/capk3s/capk3s/test/realk3s/host"
	"github.com/capk3s/capk3s/test/realk3s/lb"
)

// serverPort is where k3s servers serve the Kubernetes API (k3s's https-listen-port
// default; the scenarios keep it).
const serverPort = 6443

type clusterReconciler struct{ p *Provider }

func (r *clusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	c := r.p.Client
	nc := &netnsv1.NetnsCluster{}
	if err := c.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(nc, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() { retErr = errors.Join(retErr, helper.Patch(ctx, nc)) }()
	if !nc.DeletionTimestamp.IsZero() {
		r.p.closeBalancer(req.NamespacedName)
		controllerutil.RemoveFinalizer(nc, netnsv1.NetnsClusterFinalizer)
		return ctrl.Result{}, nil
	}
	controllerutil.AddFinalizer(nc, netnsv1.NetnsClusterFinalizer)
	b, err := r.p.balancer(req.NamespacedName, nc.Spec.ControlPlaneEndpoint.Port)
	if err != nil {
		return ctrl.Result{}, err
	}
	nc.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: host.HostAddress, Port: int32(b.Addr().Port)}
	backends, err := r.serverAddresses(ctx, nc)
	if err != nil {
		return ctrl.Result{}, err
	}
	b.SetBackends(backends)
	nc.Status.Backends = backends
	nc.Status.Initialization.Provisioned = ptr.To(true)
	return ctrl.Result{}, nil
}

// serverAddresses are the 6443 addresses of the cluster's control-plane machines
// that booted and are not being deleted.
func (r *clusterReconciler) serverAddresses(ctx context.Context, nc *netnsv1.NetnsCluster) ([]string, error) {
	cluster := nc.Labels[clusterv1.ClusterNameLabel]
	machines := &netnsv1.NetnsMachineList{}
	if err := r.p.Client.List(ctx, machines, client.InNamespace(nc.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster}, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range machines.Items {
		if !m.DeletionTimestamp.IsZero() || !ptr.Deref(m.Status.Initialization.Provisioned, false) {
			continue
		}
		for _, a := range m.Status.Addresses {
			if a.Type == clusterv1.MachineInternalIP {
				out = append(out, net.JoinHostPort(a.Address, strconv.Itoa(serverPort)))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// balancer is the cluster's load balancer, started on port when it is not running
// (a restarted provider keeps the endpoint the Cluster already has).
func (p *Provider) balancer(key client.ObjectKey, port int32) (*lb.Balancer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.balancers[key]; ok {
		return b, nil
	}
	b, err := lb.Listen(net.JoinHostPort(host.HostAddress, strconv.Itoa(int(port))))
	if err != nil {
		return nil, fmt.Errorf("load balancer of %s: %w", key, err)
	}
	p.balancers[key] = b
	return b, nil
}

func (p *Provider) closeBalancer(key client.ObjectKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.balancers[key]; ok {
		_ = b.Close()
		delete(p.balancers, key)
	}
}

// machineToCluster wakes the NetnsCluster of a machine's cluster.
func (p *Provider) machineToCluster(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cluster); err != nil {
		return nil
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "NetnsCluster" || ref.Name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
}
