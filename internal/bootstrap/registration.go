package bootstrap

import (
	"context"
	"fmt"
	"net"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes,verbs=get;list;watch

// controlPlaneGVK is capk3s's control plane, read without its Go types: the bootstrap
// manager does not register the control-plane API, and it needs two fields of it.
var controlPlaneGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KThreesControlPlane"}

// Registration methods of the control plane (its spec.registrationMethod) that send
// joiners to a server's own address.
const (
	registrationInternalAddress = "InternalAddress"
	registrationExternalAddress = "ExternalAddress"
)

// joinURL is the k3s server URL a joining server or agent is given: the Cluster's
// control-plane endpoint, or, when its KThreesControlPlane joins machines through a
// server's address, the server the control plane published in status.registration.
// ready is false, with the reason set on the config, while the control plane has
// published none.
func (r *Reconciler) joinURL(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig) (url string, ready bool, err error) {
	endpoint := cluster.Spec.ControlPlaneEndpoint
	byEndpoint := "https://" + net.JoinHostPort(endpoint.Host, strconv.Itoa(int(endpoint.Port)))
	ref := cluster.Spec.ControlPlaneRef
	if ref.APIGroup != controlPlaneGVK.Group || ref.Kind != controlPlaneGVK.Kind || ref.Name == "" {
		return byEndpoint, true, nil
	}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(controlPlaneGVK)
	// Unstructured reads are not cached by the manager's client: this is a live read,
	// once per rendering.
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, cp)
	if apierrors.IsNotFound(err) {
		// No control plane object (not made yet, or gone): nothing asks for another
		// way than the endpoint.
		return byEndpoint, true, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading the cluster's %s %s: %w", ref.Kind, ref.Name, err)
	}
	method, address, port := registrationOf(cp)
	if method != registrationInternalAddress && method != registrationExternalAddress {
		return byEndpoint, true, nil
	}
	if address == "" || port <= 0 {
		waiting(config, bootstrapv1.WaitingForRegistrationServerReason, fmt.Sprintf(
			"Waiting for %s %s to publish a ready server to join through (registrationMethod %s): no server is Ready with such an address",
			ref.Kind, ref.Name, method))
		return "", false, nil
	}
	return "https://" + net.JoinHostPort(address, strconv.FormatInt(port, 10)), true, nil
}

// registrationOf is what of a control plane decides the join URL: its method and
// the server it published.
func registrationOf(o client.Object) (method, address string, port int64) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return "", "", 0
	}
	method, _, _ = unstructured.NestedString(u.Object, "spec", "registrationMethod")
	address, _, _ = unstructured.NestedString(u.Object, "status", "registration", "address")
	port, _, _ = unstructured.NestedInt64(u.Object, "status", "registration", "port")
	return method, address, port
}
