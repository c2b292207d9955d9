package bootstrap

import (
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// restoresRunningCluster says whether config is the server that a KThreesEtcdRestore
// created to bring a running cluster back to a snapshot: a server config marked by
// the restore (EtcdRestoreAnnotation) that names the snapshot in restoreFrom. The
// restore deleted every other server first, so this one initializes the cluster again
// from the snapshot (cluster-reset) rather than joining servers that are gone; the
// cluster's initialized status, which never goes back, does not apply to it. The
// control plane creates exactly one such server per restore, so no init lock is taken.
func restoresRunningCluster(config *bootstrapv1.KThreesConfig, owner *configOwner) bool {
	if !owner.server || config.Annotations[controlplanev1.EtcdRestoreAnnotation] == "" {
		return false
	}
	e := config.Spec.ServerConfig.Etcd
	return e != nil && e.RestoreFrom != ""
}
