package bootstrap

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/token"
	"github.com/capk3s/capk3s/test/envtest"
)

// secretGets records the Secrets a manager reads one by one from the apiserver (GETs;
// a cache's LIST and WATCH are not reads of one Secret).
type secretGets struct {
	infos *request.RequestInfoFactory
	mu    sync.Mutex
	names []string
	// all counts every request, so that the test knows the wrapping took effect.
	all int
}

func (g *secretGets) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		info, err := g.infos.NewRequestInfo(req)
		g.mu.Lock()
		g.all++
		if err == nil && info.IsResourceRequest && info.Verb == "get" && info.Resource == "secrets" {
			g.names = append(g.names, info.Name)
		}
		g.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (g *secretGets) of(names ...string) []string {
	want := sets.New(names...)
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, n := range g.names {
		if want.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Rendering a joining server and an agent reads the cluster's CAs and join token from
// the manager's Secret cache, never one by one from the API server: at hundreds of
// clusters those reads were most of the bootstrap side's requests.
func TestRendersReadTheClusterSecretsFromTheCache(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)

	gets := &secretGets{infos: &request.RequestInfoFactory{
		APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api"),
	}}
	// The Secrets exist before the manager starts, so its cache's first list has them.
	env.StartManager(t, envtest.ManagerOptions{WrapTransport: gets.wrap}, func(ctx context.Context, mgr ctrl.Manager) error {
		return (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 2})
	})
	server := newMachineWithConfig(t, cluster, "server-1", true, bootstrapv1.KThreesConfigSpec{})
	agent := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{})
	for _, config := range []*bootstrapv1.KThreesConfig{server, agent} {
		s := waitForDataSecret(t, config)
		if !strings.Contains(string(s.Data["value"]), "K10") {
			t.Errorf("%s: the bootstrap data carries no secure join token", config.Name)
		}
	}
	clusterSecrets := []string{cluster.Name + "-ca", cluster.Name + "-cca", cluster.Name + "-etcd", token.SecretName(cluster.Name)}
	if live := gets.of(clusterSecrets...); len(live) != 0 {
		t.Errorf("rendering read %d cluster Secrets from the API server: %v; want them from the cache", len(live), live)
	}
	gets.mu.Lock()
	defer gets.mu.Unlock()
	if gets.all == 0 {
		t.Fatal("no request of the manager was seen: the transport was not wrapped")
	}
}
