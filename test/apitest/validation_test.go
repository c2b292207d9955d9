package apitest

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Each case breaks one rule of the schema; the apiserver must refuse the object as
// Invalid, with a message naming the field, and store nothing.
func TestSchemaRejectsInvalidObjects(t *testing.T) {
	ns := env.NewNamespace(t)
	cases := []struct {
		name      string
		object    func() client.Object
		wantInMsg string
	}{
		{
			name: "negative replicas",
			object: func() client.Object {
				kcp := newControlPlane(ns, "negative")
				kcp.Spec.Replicas = ptr.To[int32](-1)
				return kcp
			},
			wantInMsg: "spec.replicas",
		},
		{
			name: "maxSurge other than 0 or 1",
			object: func() client.Object {
				kcp := newControlPlane(ns, "surge")
				kcp.Spec.RolloutStrategy = &controlplanev1.RolloutStrategy{
					Type:          controlplanev1.RollingUpdateStrategyType,
					RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(2))},
				}
				return kcp
			},
			wantInMsg: "maxSurge must be 0 or 1",
		},
		{
			name: "not a version",
			object: func() client.Object {
				kcp := newControlPlane(ns, "version")
				kcp.Spec.Version = "latest"
				return kcp
			},
			wantInMsg: "spec.version",
		},
		{
			name: "no infrastructure reference at all",
			object: func() client.Object {
				kcp := newControlPlane(ns, "noinfra")
				kcp.Spec.MachineTemplate = controlplanev1.KThreesControlPlaneMachineTemplate{}
				return kcp
			},
			wantInMsg: "spec.machineTemplate.spec.infrastructureRef is required",
		},
		{
			name: "unknown file encoding",
			object: func() client.Object {
				config := newConfig(ns, "encoding")
				config.Spec.Files[0].Encoding = "rot13"
				return config
			},
			wantInMsg: "spec.files[0].encoding",
		},
		{
			name: "file with content and contentFrom",
			object: func() client.Object {
				config := newConfig(ns, "both")
				config.Spec.Files[0].ContentFrom = &bootstrapv1.FileSource{
					Secret: bootstrapv1.SecretFileSource{Name: "s", Key: "k"},
				}
				return config
			},
			wantInMsg: "set either content or contentFrom, not both",
		},
		{
			name: "bad permissions",
			object: func() client.Object {
				config := newConfig(ns, "perm")
				config.Spec.Files[0].Permissions = "rw-r--r--"
				return config
			},
			wantInMsg: "spec.files[0].permissions",
		},
		{
			name: "registries and privateRegistry together",
			object: func() client.Object {
				config := newConfig(ns, "registries")
				config.Spec.AgentConfig.PrivateRegistry = "/etc/rancher/k3s/registries.yaml"
				return config
			},
			wantInMsg: "set either agentConfig.privateRegistry",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.object()
			err := env.Client.Create(context.Background(), obj)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("Create = %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("error %q does not mention %q", err, tc.wantInMsg)
			}
			if getErr := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(getErr) {
				t.Errorf("rejected object was stored anyway (Get = %v)", getErr)
			}
		})
	}
}
