package inplace

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capk3s/capk3s/internal/scheme"
)

// countingWorkload counts the calls that would reach a workload cluster, and reaches
// none.
type countingWorkload struct{ calls atomic.Int32 }

func (w *countingWorkload) GetUncachedClient(context.Context, client.ObjectKey) (client.Client, error) {
	w.calls.Add(1)
	return nil, errors.New("no workload cluster in this test")
}

// FuzzHandlers sends the extension's handlers arbitrary request bodies, as anybody
// who holds a client certificate could. No body makes a handler panic or answer
// without a status, and UpdateMachine never reaches a workload cluster for a Machine
// its owner did not mark, whatever the body says of versions, clusters or
// annotations.
func FuzzHandlers(f *testing.F) {
	for _, seed := range []string{
		`{"desired":{"machine":{"metadata":{"namespace":"ns","name":"cp-0"},"spec":{"clusterName":"c1","version":"v1.31.0+k3s1"}}}}`,
		`{"desired":{"machine":{"metadata":{"namespace":"ns","name":"cp-0","annotations":{"in-place-updates.internal.cluster.x-k8s.io/update-in-progress":"","runtime.cluster.x-k8s.io/pending-hooks":"UpdateMachine"}},"spec":{"version":"v1.30.0"}}}}`,
		`{"current":{"machine":{"spec":{"version":"v1.31.0+k3s1"}}},"desired":{"machine":{"spec":{"version":"v1.32.0+k3s1"}},"bootstrapConfig":{"spec":{"version":"x"}}}}`,
		`{"desired":{"machineSet":{"spec":{"template":{"spec":{"version":"v2.0.0"}}}},"infrastructureMachineTemplate":[1,2]}}`,
		`{}`, `null`, `[`,
	} {
		f.Add([]byte(seed))
	}
	unmarked := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cp-0"},
		Spec:       clusterv1.MachineSpec{ClusterName: "c1", Version: "v1.31.0+k3s1"},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		workload := &countingWorkload{}
		e := &Extension{
			Client:   fake.NewClientBuilder().WithScheme(scheme.ForControlPlane()).WithObjects(unmarked.DeepCopy()).Build(),
			Workload: workload,
		}
		ctx := context.Background()

		up := &runtimehooksv1.UpdateMachineRequest{}
		if json.Unmarshal(body, up) == nil {
			resp := &runtimehooksv1.UpdateMachineResponse{}
			e.UpdateMachine(ctx, up, resp)
			if resp.Status == "" {
				t.Errorf("UpdateMachine answered without a status: %q", resp.Message)
			}
			if n := workload.calls.Load(); n != 0 {
				t.Errorf("UpdateMachine reached a workload cluster %d times for an unmarked Machine (answer %s %q)", n, resp.Status, resp.Message)
			}
		}
		can := &runtimehooksv1.CanUpdateMachineRequest{}
		if json.Unmarshal(body, can) == nil {
			resp := &runtimehooksv1.CanUpdateMachineResponse{}
			e.CanUpdateMachine(ctx, can, resp)
			if resp.Status == "" {
				t.Errorf("CanUpdateMachine answered without a status: %q", resp.Message)
			}
		}
		canSet := &runtimehooksv1.CanUpdateMachineSetRequest{}
		if json.Unmarshal(body, canSet) == nil {
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			e.CanUpdateMachineSet(ctx, canSet, resp)
			if resp.Status == "" {
				t.Errorf("CanUpdateMachineSet answered without a status: %q", resp.Message)
			}
		}
	})
}
