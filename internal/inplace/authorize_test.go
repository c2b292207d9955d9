package inplace

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/scheme"
)

// The extension acts only on what the Machine's owner decided, as stored: a request
// is only the caller's word. A fake client stands in for the API server: what is
// tested is which stored state is accepted, not how it is read.
func TestAuthorizeUpdate(t *testing.T) {
	t.Parallel()
	marked := func(m *clusterv1.Machine) {
		m.Annotations = map[string]string{
			clusterv1.UpdateInProgressAnnotation: "",
			runtimev1.PendingHooksAnnotation:     "AfterClusterUpgrade,UpdateMachine",
		}
	}
	stored := func(version string, edit func(*clusterv1.Machine)) *clusterv1.Machine {
		m := &clusterv1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cp-0"},
			Spec: clusterv1.MachineSpec{ClusterName: "c1", Version: version, Bootstrap: clusterv1.Bootstrap{
				ConfigRef: clusterv1.ContractVersionedObjectReference{APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: "cp-0"},
			}},
		}
		if edit != nil {
			edit(m)
		}
		return m
	}
	config := func(version string) *bootstrapv1.KThreesConfig {
		return &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cp-0"}, Spec: bootstrapv1.KThreesConfigSpec{Version: version}}
	}
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		requested string
		want      string // the target version; "" when refused
		refusal   string // part of the refusal
	}{
		{"marked, the version as stored", []client.Object{stored("v1.32.1+k3s1", marked)}, "v1.32.1+k3s1", "v1.32.1+k3s1", ""},
		{"marked, the request names no version", []client.Object{stored("v1.32.1+k3s1", marked)}, "", "v1.32.1+k3s1", ""},
		{"the KThreesConfig's version wins", []client.Object{stored("v1.32.1+k3s1", marked), config("v1.32.2+k3s1")}, "v1.32.2+k3s1", "v1.32.2+k3s1", ""},
		{"not marked", []client.Object{stored("v1.32.1+k3s1", nil)}, "v1.32.1+k3s1", "", "not marked for an in-place update"},
		{"annotation without the pending hook", []client.Object{stored("v1.32.1+k3s1", func(m *clusterv1.Machine) {
			m.Annotations = map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "UpdateMachines"}
		})}, "v1.32.1+k3s1", "", "not marked"},
		{"pending hook without the annotation", []client.Object{stored("v1.32.1+k3s1", func(m *clusterv1.Machine) {
			m.Annotations = map[string]string{runtimev1.PendingHooksAnnotation: "UpdateMachine"}
		})}, "v1.32.1+k3s1", "", "not marked"},
		{"another version than the stored one", []client.Object{stored("v1.32.1+k3s1", marked)}, "v1.30.0+k3s1", "", "asks for version v1.30.0+k3s1"},
		{"being deleted", []client.Object{stored("v1.32.1+k3s1", func(m *clusterv1.Machine) {
			marked(m)
			m.Finalizers = []string{"test"}
			m.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		})}, "v1.32.1+k3s1", "", "being deleted"},
		{"no such Machine", nil, "v1.32.1+k3s1", "", "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &Extension{Client: fake.NewClientBuilder().WithScheme(scheme.ForControlPlane()).WithObjects(tc.objs...).Build()}
			req := &runtimehooksv1.UpdateMachineRequest{}
			req.Desired.Machine.Namespace, req.Desired.Machine.Name = "ns", "cp-0"
			// What the request says of the cluster is never used.
			req.Desired.Machine.Spec.ClusterName = "someone-elses"
			got, err := e.authorizeUpdate(context.Background(), req, tc.requested)
			if tc.refusal != "" {
				if !errors.Is(err, errUpdateFailed) || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("authorizeUpdate = %v, want a refusal about %q", err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.version != tc.want || got.cluster != (client.ObjectKey{Namespace: "ns", Name: "c1"}) {
				t.Errorf("authorizeUpdate = version %q cluster %v, want %q ns/c1", got.version, got.cluster, tc.want)
			}
		})
	}
}
