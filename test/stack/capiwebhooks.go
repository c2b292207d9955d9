package stack

import (
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	ctrl "sigs.k8s.io/controller-runtime"
)

// setupCAPIWebhooks registers CAPI core's defaulting and validating webhooks, as
// CAPI's manager does. Its controllers count on them: the topology controller leaves
// a MachineDeployment's rollout strategy, a Cluster's variable defaults and more to
// them, and without them a topology's MachineDeployment never scales.
func setupCAPIWebhooks(mgr ctrl.Manager, clusterCache coreadmission.ClusterCacheReader) error {
	c := mgr.GetClient()
	for _, w := range []interface{ SetupWebhookWithManager(ctrl.Manager) error }{
		&coreadmission.ClusterClass{Client: c},
		&coreadmission.Cluster{Client: c, ClusterCacheReader: clusterCache},
		&coreadmission.Machine{},
		&coreadmission.MachineSet{},
		&coreadmission.MachineDeployment{},
		&coreadmission.MachineDrainRule{},
		&coreadmission.MachinePool{},
		&coreadmission.ClusterResourceSet{},
		&coreadmission.ClusterResourceSetBinding{},
		&coreadmission.MachineHealthCheck{},
		&coreadmission.ExtensionConfig{},
		// As CAPI's manager: read live, not to cache every IPAddressClaim.
		&coreadmission.IPAddress{Client: mgr.GetAPIReader()},
		&coreadmission.IPAddressClaim{},
	} {
		if err := w.SetupWebhookWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}
