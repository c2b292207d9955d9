package controlplane

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/cluster-api/util/collections"

	"github.com/capk3s/capk3s/internal/workload"
)

// preflight says why the control plane must not add or remove a server now, or ""
// when it may. One operation at a time: a server being deleted, a server without a
// Ready node, or a cluster not yet initialized all mean the previous operation has
// not settled, and etcd membership must not change under it. Nodes that could not be
// read (nil) block too: no step is taken on missing data.
func preflight(machines collections.Machines, nodes workload.Nodes, initialized bool) string {
	if !initialized {
		return "waiting for the first server to initialize the cluster"
	}
	if deleting := machines.Filter(collections.HasDeletionTimestamp); deleting.Len() > 0 {
		return fmt.Sprintf("waiting for Machine %s to be deleted", strings.Join(sorted(deleting.Names()), ", "))
	}
	if nodes == nil {
		return blockedUnreachable
	}
	var notReady []string
	for _, m := range machines {
		if !nodes.Ready(m.Name) {
			notReady = append(notReady, m.Name)
		}
	}
	if len(notReady) > 0 {
		return fmt.Sprintf("waiting for the node of Machine %s to be Ready", strings.Join(sorted(notReady), ", "))
	}
	return ""
}

// blockedUnreachable is why a step waits while the servers' Nodes cannot be read.
const blockedUnreachable = "the workload cluster's API cannot be reached, so the servers' Nodes cannot be checked"

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
