package controlplane

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// inPlaceObjects are the three objects of one server as an in-place update would
// leave them.
type inPlaceObjects struct {
	machine *clusterv1.Machine
	config  *bootstrapv1.KThreesConfig
	infra   *unstructured.Unstructured
	// currentInfra is the server's infrastructure machine as it is, normalized by the
	// API server as infra is (inplace_infra.go), so that the CanUpdateMachine request
	// compares the two alike: defaults added since the machine was stored are no
	// change.
	currentInfra *unstructured.Unstructured
}

// desiredServerObjects computes what an existing server's Machine, KThreesConfig and
// infrastructure machine should be now, with desiredstate.go; the infrastructure
// machine needs the templates and the API server's normalization (inplace_infra.go),
// read here. why says the server cannot be updated in place, and why not.
func (r *Reconciler) desiredServerObjects(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane,
	m *clusterv1.Machine, objs serverObjects) (want inPlaceObjects, why string, err error) {
	if objs.config == nil || objs.infra == nil {
		return inPlaceObjects{}, "", errors.New("the server's KThreesConfig or infrastructure machine could not be read")
	}
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	template, err := external.GetObjectFromContractVersionedRef(ctx, r.Client, ref, kcp.Namespace)
	if err != nil {
		return inPlaceObjects{}, "", fmt.Errorf("reading infrastructure template %s %s: %w", ref.Kind, ref.Name, err)
	}
	fromTemplate, err := desiredInfraMachine(template, kcp, cluster, m.Name)
	if err != nil {
		return inPlaceObjects{}, "", err
	}
	previous, why, err := r.previousTemplateSpec(ctx, objs.infra, kcp)
	if why != "" || err != nil {
		return inPlaceObjects{}, why, err
	}
	want = inPlaceObjects{
		machine: desiredServerMachine(kcp, cluster, m),
		config:  desiredKThreesConfig(kcp, cluster, m.Name),
	}
	if want.infra, why, err = r.normalizedInfra(ctx, desiredExistingInfraMachine(objs.infra, fromTemplate, previous), "desired"); why != "" || err != nil {
		return inPlaceObjects{}, why, err
	}
	if want.currentInfra, why, err = r.normalizedInfra(ctx, objs.infra, "current"); why != "" || err != nil {
		return inPlaceObjects{}, why, err
	}
	return want, "", nil
}
