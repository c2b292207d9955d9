package apitest

import (
	"context"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			// Without webhooks only the schema stands between a user and a control
			// plane with no servers.
			name: "zero replicas",
			object: func() client.Object {
				kcp := newControlPlane(ns, "zero")
				kcp.Spec.Replicas = ptr.To[int32](0)
				return kcp
			},
			wantInMsg: "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
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
			name: "certificatesExpiryDays below KCP's minimum",
			object: func() client.Object {
				kcp := newControlPlane(ns, "expiry-low")
				kcp.Spec.Rollout.Before.CertificatesExpiryDays = 6
				return kcp
			},
			wantInMsg: "must be between 7 and 110 days: k3s renews at restart only certificates that expire within 120 days",
		},
		{
			// k3s renews nothing beyond its 120-day window: a restart would be for nothing.
			name: "certificatesExpiryDays beyond k3s's renewal window",
			object: func() client.Object {
				kcp := newControlPlane(ns, "expiry-high")
				kcp.Spec.Rollout.Before.CertificatesExpiryDays = 111
				return kcp
			},
			wantInMsg: "spec.rollout.before.certificatesExpiryDays: Invalid value",
		},
		{
			name: "certificatesExpiryDays of a template beyond k3s's renewal window",
			object: func() client.Object {
				tpl := &controlplanev1.KThreesControlPlaneTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "expiry-template"}}
				tpl.Spec.Template.Spec.Rollout.Before.CertificatesExpiryDays = 120
				return tpl
			},
			wantInMsg: "must be between 7 and 110 days",
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

// 'kubectl scale --replicas=0' writes through the scale subresource; the schema's
// minimum must hold there too, and leave the stored count as it was.
func TestSchemaRejectsScaleToZero(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	kcp := newControlPlane(ns, "scaled-to-zero")
	kcp.Spec.Replicas = ptr.To[int32](3)
	if err := env.Client.Create(ctx, kcp); err != nil {
		t.Fatal(err)
	}
	err := env.Client.SubResource("scale").Update(ctx, kcp,
		client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 0}}))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Fatalf("scaling to 0 = %v, want an Invalid error naming spec.replicas", err)
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
		t.Errorf("spec.replicas after the refused scale = %v, want 3", got.Spec.Replicas)
	}
}
