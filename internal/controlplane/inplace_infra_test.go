package controlplane

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util/contract"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// defaultingInfra is an infrastructure provider whose API server normalizes what a
// template gives: its machines' schema defaults spec.tier and each disk's sizeGB,
// which its templates leave out, as a provider's defaulting webhook would.
var defaultingInfra = schema.GroupVersion{Group: "defaulting.infrastructure.cluster.x-k8s.io", Version: "v1beta2"}

const (
	defaultingMachineKind  = "DefaultingMachine"
	defaultingTemplateKind = "DefaultingMachineTemplate"
)

var installDefaultingInfra sync.Once

// ensureDefaultingInfraCRDs installs the provider's two CRDs, once per apiserver.
func ensureDefaultingInfraCRDs(t *testing.T) {
	t.Helper()
	installDefaultingInfra.Do(func() {
		str := apiextensionsv1.JSONSchemaProps{Type: "string"}
		machineSpec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"providerID": str,
			"size":       str,
			"tier":       {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"standard"`)}},
			"disks": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"name":   str,
					"sizeGB": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte(`10`)}},
				}}}},
		}}
		loose := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
		templateSpec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"template": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": loose}},
		}}
		for kind, spec := range map[string]apiextensionsv1.JSONSchemaProps{defaultingMachineKind: machineSpec, defaultingTemplateKind: templateSpec} {
			plural := strings.ToLower(kind) + "s"
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: contract.CalculateCRDName(defaultingInfra.Group, kind),
					Labels: map[string]string{clusterv1.GroupVersion.String(): defaultingInfra.Version}},
				Spec: apiextensionsv1.CustomResourceDefinitionSpec{
					Group: defaultingInfra.Group, Scope: apiextensionsv1.NamespaceScoped,
					Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
					Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
						Name: defaultingInfra.Version, Served: true, Storage: true,
						Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
						Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
							Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": loose},
						}},
					}},
				},
			}
			if err := env.Client.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("installing %s: %v", kind, err)
			}
			if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				got := &apiextensionsv1.CustomResourceDefinition{}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
					return false, nil //nolint:nilerr // not there yet
				}
				for _, c := range got.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						return true, nil
					}
				}
				return false, nil
			}); err != nil {
				t.Fatalf("%s not established: %v", kind, err)
			}
		}
	})
}

// createDefaultingTemplate creates a template of the defaulting provider with spec as
// its machines' spec.
func createDefaultingTemplate(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	tmpl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}}}
	tmpl.SetGroupVersionKind(defaultingInfra.WithKind(defaultingTemplateKind))
	tmpl.SetNamespace(ns)
	tmpl.SetName(name)
	if err := env.Client.Create(context.Background(), tmpl); err != nil {
		t.Fatal(err)
	}
}

func useDefaultingTemplate(kcp *controlplanev1.KThreesControlPlane, name string) {
	kcp.Spec.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
		APIGroup: defaultingInfra.Group, Kind: defaultingTemplateKind, Name: name}
}

// recordsRequests is coversVersion that keeps the requests it was asked.
func recordsRequests() (*testRuntimeClient, func() []*runtimehooksv1.CanUpdateMachineRequest) {
	rc := coversVersion()
	cover := rc.answer
	var mu sync.Mutex
	var seen []*runtimehooksv1.CanUpdateMachineRequest
	rc.answer = func(req *runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
		mu.Lock()
		seen = append(seen, req.DeepCopy())
		mu.Unlock()
		return cover(req)
	}
	return rc, func() []*runtimehooksv1.CanUpdateMachineRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]*runtimehooksv1.CanUpdateMachineRequest(nil), seen...)
	}
}

func infraSpecOf(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	spec, _ := obj["spec"].(map[string]any)
	return spec
}

// A provider whose API server fills in what its template leaves out (a default in each
// disk of a list the template sets) does not make its servers look changed forever:
// the desired infrastructure machine is what the API server would store, so a k3s
// upgrade the extension covers goes in place, and the trigger writes the defaulted
// spec, not the template's bare one.
func TestInPlaceInfraMachineNormalizedByTheAPIServer(t *testing.T) {
	ensureDefaultingInfraCRDs(t)
	rc, requests := recordsRequests()
	f := newInPlaceFixtureWith(t, 3, 0, rc, func(ns string, kcp *controlplanev1.KThreesControlPlane) {
		createDefaultingTemplate(t, ns, "small", map[string]any{"size": "small", "disks": []any{map[string]any{"name": "root"}}})
		useDefaultingTemplate(kcp, "small")
	})
	f.upgrade(t)
	f.pass(t)
	marked := f.marked(t)
	if len(marked) != 1 {
		reqs := requests()
		var why string
		if len(reqs) > 0 {
			why = string(reqs[0].Desired.InfrastructureMachine.Raw)
		}
		t.Fatalf("servers updating in place %v, want one; RollingOut %+v; desired infrastructure machine %s",
			marked, f.kcp.Status.Conditions, why)
	}
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(defaultingInfra.WithKind(defaultingMachineKind))
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.kcp.Namespace, Name: marked[0]}, infra); err != nil {
		t.Fatal(err)
	}
	disks, _, _ := unstructured.NestedSlice(infra.Object, "spec", "disks")
	if len(disks) != 1 || disks[0].(map[string]any)["sizeGB"] != int64(10) {
		t.Errorf("disks after the trigger %v, want the defaulted root disk", disks)
	}
}

// A field the server's old template set and the new one does not is gone from the
// desired infrastructure machine the extension is asked about (and the API server's
// default takes its place), rather than kept from the old template; a field the
// provider wrote (the provider ID) stays.
func TestInPlaceInfraMachineDropsFieldsTheOldTemplateSet(t *testing.T) {
	ensureDefaultingInfraCRDs(t)
	rc, requests := recordsRequests()
	f := newInPlaceFixtureWith(t, 3, 0, rc, func(ns string, kcp *controlplanev1.KThreesControlPlane) {
		createDefaultingTemplate(t, ns, "gold", map[string]any{"size": "large", "tier": "gold"})
		createDefaultingTemplate(t, ns, "plain", map[string]any{"size": "small"})
		useDefaultingTemplate(kcp, "gold")
	})
	ctx := context.Background()
	for name := range f.servers(t) {
		infra := &unstructured.Unstructured{}
		infra.SetGroupVersionKind(defaultingInfra.WithKind(defaultingMachineKind))
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: f.kcp.Namespace, Name: name}, infra); err != nil {
			t.Fatal(err)
		}
		before := infra.DeepCopy()
		_ = unstructured.SetNestedField(infra.Object, "sim://"+name, "spec", "providerID")
		if err := env.Client.Patch(ctx, infra, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	useDefaultingTemplate(f.kcp, "plain")
	f.upgrade(t)
	f.pass(t)
	reqs := requests()
	if len(reqs) == 0 {
		t.Fatalf("the extension was not asked; RollingOut %+v", f.kcp.Status.Conditions)
	}
	spec := infraSpecOf(t, reqs[0].Desired.InfrastructureMachine.Raw)
	if spec["size"] != "small" || spec["tier"] != "standard" || !strings.HasPrefix(spec["providerID"].(string), "sim://") {
		t.Errorf("desired infrastructure machine spec %v, want size small, the default tier standard (not the old template's gold) and the provider ID", spec)
	}
	if current := infraSpecOf(t, reqs[0].Current.InfrastructureMachine.Raw); current["tier"] != "gold" {
		t.Errorf("current infrastructure machine spec %v, want the old template's tier gold", current)
	}
}

// When the template a server was cloned from is gone, what it set cannot be told from
// what the provider wrote: the server is replaced, and RollingOut says why, without
// asking the extension.
func TestInPlaceInfraMachineOldTemplateDeleted(t *testing.T) {
	ensureDefaultingInfraCRDs(t)
	rc, _ := recordsRequests()
	f := newInPlaceFixtureWith(t, 3, 0, rc, func(ns string, kcp *controlplanev1.KThreesControlPlane) {
		createDefaultingTemplate(t, ns, "gold", map[string]any{"size": "large", "tier": "gold"})
		createDefaultingTemplate(t, ns, "plain", map[string]any{"size": "small"})
		useDefaultingTemplate(kcp, "gold")
	})
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(defaultingInfra.WithKind(defaultingTemplateKind))
	old.SetNamespace(f.kcp.Namespace)
	old.SetName("gold")
	if err := env.Client.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	useDefaultingTemplate(f.kcp, "plain")
	f.upgrade(t)
	f.pass(t)
	if marked := f.marked(t); len(marked) != 0 {
		t.Errorf("servers %v marked for an in-place update", marked)
	}
	if n := len(f.servers(t)); n != 2 {
		t.Errorf("%d servers, want 2: one removed to be replaced", n)
	}
	requireRollingOut(t, f.kcp, controlplanev1.RollingOutReason, "/gold it was cloned from is gone")
	if rc.callCount() != 0 {
		t.Errorf("the extension was asked %d times", rc.callCount())
	}
}
