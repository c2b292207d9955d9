package realk3s

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// renewDays is rollout.before.certificatesExpiryDays here: more than leafDays, so that
// every server is due as soon as k3s reports.
const renewDays = 90

// serverReplacedOnce asks for renewal of servers whose certificates expire within
// renewDays. The workload cluster runs no system-upgrade-controller (its image cannot
// be pulled here), so capk3s takes the replacement path: the server is replaced, the
// agent left alone (a MachineDeployment has no certificate rollout). The new server's
// k3s signs 60-day certificates again, so it is due at once; capk3s holds it back for
// 24 hours (ReplacementRateLimited) and replaces nothing more.
func (s *scenario) serverReplacedOnce() {
	s.t.Helper()
	start := time.Now()
	oldServers, agents := s.machineUIDs(true), s.machineUIDs(false)
	oldName := s.machines(true)[0].Name
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp))
	before := kcp.DeepCopy()
	kcp.Spec.Rollout.Before.CertificatesExpiryDays = renewDays
	s.must("setting rollout.before.certificatesExpiryDays", env.Client.Patch(s.ctx, kcp, client.MergeFrom(before)))

	eventually(s.t, 20*time.Minute, "the server replaced for its certificates", func(context.Context) error {
		servers := s.machines(true)
		if len(servers) != 1 {
			return fmt.Errorf("%d servers", len(servers))
		}
		if m := servers[0]; oldServers.Has(string(m.UID)) || !m.Status.NodeRef.IsDefined() {
			return fmt.Errorf("server %s: the old one %v, node %q", m.Name, oldServers.Has(string(m.UID)), m.Status.NodeRef.Name)
		}
		return nil
	})
	s.serversSettled(1, 10*time.Minute)
	s.t.Logf("server %s replaced by %s for its certificates in %s", oldName, s.machines(true)[0].Name, time.Since(start).Round(time.Second))

	// The new server reports 60-day certificates too: it is due, and held.
	var held *metav1.Condition
	eventually(s.t, 5*time.Minute, "the next replacement held for 24 hours", func(ctx context.Context) error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp); err != nil {
			return err
		}
		held = conditions.Get(kcp, controlplanev1.CertificateRenewalHeldCondition)
		if held == nil || held.Status != metav1.ConditionTrue || held.Reason != controlplanev1.ReplacementRateLimitedReason {
			return fmt.Errorf("CertificateRenewalHeld %v", held)
		}
		return nil
	})
	record := kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation]
	s.t.Logf("CertificateRenewalHeld %s/%s: %s; %s: %q", held.Status, held.Reason, held.Message,
		controlplanev1.CertificatesReplacementAnnotation, record)
	if !strings.HasSuffix(record, " "+oldName) {
		s.t.Errorf("the replacement record %q does not name the replaced server %s", record, oldName)
	}

	// Nothing more is replaced: the server and the agent stay while the controller
	// goes on reading the reports.
	newServers := s.machineUIDs(true)
	time.Sleep(time.Minute)
	if got := s.machineUIDs(true); !got.Equal(newServers) {
		s.t.Errorf("servers changed again within the 24 hours: %v -> %v", newServers.UnsortedList(), got.UnsortedList())
	}
	if got := s.machineUIDs(false); !got.Equal(agents) {
		s.t.Errorf("the agent was replaced: %v -> %v; a MachineDeployment has no certificate rollout", agents.UnsortedList(), got.UnsortedList())
	}
}
