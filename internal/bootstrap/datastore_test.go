package bootstrap

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/envtest"
)

const (
	datastorePassword = "pg-pa55word"
	datastoreEndpoint = "postgres://k3s:" + datastorePassword + "@db.example.com:5432/k3s"
)

// logBuffer collects the controller's log lines up to V(6). client-go's request and
// response dumps (V(8), an explicit debugging level) are left out: they print every
// object read, Secrets included, whatever the controller does.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.buf.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 6})
}

func startManagerWithLogs(t *testing.T) *logBuffer {
	t.Helper()
	logs := &logBuffer{}
	env.StartManager(t, envtest.ManagerOptions{}, func(ctx context.Context, mgr ctrl.Manager) error {
		r := &Reconciler{Client: mgr.GetClient()}
		return r.SetupWithManager(ctx, mgr, controller.Options{
			MaxConcurrentReconciles: 4,
			LogConstructor:          func(*reconcile.Request) logr.Logger { return logs.logger() },
		})
	})
	return logs
}

func datastoreSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Datastore: &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
		CASecret:       &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "ca.crt"},
		CertSecret:     &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.crt"},
		KeySecret:      &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.key"},
	}}}
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// A server on an external datastore waits for the Secrets its datastore names, is
// woken by their creation alone (they carry no cluster label), and gets the endpoint
// and 0600 TLS files instead of cluster-init or a server URL. Agents are unchanged,
// and the endpoint appears in no log line and no condition.
func TestServersOnAnExternalDatastore(t *testing.T) {
	logs := startManagerWithLogs(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	tok := createToken(t, cluster)
	first := newMachineWithConfig(t, cluster, "server-0", true, datastoreSpec())

	waitForReason(t, first, bootstrapv1.WaitingForDatastoreSecretReason)
	if msg := conditions.Get(getConfig(t, first), bootstrapv1.DataSecretAvailableCondition).Message; msg != "Waiting for Secret pg, named by spec.serverConfig.datastore.endpointSecret" {
		t.Errorf("waiting message = %q", msg)
	}
	createSecret(t, ns, "pg", map[string]string{"endpoint": datastoreEndpoint})
	// Woken by the Secret watch: nothing else would bring the config back.
	if err := waitFor(func(context.Context) (bool, error) {
		c := conditions.Get(getConfig(t, first), bootstrapv1.DataSecretAvailableCondition)
		return c != nil && strings.Contains(c.Message, "Secret pg-tls"), nil
	}); err != nil {
		t.Fatalf("not woken by the endpoint Secret: %v", err)
	}
	createSecret(t, ns, "pg-tls", map[string]string{"ca.crt": "CA PEM\n", "tls.crt": "CERT PEM\n", "tls.key": "KEY PEM\n"})
	data := waitForDataSecret(t, first).Data["value"]

	cfg := k3sConfig(t, data)
	want := map[string]any{
		"datastore-endpoint": datastoreEndpoint,
		"datastore-cafile":   "/var/lib/rancher/k3s/server/tls/datastore/ca.crt",
		"datastore-certfile": "/var/lib/rancher/k3s/server/tls/datastore/client.crt",
		"datastore-keyfile":  "/var/lib/rancher/k3s/server/tls/datastore/client.key",
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("first server: %s = %v, want %v", k, cfg[k], v)
		}
	}
	if _, ok := cfg["cluster-init"]; ok {
		t.Error("first server on a datastore has cluster-init, which would start embedded etcd")
	}
	if _, ok := cfg["server"]; ok {
		t.Error("first server has a server URL")
	}
	files := writeFiles(t, data)
	for path, content := range map[string]string{
		"/var/lib/rancher/k3s/server/tls/datastore/ca.crt":     "CA PEM\n",
		"/var/lib/rancher/k3s/server/tls/datastore/client.crt": "CERT PEM\n",
		"/var/lib/rancher/k3s/server/tls/datastore/client.key": "KEY PEM\n",
	} {
		if f := files[path]; f.Permissions != "0600" || f.Content != content {
			t.Errorf("%s = %+v, want 0600 with the Secret's value", path, f)
		}
	}

	// Once initialized, further servers join through the datastore, and agents (even
	// with a copied datastore spec, which agents ignore) through the endpoint.
	markInitialized(t, cluster)
	joiner := newMachineWithConfig(t, cluster, "server-1", true, datastoreSpec())
	agent := newMachineWithConfig(t, cluster, "agent-0", false, datastoreSpec())
	cfg = k3sConfig(t, waitForDataSecret(t, joiner).Data["value"])
	if cfg["datastore-endpoint"] != datastoreEndpoint || cfg["server"] != nil || cfg["cluster-init"] != nil {
		t.Errorf("joining server: datastore-endpoint %v, server %v, cluster-init %v; want the endpoint only",
			cfg["datastore-endpoint"], cfg["server"], cfg["cluster-init"])
	}
	agentData := waitForDataSecret(t, agent).Data["value"]
	cfg = k3sConfig(t, agentData)
	if cfg["server"] != "https://10.0.0.10:6443" || strings.Contains(string(agentData), "datastore") {
		t.Errorf("agent: server %v, or datastore settings present:\n%s", cfg["server"], agentData)
	}

	for _, secret := range []string{datastorePassword, tok.Server, tok.Agent} {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("a log line carries a secret value: %.300s", line)
			}
		}
		for _, c := range getConfig(t, first).Status.Conditions {
			if strings.Contains(c.Message, secret) {
				t.Errorf("condition %s carries a secret value: %s", c.Type, c.Message)
			}
		}
	}
	if !strings.Contains(logs.String(), "Created bootstrap data Secret") {
		t.Errorf("the log capture saw nothing of the controller: %.2000s", logs.String())
	}
}

// A Secret that exists without the referenced key keeps the server waiting, with a
// message that names the key.
func TestDatastoreSecretWithoutTheKeyWaits(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	spec := datastoreSpec()
	spec.ServerConfig.Datastore.CASecret, spec.ServerConfig.Datastore.CertSecret, spec.ServerConfig.Datastore.KeySecret = nil, nil, nil
	createSecret(t, ns, "pg", map[string]string{"url": datastoreEndpoint})
	config := newMachineWithConfig(t, cluster, "server-0", true, spec)

	waitForReason(t, config, bootstrapv1.WaitingForDatastoreSecretReason)
	c := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition)
	if c.Message != `Waiting for key "endpoint" in Secret pg, named by spec.serverConfig.datastore.endpointSecret` {
		t.Errorf("message = %q", c.Message)
	}
}

type writtenFile struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Content     string `json:"content"`
}

func writeFiles(t *testing.T, data []byte) map[string]writtenFile {
	t.Helper()
	var cc struct {
		WriteFiles []writtenFile `json:"write_files"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	out := map[string]writtenFile{}
	for _, f := range cc.WriteFiles {
		out[f.Path] = f
	}
	return out
}
