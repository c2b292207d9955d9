package sim

import (
	"fmt"
	"strings"

	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// critical is a server's critical settings as the k3s release it installs derives
// them from its config file (k3smodel.CriticalOf).
func (b *bootData) critical() (k3smodel.Critical, error) {
	r, err := k3smodel.ParseRelease(b.install.version)
	if err != nil {
		return nil, err
	}
	minor, err := r.Known()
	if err != nil {
		return nil, err
	}
	c, err := k3smodel.CriticalOf(minor, b.k3sConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k3sConfigPath, err)
	}
	return c, nil
}

// checkCritical refuses a joining server of an embedded-etcd cluster whose critical
// settings differ from the cluster's, with k3s's error and the settings k3s logs.
// The cluster's are those its first server started with: k3s compares with the
// server that answers the join, and in a cluster the simulator let form every
// server holds the first one's values. A server of a datastore cluster is not
// compared: k3s bootstraps it from the datastore (storageBootstrap) and never calls
// compareConfig (pkg/cluster/bootstrap.go, v1.34-v1.36).
func (b *bootData) checkCritical(s secrets) error {
	if b.install.role != roleServer || s.datastore != "" || s.critical == nil {
		return nil
	}
	mine, err := b.critical()
	if err != nil {
		return err
	}
	if bad := mine.Mismatched(s.critical); len(bad) > 0 {
		return fmt.Errorf("%s (critical configuration mismatched: %s)", k3smodel.JoinRefusedMessage, strings.Join(bad, ", "))
	}
	return nil
}
