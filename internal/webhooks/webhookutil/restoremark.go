package webhookutil

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// restoreMarkMessage says why the restore's annotation may not be copied onto
// machines, and what to do instead.
const restoreMarkMessage = "is set by capk3s on the one server that a KThreesEtcdRestore creates to restore a snapshot; " +
	"copied onto every new server it would ask each to start its own cluster from the snapshot (cluster-reset) instead of joining. " +
	"Remove it; to restore a snapshot, create a KThreesEtcdRestore"

// RestoreMarkErrors refuses controlplanev1.EtcdRestoreAnnotation in metadata that is
// copied onto machines and their KThreesConfigs (a control plane's
// machineTemplate.metadata, a KThreesConfigTemplate's template.metadata). metaPath
// is the metadata's path.
func RestoreMarkErrors(annotations map[string]string, metaPath *field.Path) field.ErrorList {
	if _, ok := annotations[controlplanev1.EtcdRestoreAnnotation]; !ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(metaPath.Child("annotations").Key(controlplanev1.EtcdRestoreAnnotation), restoreMarkMessage)}
}
