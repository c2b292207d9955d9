package envtest_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
)

// TestWorkloadOnPostgres: a workload apiserver stores its objects through kine in
// PostgreSQL, so that a second apiserver on the same datastore sees them (as every
// k3s server of a datastore cluster does), and a wrong password is refused at once.
func TestWorkloadOnPostgres(t *testing.T) {
	ctx := context.Background()
	pg, err := envtest.StartPostgres("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := pg.CreateRole(ctx, "k3s", "s3cret'x"); err != nil {
		t.Fatal(err)
	}
	if err := pg.CreateDatabase(ctx, "k3s", "k3s"); err != nil {
		t.Fatal(err)
	}

	_, err = envtest.StartKine(ctx, pg.DSN("k3s", "wrong", "k3s"))
	if !errors.Is(err, envtest.ErrDatastoreUnreachable) {
		t.Fatalf("kine on a wrong password: got %v, want ErrDatastoreUnreachable", err)
	}

	serverCA, clientCA := newCAs(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}
	for i, write := range []bool{true, false} {
		k, err := envtest.StartKine(ctx, pg.DSN("k3s", "s3cret'x", "k3s"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := envtest.StartWorkloadAPIServerWith(envtest.WorkloadOptions{EtcdURL: k.URL},
			serverCA.KeyPair.Cert, serverCA.KeyPair.Key, clientCA.KeyPair.Cert)
		if err != nil {
			t.Fatal(errors.Join(err, k.Stop()))
		}
		cfg, err := w.AdminConfig(clientCA.KeyPair.Cert, clientCA.KeyPair.Key)
		var c client.Client
		if err == nil {
			c, err = client.New(cfg, client.Options{})
		}
		if err == nil && write {
			err = c.Create(ctx, cm.DeepCopy())
		}
		got := &corev1.ConfigMap{}
		if err == nil {
			err = c.Get(ctx, client.ObjectKeyFromObject(cm), got)
		}
		stopErr := errors.Join(w.Stop(), k.Stop())
		if err != nil || stopErr != nil {
			t.Fatalf("apiserver %d: %v; stopping: %v", i, err, stopErr)
		}
		if got.Data["k"] != "v" {
			t.Errorf("apiserver %d reads ConfigMap data %v, want k=v", i, got.Data)
		}
	}
}
