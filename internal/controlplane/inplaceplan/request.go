package inplaceplan

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// Objects are one server's three objects, on one side of a CanUpdateMachine request.
type Objects struct {
	Machine *clusterv1.Machine
	// Config is the server's KThreesConfig with its spec normalized as the up-to-date
	// decision compares it, so that the extension sees exactly the differences that
	// make the server outdated.
	Config *bootstrapv1.KThreesConfig
	// Infra is the infrastructure machine as an unstructured object's content.
	Infra map[string]any
}

// CanUpdateRequest is the CanUpdateMachine request for one server: its current
// objects and the desired ones, each with its name, labels, annotations and spec only.
func CanUpdateRequest(current, desired Objects) (*runtimehooksv1.CanUpdateMachineRequest, error) {
	req := &runtimehooksv1.CanUpdateMachineRequest{
		Current: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: requestMachine(current.Machine)},
		Desired: runtimehooksv1.CanUpdateMachineRequestObjects{Machine: requestMachine(desired.Machine)},
	}
	var err error
	if req.Current.BootstrapConfig, err = rawObject(requestConfig(current.Config)); err != nil {
		return nil, err
	}
	if req.Desired.BootstrapConfig, err = rawObject(requestConfig(desired.Config)); err != nil {
		return nil, err
	}
	if req.Current.InfrastructureMachine, err = rawObject(requestInfra(current.Infra)); err != nil {
		return nil, err
	}
	if req.Desired.InfrastructureMachine, err = rawObject(requestInfra(desired.Infra)); err != nil {
		return nil, err
	}
	return req, nil
}

func requestMachine(m *clusterv1.Machine) clusterv1.Machine {
	return clusterv1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name,
			Labels: m.Labels, Annotations: m.Annotations},
		Spec: *m.Spec.DeepCopy(),
	}
}

func requestConfig(c *bootstrapv1.KThreesConfig) *bootstrapv1.KThreesConfig {
	return &bootstrapv1.KThreesConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "KThreesConfig"},
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name,
			Labels: c.Labels, Annotations: c.Annotations},
		Spec: *c.Spec.DeepCopy(),
	}
}

func requestInfra(u map[string]any) map[string]any {
	out := map[string]any{"apiVersion": u["apiVersion"], "kind": u["kind"], "spec": u["spec"]}
	if md, ok := u["metadata"].(map[string]any); ok {
		keep := map[string]any{}
		for _, k := range []string{"namespace", "name", "labels", "annotations"} {
			if v, ok := md[k]; ok {
				keep[k] = v
			}
		}
		out["metadata"] = keep
	}
	return out
}

// rawObject carries an object as JSON: what goes on the wire, and what the patches and
// the comparison work on, so that both sides of a comparison went through the same
// encoding.
func rawObject(obj any) (runtime.RawExtension, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}, fmt.Errorf("encoding a CanUpdateMachine object: %w", err)
	}
	return runtime.RawExtension{Raw: raw}, nil
}
