package provider

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netnsv1 "github.com/capk3s/capk3s/test/realk3s/api/v1beta2"
)

// uninitializedTaint is the taint the kubelet registers a Node with when it runs
// with an external cloud provider (capk3s's default), until a cloud controller
// initializes the Node.
const uninitializedTaint = "node.cloudprovider.kubernetes.io/uninitialized"

// initializeNode does a cloud controller's part for the machine's Node: providerID,
// addresses, and the uninitialized taint gone. It reports whether the Node exists.
func (p *Provider) initializeNode(ctx context.Context, cluster *clusterv1.Cluster, nm *netnsv1.NetnsMachine) (bool, error) {
	cfg, err := WorkloadConfig(ctx, p.Client, client.ObjectKeyFromObject(cluster))
	if err != nil {
		return false, err
	}
	wc, err := client.New(cfg, client.Options{})
	if err != nil {
		return false, err
	}
	node := &corev1.Node{}
	if err := wc.Get(ctx, client.ObjectKey{Name: hostName(nm)}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if node.Spec.ProviderID != "" && node.Spec.ProviderID != nm.Spec.ProviderID {
		return true, fmt.Errorf("node %s has providerID %s, not %s", node.Name, node.Spec.ProviderID, nm.Spec.ProviderID)
	}
	before := node.DeepCopy()
	node.Spec.ProviderID = nm.Spec.ProviderID
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != uninitializedTaint {
			taints = append(taints, t)
		}
	}
	node.Spec.Taints = taints
	if err := wc.Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return true, fmt.Errorf("initializing node %s: %w", node.Name, err)
	}
	before = node.DeepCopy()
	node.Status.Addresses = nodeAddresses(nm)
	if err := wc.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return true, fmt.Errorf("node %s's addresses: %w", node.Name, err)
	}
	return true, nil
}

// WorkloadConfig reaches a workload cluster with the admin kubeconfig capk3s keeps in
// the <cluster>-kubeconfig Secret, as Cluster API's controllers do.
func WorkloadConfig(ctx context.Context, c client.Reader, cluster client.ObjectKey) (*rest.Config, error) {
	b, err := kubeconfig.FromSecret(ctx, c, cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", cluster, err)
	}
	cfg.Timeout = 30 * time.Second
	return cfg, nil
}

func nodeAddresses(nm *netnsv1.NetnsMachine) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for _, a := range nm.Status.Addresses {
		switch a.Type {
		case clusterv1.MachineInternalIP:
			out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a.Address})
		case clusterv1.MachineHostName:
			out = append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: a.Address})
		}
	}
	return out
}
