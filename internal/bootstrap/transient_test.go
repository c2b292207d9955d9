package bootstrap

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// errAPIUnavailable is what a Secret read returns while the apiserver is overloaded
// or restarting: the Secret may well exist.
var errAPIUnavailable = apierrors.NewServiceUnavailable("the apiserver is restarting")

// clientFailingSecretReads is a real client whose reads of the named Secrets fail
// with errAPIUnavailable.
func clientFailingSecretReads(t *testing.T, namespace string, names ...string) client.Client {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	failing := map[client.ObjectKey]bool{}
	for _, n := range names {
		failing[client.ObjectKey{Namespace: namespace, Name: n}] = true
	}
	return interceptor.NewClient(inner, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, isSecret := obj.(*corev1.Secret); isSecret && failing[key] {
				return errAPIUnavailable
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// createCAs makes the cluster CAs as the first server (or the control plane) does.
func createCAs(t *testing.T, cluster *clusterv1.Cluster) {
	t.Helper()
	if err := k3s.ClusterCertificates().LookupOrGenerate(context.Background(), env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}); err != nil {
		t.Fatal(err)
	}
}

// A Secret read that fails for any reason but NotFound is not a missing Secret: the
// error goes back to controller-runtime, which retries with backoff, and the config's
// status does not claim it is waiting for something that may well exist. Nothing
// would wake a config waiting for a Secret that is already there.
func TestTransientSecretErrorsAreRetriedNotWaitedFor(t *testing.T) {
	tests := []struct {
		name string
		// failing names the Secrets whose reads fail, given the cluster's name.
		failing func(cluster string) []string
		server  bool
		spec    bootstrapv1.KThreesConfigSpec
	}{
		{name: "server CA read by an agent", failing: func(c string) []string { return []string{c + "-ca"} }},
		{name: "CA read by a joining server", server: true, failing: func(c string) []string { return []string{c + "-ca"} }},
		{name: "join token", failing: func(c string) []string { return []string{token.SecretName(c)} }},
		{name: "file content Secret", failing: func(string) []string { return []string{"motd"} },
			spec: bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{{Path: "/etc/motd",
				ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "motd", Key: "text"}}}}}},
		{name: "registry credentials Secret", failing: func(string) []string { return []string{"registry-auth"} },
			spec: bootstrapv1.KThreesConfigSpec{AgentConfig: bootstrapv1.KThreesAgentConfig{Registries: &bootstrapv1.Registries{
				Configs: []bootstrapv1.RegistryConfig{{Registry: "registry.example.com", AuthSecret: &bootstrapv1.SecretReference{Name: "registry-auth"}}},
			}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.NewNamespace(t)
			cluster := newInitializedCluster(t, ns)
			config := newMachineWithConfig(t, cluster, "machine-0", tt.server, tt.spec)

			err := pass(clientFailingSecretReads(t, ns, tt.failing(cluster.Name)...), config)
			if !apierrors.IsServiceUnavailable(err) {
				t.Errorf("Reconcile = %v, want the read error returned (wrapped) for a retry", err)
			}
			got := getConfig(t, config)
			if c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition); c != nil {
				t.Errorf("DataSecretAvailable set to %s/%s %q after a failed read; want it left alone", c.Status, c.Reason, c.Message)
			}
			if c := conditions.Get(got, bootstrapv1.CertificatesAvailableCondition); c != nil && c.Status == metav1.ConditionFalse {
				t.Errorf("CertificatesAvailable set to False (%s) after a failed read", c.Reason)
			}
			if got.Status.DataSecretName != "" {
				t.Errorf("data secret reported: %q", got.Status.DataSecretName)
			}
		})
	}
}
