package secretcache

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

// dataDropped marks a cached Secret whose data the cache did not keep. It is set on
// the cache's copy only, which the Reader never hands out: it reads such a Secret
// live.
const dataDropped = "secretcache.capk3s.io/data-dropped"

// lastApplied is kubectl's copy of what it applied, the Secret's data included.
const lastApplied = corev1.LastAppliedConfigAnnotation

// dropUnreadData is the cache's transform: it keeps the data of the Secrets named
// <cluster>-<purpose> for one of keep's purposes, <cluster> being the Secret's
// cluster.x-k8s.io/cluster-name label, and holds every other Secret by its metadata
// alone. The cache sees every Secret labelled with a cluster name: a machine's
// bootstrap data (its CA keys and join token), other providers' Secrets, the user's;
// the reconcilers read a few of them, and the others' metadata is all that the
// Secret watches and the pass's count of a cluster's Secrets need. Managed fields go
// too, as in the manager's own cache.
func dropUnreadData(keep []secret.Purpose) toolscache.TransformFunc {
	return func(in any) (any, error) {
		s, ok := in.(*corev1.Secret)
		if !ok {
			return in, nil
		}
		s.SetManagedFields(nil)
		if keeps(s, keep) {
			return s, nil
		}
		s.Data = nil
		s.StringData = nil
		annotations := make(map[string]string, len(s.Annotations)+1)
		for k, v := range s.Annotations {
			if k != lastApplied {
				annotations[k] = v
			}
		}
		annotations[dataDropped] = ""
		s.Annotations = annotations
		return s, nil
	}
}

// keeps says whether s is one of the Secrets whose data the cache keeps.
func keeps(s *corev1.Secret, keep []secret.Purpose) bool {
	cluster := s.Labels[clusterv1.ClusterNameLabel]
	if cluster == "" {
		return false
	}
	for _, p := range keep {
		if s.Name == secret.Name(cluster, p) {
			return true
		}
	}
	return false
}

// withoutData says whether the cache's copy s lacks the Secret's data.
func withoutData(s *corev1.Secret) bool {
	_, dropped := s.Annotations[dataDropped]
	return dropped
}
