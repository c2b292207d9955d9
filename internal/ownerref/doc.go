// Package ownerref repairs the owner references of objects that the control
// plane must control, chiefly the k3s join-token Secret "<cluster>-token".
//
// cluster-api-k3s made that Secret controller-owned by the KThreesConfig of
// one machine, so rolling that machine out let the garbage collector delete
// the token and no new node could join. The control plane therefore takes
// such objects over on every reconcile: it becomes their only controller,
// every reference to a KThreesConfig is dropped, and any other owner (the
// Cluster, for instance) is kept as a plain owner, because losing it could
// change when the object is garbage collected while keeping it is harmless.
//
// Only objects without a controller, or controlled by a Cluster, a
// KThreesControlPlane or a KThreesConfig, are taken over. An object that other
// software controls (SealedSecrets, External Secrets, a user's controller) is
// that software's: ExternalController finds it, and TakeOver refuses it. The
// same rule decides for the token, the CA and the kubeconfig Secrets.
package ownerref
