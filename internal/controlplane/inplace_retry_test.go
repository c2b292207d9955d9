package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// A CanUpdateMachine question that fails says nothing about whether the server can be
// updated in place: a timeout must not delete a server (with maxSurge 0 the removal
// comes first). The pass returns the error, so controller-runtime asks again with
// backoff; no server is marked or removed meanwhile, and RollingOut says why the
// rollout waits. Once the extension answers, the server is updated in place.
func TestInPlaceRetriesWhenAskingFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error)
		message string
	}{
		{"the extension cannot be called", func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
			return nil, errors.New("connection refused")
		}, "connection refused"},
		{"the extension answers Failure", func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
			return &runtimehooksv1.CanUpdateMachineResponse{CommonResponse: runtimehooksv1.CommonResponse{
				Status: runtimehooksv1.ResponseStatusFailure, Message: "the workload cluster cannot be reached"}}, nil
		}, "the workload cluster cannot be reached"},
		{"the extension's patch does not apply", func(*runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
			return &runtimehooksv1.CanUpdateMachineResponse{
				CommonResponse: runtimehooksv1.CommonResponse{Status: runtimehooksv1.ResponseStatusSuccess},
				MachinePatch:   runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONPatchType, Patch: []byte(`[{"op":"remove","path":"/spec/nothing"}]`)},
			}, nil
		}, "machinePatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := coversVersion()
			covers, failing := rc.answer, true
			rc.answer = func(req *runtimehooksv1.CanUpdateMachineRequest) (*runtimehooksv1.CanUpdateMachineResponse, error) {
				if failing {
					return tc.answer(req)
				}
				return covers(req)
			}
			f := newInPlaceFixture(t, 3, 0, rc)
			f.upgrade(t)
			for range 3 {
				if _, err := f.try(t); err == nil || !strings.Contains(err.Error(), tc.message) {
					t.Errorf("pass error %v, want one saying %q", err, tc.message)
				}
			}
			if n, marked := len(f.servers(t)), f.marked(t); n != 3 || len(marked) != 0 {
				t.Fatalf("after failed questions: %d servers, %v marked; want 3, none", n, marked)
			}
			requireRollingOut(t, f.kcp, controlplanev1.RollingOutReason, tc.message)

			failing = false
			f.pass(t)
			if n, marked := len(f.servers(t)), f.marked(t); n != 3 || len(marked) != 1 {
				t.Errorf("once the extension answers: %d servers, %v marked; want 3, one", n, marked)
			}
		})
	}
}

// A pass whose view of a server's KThreesConfig or infrastructure machine is older
// than the API server's waits for the cache before asking about the server; this
// controller watches neither kind, so no event would bring the next pass: it asks to
// be woken shortly.
func TestInPlaceRequeuesWhileTheCacheLags(t *testing.T) {
	for _, kind := range []string{"KThreesConfig", "infrastructure machine"} {
		t.Run(kind, func(t *testing.T) {
			f := newInPlaceFixture(t, 3, 0, coversVersion())
			f.upgrade(t)
			r := f.reconciler()
			seen := f.observe(t, r)
			// Each server's object changes after the pass read it.
			for name := range f.servers(t) {
				var obj client.Object = &bootstrapv1.KThreesConfig{}
				if kind != "KThreesConfig" {
					u := &unstructured.Unstructured{}
					u.SetGroupVersionKind(genericInfraMachineGVK())
					obj = u
				}
				obj.SetNamespace(f.kcp.Namespace)
				obj.SetName(name)
				if err := env.Client.Patch(context.Background(), obj,
					client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"example.test/touched":"yes"}}}`))); err != nil {
					t.Fatal(err)
				}
			}
			result, err := r.reconcileServers(context.Background(), f.cluster, f.kcp, true, seen)
			if err != nil {
				t.Fatal(err)
			}
			if result.RequeueAfter <= 0 || result.RequeueAfter > 10*time.Second {
				t.Errorf("RequeueAfter = %s while the cache lags; want a short wait", result.RequeueAfter)
			}
			if n, marked := len(f.servers(t)), f.marked(t); n != 3 || len(marked) != 0 || f.rc.callCount() != 0 {
				t.Errorf("%d servers, %v marked, %d calls on a lagging cache; want 3, none, none", n, marked, f.rc.callCount())
			}
		})
	}
}
