package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// The init lock makes sure that exactly one server of a cluster gets cluster-init:
// two servers that both initialized would make two clusters. The lock is a ConfigMap
// whose creation is atomic in the apiserver; it names the Machine that holds it and is
// owned by the Cluster, so it disappears with it.
const initLockHolderKey = "machine"

func initLockName(clusterName string) string { return clusterName + "-k3s-init-lock" }

// acquireInitLock reports whether machine holds the cluster's init lock, taking it if
// it is free or if its holder Machine no longer exists. It reads the lock before
// creating it (ConfigMaps are read from the API server, not a cache): every server
// after the first, and the holder's own later passes, find it taken, and a create
// would only be answered AlreadyExists. Two servers that both find it free still race
// on the create, which the apiserver decides.
func acquireInitLock(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, machine string) (bool, error) {
	for range 2 {
		key := client.ObjectKey{Namespace: cluster.Namespace, Name: initLockName(cluster.Name)}
		existing := &corev1.ConfigMap{}
		err := c.Get(ctx, key, existing)
		switch {
		case apierrors.IsNotFound(err):
			created, err := createInitLock(ctx, c, cluster, machine)
			if err != nil || created {
				return created, err
			}
			continue // taken meanwhile: read the holder
		case err != nil:
			return false, fmt.Errorf("reading init lock: %w", err)
		}
		holder := existing.Data[initLockHolderKey]
		if holder == machine {
			return true, nil
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: holder}, &clusterv1.Machine{})
		switch {
		case err == nil:
			return false, nil
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading init lock holder: %w", err)
		}
		// The holder is gone before initializing: free the lock. The UID precondition
		// keeps us from deleting a lock someone else has just taken.
		if err := c.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil &&
			!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("releasing stale init lock: %w", err)
		}
	}
	return false, nil
}

// createInitLock creates the lock held by machine; false when another has just
// created it.
func createInitLock(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, machine string) (bool, error) {
	lock := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster.Namespace,
			Name:      initLockName(cluster.Name),
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
		},
		Data: map[string]string{initLockHolderKey: machine},
	}
	if err := controllerutil.SetOwnerReference(cluster, lock, c.Scheme()); err != nil {
		return false, fmt.Errorf("init lock: %w", err)
	}
	err := c.Create(ctx, lock)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	}
	return false, fmt.Errorf("creating init lock: %w", err)
}

// releaseInitLockOnce releases the cluster's init lock unless this process already
// did. Once the cluster is initialized nobody takes the lock again (acquireInitLock
// runs only before), so one release per cluster is enough; after a restart the first
// joining config releases it once more, answered 404 at worst. The cluster is marked
// before the delete is sent: the joining configs of a cluster that has just been
// initialized all pass at once, and marking after the delete let every pass that
// started meanwhile send its own. A delete that fails unmarks it for the next pass.
func (r *Reconciler) releaseInitLockOnce(ctx context.Context, cluster *clusterv1.Cluster) error {
	if _, done := r.initLocksReleased.LoadOrStore(cluster.UID, struct{}{}); done {
		return nil
	}
	if err := releaseInitLock(ctx, r.Client, cluster); err != nil {
		r.initLocksReleased.Delete(cluster.UID)
		return err
	}
	return nil
}

// releaseInitLock deletes the lock once the cluster is initialized; it is only needed
// until then.
func releaseInitLock(ctx context.Context, c client.Client, cluster *clusterv1.Cluster) error {
	lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: initLockName(cluster.Name)}}
	if err := c.Delete(ctx, lock); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing init lock: %w", err)
	}
	return nil
}
