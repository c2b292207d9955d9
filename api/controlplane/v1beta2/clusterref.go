package v1beta2

import clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

// ControlPlaneName is the name of the KThreesControlPlane the Cluster references, or ""
// when its control plane is of another kind or unset. The Cluster and its control plane
// share a namespace.
func ControlPlaneName(cluster *clusterv1.Cluster) string {
	ref := cluster.Spec.ControlPlaneRef
	if ref.APIGroup != GroupVersion.Group || ref.Kind != "KThreesControlPlane" {
		return ""
	}
	return ref.Name
}
