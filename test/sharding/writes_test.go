package sharding

import (
	"fmt"
	"sort"
	"strings"

	"github.com/capk3s/capk3s/test/envtest"
)

const (
	// leaseNamespace holds every manager process's Lease (envtest.ProcessOptions).
	leaseNamespace = "default"
	// maxProblems keeps a failure readable: a shard that writes where it must not
	// usually does so many times.
	maxProblems = 20
)

// checkWrites attributes every audited write to the shard whose process made it: the
// object must be one of the shard's cluster, in ns and named after the cluster
// (capk3s names what it makes after the cluster or its control plane, and the
// apiserver names Events after their object). Failed writes count too: they were
// attempts. Each process must have written to its cluster, or the check would pass
// for a shard that did nothing. Writes for the leader elections (Leases and their
// Events, in the lease namespace) are left out, and so are the CRD migrator's writes
// to capk3s's own CRDs (internal/crdmigration): every shard runs it, as every shard of
// CAPI's providers does, and it marks each CRD it has migrated; it writes no object of
// any cluster here, since nothing is stored at an older version.
func checkWrites(events []envtest.AuditEvent, ns string, shards []*shard) []string {
	owner := map[string]*shard{}
	for _, s := range shards {
		for _, p := range s.procs {
			owner[p.Name] = s
		}
	}
	written := map[string]int{}
	var problems []string
	for _, e := range events {
		s := owner[e.User.Username]
		if s == nil {
			continue
		}
		ref := e.ObjectRef
		if ref.Resource == "leases" || (ref.Resource == "events" && ref.Namespace == leaseNamespace) || ownCRD(ref.Resource, ref.Name) {
			continue
		}
		if ref.Namespace != ns || !ofCluster(ref.Name, s.cluster) {
			problems = append(problems, fmt.Sprintf("%s (--watch-filter=%s) %s %s %s/%s (HTTP %d): not an object of its cluster %s",
				e.User.Username, s.filter, e.Verb, resource(e), ref.Namespace, ref.Name, e.ResponseStatus.Code, s.cluster))
			continue
		}
		if ref.Resource != "events" {
			written[e.User.Username]++
		}
	}
	if len(problems) > maxProblems {
		problems = append(problems[:maxProblems], fmt.Sprintf("... and %d more writes outside the shards' clusters", len(problems)-maxProblems))
	}
	var names []string
	for name := range owner {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if written[name] == 0 {
			problems = append(problems, fmt.Sprintf("%s wrote nothing of its cluster %s", name, owner[name].cluster))
		}
	}
	return problems
}

// ownCRD: the object is one of capk3s's CRDs.
func ownCRD(resource, name string) bool {
	return resource == "customresourcedefinitions" && strings.HasPrefix(name, "kthrees") &&
		(strings.HasSuffix(name, ".bootstrap.cluster.x-k8s.io") || strings.HasSuffix(name, ".controlplane.cluster.x-k8s.io"))
}

// ofCluster: name is the cluster's or starts with it and a separator. The test's
// cluster names are no prefix of each other.
func ofCluster(name, cluster string) bool {
	return name == cluster || strings.HasPrefix(name, cluster+"-") || strings.HasPrefix(name, cluster+".")
}

func resource(e envtest.AuditEvent) string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}
