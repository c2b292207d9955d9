package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/envtest"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// TestCertEventsOnARealAPIServer: the monitor's Events, and their repeats, are
// accepted by a real kube-apiserver as k3s's recorder writes them.
func TestCertEventsOnARealAPIServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cas := secret.Certificates{{Purpose: secret.ClusterCA}, {Purpose: "client-ca"}}
	if err := cas.Generate(); err != nil {
		t.Fatal(err)
	}
	serverCA, clientCA := cas.GetByPurpose(secret.ClusterCA), cas.GetByPurpose("client-ca")
	api, err := envtest.StartWorkloadAPIServer(serverCA.KeyPair.Cert, serverCA.KeyPair.Key, clientCA.KeyPair.Cert)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg, err := api.AdminConfig(clientCA.KeyPair.Cert, clientCA.KeyPair.Key)
	if err != nil {
		t.Fatal(err)
	}
	work, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := newCertRig(t, &Provider{CertificateCheckInterval: time.Millisecond}, nil)
	g.work, g.wc.client = work, work
	g.wc.cas = k3sCAs(&bootData{files: map[string][]byte{serverCACertPath: serverCA.KeyPair.Cert, clientCACertPath: clientCA.KeyPair.Cert}}, time.Now())
	issued := time.Now().Add(-250 * 24 * time.Hour)
	sm := g.machine(t, "s-0", roleServer, map[string]string{simv1.CertificatesIssuedAtAnnotation: issued.Format(time.RFC3339)})
	g.run(t, sm)
	time.Sleep(2 * time.Millisecond)
	g.run(t, sm)
	list := &corev1.EventList{}
	if err := work.List(ctx, list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	// The apiserver writes Events of its own into default (its ClusterIP repair, at
	// start): only the monitor's count here.
	var mine []corev1.Event
	for _, e := range list.Items {
		if e.Source.Component == "k3s-cert-monitor" {
			mine = append(mine, e)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("%d Events of k3s-cert-monitor, want 1 counted twice: %v", len(mine), list.Items)
	}
	e := mine[0]
	if e.Reason != "CertificateExpirationWarning" || e.Count != 2 || e.InvolvedObject.Kind != "Node" || e.InvolvedObject.Name != "s-0" ||
		!strings.Contains(e.Message, "etcd/peer-server-client.crt: certificate CN=etcd-peer will expire within 120 days at ") {
		t.Errorf("Event = %+v", e)
	}
}
