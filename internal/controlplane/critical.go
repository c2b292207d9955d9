package controlplane

import (
	"fmt"
	"strings"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
)

// criticalChange says why the servers of an embedded-etcd control plane must be left
// as they are: its kthreesConfigSpec gives new servers a setting k3s requires every
// server to share (k3s.CriticalChanges) with another value than a running server
// holds. k3s would refuse each new server when it joins ("critical configuration
// value mismatch between servers"), so a rollout would only remove servers, and
// with maxSurge 0 their etcd members, for good. The webhook refuses such a change;
// this holds for an object stored before it existed or with it turned off.
//
// The running servers are those with a Node: k3s started on them, so they passed
// the same check when they joined. A server whose Node never came (one k3s refused)
// or is being deleted does not count; with no Nodes read, nothing is compared and
// the preflight checks hold the step anyway. A server on an external datastore is
// never compared by k3s. "" when nothing holds the servers.
func criticalChange(kcp *controlplanev1.KThreesControlPlane, seen observed) string {
	if externalDatastore(kcp) || seen.nodes == nil {
		return ""
	}
	want, err := cloudinit.ServerOptions(kcp.Spec.KThreesConfigSpec)
	if err != nil {
		// A spec that does not render makes no server either; the bootstrap
		// provider reports it on the config.
		return ""
	}
	for _, name := range sorted(seen.machines.Names()) {
		m, objs := seen.machines[name], seen.objects[name]
		if !m.DeletionTimestamp.IsZero() || seen.nodes[name] == nil || objs.config == nil {
			continue
		}
		have, err := cloudinit.ServerOptions(objs.config.Spec)
		if err != nil {
			continue
		}
		changes := k3s.CriticalChanges(have, want)
		if len(changes) == 0 {
			continue
		}
		described := make([]string, len(changes))
		for i, c := range changes {
			described[i] = c.String()
		}
		return fmt.Sprintf("kthreesConfigSpec changes k3s settings every server of an embedded-etcd cluster must share "+
			"with the running server %s: %s; k3s would refuse every new server (\"critical configuration value mismatch "+
			"between servers\"), so no server is added, replaced or removed and the running ones are left alone: "+
			"set them back to the running servers' values, or create a new cluster with the new ones",
			name, strings.Join(described, ", "))
	}
	return ""
}
