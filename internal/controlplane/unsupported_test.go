package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

// A control plane stored with an option capk3s refuses (supervisor-port, before the
// webhook refused it or with the webhook off) creates no server whose config the
// KThreesConfig webhook would refuse, or whose supervisor nothing could reach: it
// says so on ScalingUp, naming the option, until the option is removed.
func TestStoredUnsupportedOptionStopsScaleUp(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	startManager(t)
	createInfraTemplate(t, ns)
	port, err := envtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cluster, kcp := createStepTestCluster(t, ns, clusterv1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)})
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	if err := env.Client.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	before := kcp.DeepCopy()
	kcp.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = map[string]apiextensionsv1.JSON{"supervisor-port": {Raw: []byte("9345")}}
	if err := controllerutil.SetOwnerReference(cluster, kcp, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, kcp, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	var scaling *metav1.Condition
	if err := envtest.Eventually(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
			return false, err
		}
		scaling = conditions.Get(got, controlplanev1.ScalingUpCondition)
		return got.Status.ObservedGeneration == got.Generation && scaling != nil &&
			strings.Contains(scaling.Message, "spec.kthreesConfigSpec.serverConfig.extraConfig[supervisor-port]") &&
			strings.Contains(scaling.Message, "capk3s does not support k3s's supervisor-port"), nil
	}); err != nil {
		t.Fatalf("the control plane never said why it creates no server: %v; ScalingUp %+v", err, scaling)
	}
	if servers := listServers(t, ns); len(servers) != 0 {
		t.Fatalf("the control plane created %v with an option capk3s refuses", keysOf(servers))
	}

	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(kcp), got); err != nil {
		t.Fatal(err)
	}
	before = got.DeepCopy()
	got.Spec.KThreesConfigSpec.ServerConfig.ExtraConfig = nil
	if err := env.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	if err := envtest.Eventually(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(listServers(t, ns)) > 0, nil
	}); err != nil {
		t.Fatal("the control plane created no server once the option was removed")
	}
}
