package workload

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/k3s"
)

// Mismatches are the ways Machines and their Nodes disagree that no amount of waiting
// mends: k3s, not Cluster API, decides a Node's providerID and which k3s runs.
type Mismatches struct {
	// ProviderID: a Machine whose Node Cluster API cannot match, because the Node's
	// providerID is another one (k3s's embedded cloud controller gives
	// k3s://<node-name>) or none (no cloud controller initialized it).
	ProviderID []string
	// Version: a Machine whose Node runs another k3s release than the Machine asks
	// for (an air-gapped image runs the binary it carries, whatever is asked).
	Version []string
}

// FindMismatches lists the Nodes and compares them with machines, whose Nodes (as
// NodesOf found them) are nodes. A Machine for which skipVersion is true (being
// updated in place) is not compared by version.
func FindMismatches(ctx context.Context, cc clustercache.ClusterCache, cluster client.ObjectKey, machines collections.Machines, nodes Nodes,
	skipVersion func(*clusterv1.Machine) bool) (Mismatches, error) {
	reader, err := cc.GetReader(ctx, cluster)
	if err != nil {
		return Mismatches{}, err
	}
	list := &corev1.NodeList{}
	if err := reader.List(ctx, list); err != nil {
		if errors.Is(err, clustercache.ErrClusterNotConnected) {
			return Mismatches{}, err
		}
		return Mismatches{}, fmt.Errorf("listing workload cluster Nodes: %w", err)
	}
	return findMismatches(machines, list.Items, nodes, skipVersion), nil
}

func findMismatches(machines collections.Machines, all []corev1.Node, nodes Nodes, skipVersion func(*clusterv1.Machine) bool) Mismatches {
	byName := make(map[string]*corev1.Node, len(all))
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	var out Mismatches
	for _, m := range machines.SortedByCreationTimestamp() {
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if n, ok := nodes[m.Name]; ok {
			if msg := versionMismatch(m, n); msg != "" && !skipVersion(m) {
				out.Version = append(out.Version, msg)
			}
			continue
		}
		if m.Spec.ProviderID == "" {
			// The infrastructure has not reported the machine's ID yet.
			continue
		}
		if n := nodeByMachineName(m, byName); n != nil && n.Spec.ProviderID != m.Spec.ProviderID {
			out.ProviderID = append(out.ProviderID, providerIDMismatch(m, n))
		}
	}
	return out
}

// nodeByMachineName finds the Node a Machine's k3s most likely registered: k3s names
// a Node after the host, and infrastructure providers name the host after the Machine
// or report it among the Machine's addresses.
func nodeByMachineName(m *clusterv1.Machine, byName map[string]*corev1.Node) *corev1.Node {
	if n := byName[m.Name]; n != nil {
		return n
	}
	for _, a := range m.Status.Addresses {
		if a.Type == clusterv1.MachineHostName || a.Type == clusterv1.MachineInternalDNS {
			if n := byName[a.Address]; n != nil {
				return n
			}
		}
	}
	return nil
}

func providerIDMismatch(m *clusterv1.Machine, n *corev1.Node) string {
	if n.Spec.ProviderID == "" {
		return fmt.Sprintf("Machine %s has providerID %q, its Node %s none: no cloud controller initialized the Node", m.Name, m.Spec.ProviderID, n.Name)
	}
	return fmt.Sprintf("Machine %s has providerID %q, its Node %s %q: Cluster API matches only equal IDs", m.Name, m.Spec.ProviderID, n.Name, n.Spec.ProviderID)
}

// versionMismatch compares the k3s release a Machine asks for with the one its Node's
// kubelet reports (k3s reports its own release there); "" when they agree or either
// is unknown.
func versionMismatch(m *clusterv1.Machine, n *corev1.Node) string {
	want, err := k3s.ParseVersion(m.Spec.Version)
	if err != nil {
		return ""
	}
	got, err := k3s.ParseVersion(n.Status.NodeInfo.KubeletVersion)
	if err != nil || k3s.CompareVersions(got, want) == 0 {
		return ""
	}
	if len(want.Build) == 0 && got.Compare(want) == 0 {
		// A version without "+k3sN" asks for no particular build.
		return ""
	}
	return fmt.Sprintf("Machine %s asks for k3s %s, its Node %s runs %s", m.Name, m.Spec.Version, n.Name, n.Status.NodeInfo.KubeletVersion)
}
