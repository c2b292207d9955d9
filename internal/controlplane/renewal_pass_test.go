package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// Through the whole pass (Reconcile): the pass asks to be woken when a server's
// certificates enter the window, and then, without the in-place path, reports the
// server as not up to date and rolling out for its certificates.
func TestReconcileWakesForAndReportsCertificateExpiry(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createInfraTemplate(t, ns)
	cluster, kcp := newClusterWithControlPlane(t, ns, false)
	r := expectationsReconciler(env.Client)
	passesUntilToken(t, r, cluster, kcp)
	setEndpoint(t, cluster)
	runPass(t, r, kcp)
	servers := listServers(t, ns)
	if len(servers) != 1 {
		t.Fatalf("servers: %v, want one", keysOf(servers))
	}
	var server *clusterv1.Machine
	for _, m := range servers {
		server = m
	}
	stored := readControlPlane(t, kcp)
	stored.Spec.Rollout.Before.CertificatesExpiryDays = 30
	if err := env.Client.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}

	expireIn(t, server, 40*24*time.Hour)
	result := runPass(t, r, kcp)
	if d := result.RequeueAfter; d < 9*24*time.Hour || d > 10*24*time.Hour+time.Minute {
		t.Errorf("wake-up in %v, want about 10 days: when the certificates enter the 30-day window", d)
	}
	if c := conditions.Get(readControlPlane(t, kcp), controlplanev1.RollingOutCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("RollingOut = %+v outside the window, want False", c)
	}

	expireIn(t, getMachine(t, ns, server.Name), 10*24*time.Hour)
	runPass(t, r, kcp)
	got := readControlPlane(t, kcp)
	c := conditions.Get(got, controlplanev1.RollingOutCondition)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, server.Name+" (certificates expire at") {
		t.Errorf("RollingOut = %+v, want True naming %s and its expiry", c, server.Name)
	}
	m := &clusterv1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(server), m); err != nil {
		t.Fatal(err)
	}
	if up := conditions.Get(m, clusterv1.MachineUpToDateCondition); up == nil || up.Status != metav1.ConditionFalse || !strings.Contains(up.Message, "certificates expire at") {
		t.Errorf("Machine UpToDate = %+v, want False naming the expiry", up)
	}
}
