package manager

import (
	"fmt"
	"hash/fnv"

	"k8s.io/apimachinery/pkg/util/validation"
)

// leaderElectionID is the Lease this manager's replicas compete for. A manager with
// --watch-filter is one shard of several: its Lease is the binary's with the filter
// value appended, so that shards installed side by side in one namespace each elect
// their own leader instead of all but one waiting forever on a single Lease. Without
// a filter the name stays the binary's fixed one.
func (o *Options) leaderElectionID() string {
	if o.WatchFilterValue == "" {
		return o.LeaderElectionID
	}
	suffix := o.WatchFilterValue
	// A label value may hold capitals and underscores, a Lease name may not; a hash
	// of such a value keeps two shards whose values differ only there apart.
	if len(validation.IsDNS1123Subdomain(suffix)) > 0 {
		h := fnv.New32a()
		_, _ = h.Write([]byte(suffix))
		suffix = fmt.Sprintf("%08x", h.Sum32())
	}
	return o.LeaderElectionID + "-" + suffix
}
