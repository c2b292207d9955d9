package e2e

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/inplace"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The certificate lifecycle, played on clusters other scenarios make (the e2e budget
// has no room for clusters of its own): certificates backdated on the simulated
// machines are reported on the Machines and the control plane with the dates the
// simulator holds, and rollout.before.certificatesExpiryDays renews them, in place by
// a k3s restart where the in-place path runs (TestInPlaceUpgrade), else by replacing
// the server (TestInitNonHA).

const (
	// certificateCheckInterval is the simulated k3s certificate monitor's period: a
	// few seconds instead of k3s's 30 minutes, so that a backdated certificate is
	// reported at once. Above the 2 s within which the product takes Events for one
	// check.
	certificateCheckInterval = "3s"
	// backdated is how long ago the backdated certificates were issued: with k3s's
	// one-year lifetime they expire in about 65 days, inside k3s's 120-day window.
	backdated = 300 * 24 * time.Hour
	// renewalDays is the rollout.before.certificatesExpiryDays the scenarios set: the
	// backdated certificates are due, renewed ones (a year) are not.
	renewalDays = 90
)

// shortCADays is the CA lifetime of TestInitNonHA's cluster: inside k3s's 120-day
// leaf window and inside renewalDays, so that a CA read as a leaf would make every
// node due for ever.
const shortCADays = 80

// checkCAExpiryIsNoLeaf: the cluster's CAs expire within 120 days, so k3s's monitor
// lists them under each leaf file (pkg/daemons/control/deps/deps.go writes a leaf
// followed by its CA; pkg/certmonitor checks every certificate of a file). The control
// plane reports the CA as such, with what to do, and gives no Machine its date.
func (s *scenario) checkCAExpiryIsNoLeaf() {
	s.t.Helper()
	s.eventually("the CAs' expiry to be reported as a CA's", func(ctx context.Context) (bool, string, error) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		c := conditions.Get(kcp, controlplanev1.CertificateAuthoritiesExpiringCondition)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "k3s certificate rotate-ca") {
			return false, fmt.Sprintf("CertificateAuthoritiesExpiring = %+v", c), nil
		}
		// A node reported it (not only the CA Secrets say so).
		if !strings.Contains(c.Message, "listed as") {
			return false, "the CA is not yet reported by a node: " + c.Message, nil
		}
		return true, "", nil
	})
	// Fresh leaves: no Machine has a date, though every leaf warning lists the CAs.
	if got := s.waitCertificatesReported(); got != "" {
		s.t.Errorf("the control plane reports %s's certificates as expiring: it read a CA as a leaf", got)
	}
}

// withShortCertificateChecks makes the simulated k3s monitors of the cluster check
// every certificateCheckInterval. Called before create.
func (s *scenario) withShortCertificateChecks() {
	if s.objs.SimCluster.Annotations == nil {
		s.objs.SimCluster.Annotations = map[string]string{}
	}
	s.objs.SimCluster.Annotations[simv1.CertificateCheckIntervalAnnotation] = certificateCheckInterval
}

// backdateCertificates tells the simulator that the k3s certificates of each named
// Machine's machine were issued so long ago.
func (s *scenario) backdateCertificates(ago map[string]time.Duration) {
	s.t.Helper()
	now := time.Now()
	for name, d := range ago {
		m := &clusterv1.Machine{}
		s.must("reading Machine "+name, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: name}, m))
		sm := &simv1.SimMachine{}
		s.must("reading the SimMachine of "+name, env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: m.Spec.InfrastructureRef.Name}, sm))
		before := sm.DeepCopy()
		if sm.Annotations == nil {
			sm.Annotations = map[string]string{}
		}
		sm.Annotations[simv1.CertificatesIssuedAtAnnotation] = now.Add(-d).UTC().Format(time.RFC3339)
		s.must("backdating the certificates of "+name, env.Client.Patch(s.ctx, sm, client.MergeFrom(before)))
	}
}

// simSoonest is the soonest expiry of the leaf certificates the simulator holds on a
// Node, and that certificate's name as k3s's monitor gives it ("<service>/<file>").
func (s *scenario) simSoonest(node string) (time.Time, sets.Set[string]) {
	leaves := simulator.Certificates(s.key, node)
	soonest := k3smodel.Soonest(leaves)
	names := sets.New[string]()
	for _, l := range leaves {
		if l.NotAfter.Equal(soonest) {
			names.Insert(l.Service + "/" + path.Base(l.Path))
		}
	}
	return soonest, names
}

// inK3sWindow says whether k3s's monitor reports a certificate expiring at t.
func inK3sWindow(t time.Time) bool {
	return t.Before(time.Now().Add(k3smodel.CertificateRenewDays * 24 * time.Hour))
}

// waitCertificatesReported waits until every Machine of the cluster carries the
// soonest expiry the simulator holds for its Node when that is within k3s's window
// (and none otherwise), CAPI copied it into the servers' status, and the control
// plane reports the soonest of them with its Node and Machine, in its status and in
// CertificatesExpiring, with the date. It returns the Machine reported soonest ("" for none).
func (s *scenario) waitCertificatesReported() string {
	s.t.Helper()
	soonestMachine := ""
	s.eventually("the certificate expiry to be reported", func(ctx context.Context) (bool, string, error) {
		machines, err := s.machines(ctx, client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name})
		if err != nil {
			return false, "", err
		}
		var want struct {
			at      time.Time
			node    string
			machine string
			files   sets.Set[string]
		}
		for _, m := range machines {
			node := m.Status.NodeRef.Name
			expiry, files := s.simSoonest(node)
			if expiry.IsZero() {
				return false, fmt.Sprintf("the simulator holds no certificates for Node %q of %s", node, m.Name), nil
			}
			got, has := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]
			_, server := m.Labels[clusterv1.MachineControlPlaneLabel]
			if !inK3sWindow(expiry) {
				if has {
					return false, fmt.Sprintf("%s has expiry %s, but its certificates expire at %s, beyond k3s's window", m.Name, got, expiry.UTC().Format(time.RFC3339)), nil
				}
				if server && !m.Status.CertificatesExpiryDate.IsZero() {
					return false, fmt.Sprintf("server %s still has status.certificatesExpiryDate %v", m.Name, m.Status.CertificatesExpiryDate), nil
				}
				continue
			}
			if wantValue := expiry.UTC().Format(time.RFC3339); got != wantValue {
				return false, fmt.Sprintf("%s has expiry %q, want %s", m.Name, got, wantValue), nil
			}
			if server && !m.Status.CertificatesExpiryDate.Equal(&metav1.Time{Time: expiry}) {
				return false, fmt.Sprintf("server %s has status.certificatesExpiryDate %v, want %s", m.Name, m.Status.CertificatesExpiryDate, expiry.UTC().Format(time.RFC3339)), nil
			}
			if want.at.IsZero() || expiry.Before(want.at) {
				want.at, want.node, want.machine, want.files = expiry, node, m.Name, files
			}
		}
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp); err != nil {
			return false, "", err
		}
		cond := conditions.Get(kcp, controlplanev1.CertificatesExpiringCondition)
		if cond == nil {
			return false, "no CertificatesExpiring condition", nil
		}
		st := kcp.Status.Certificates
		if want.at.IsZero() {
			ok := cond.Status == metav1.ConditionFalse && (st == nil || st.SoonestExpiry == nil)
			return ok, fmt.Sprintf("CertificatesExpiring %s %s: %q; status.certificates %+v", cond.Status, cond.Reason, cond.Message, st), nil
		}
		date := want.at.UTC().Format(time.RFC3339)
		state := fmt.Sprintf("want %s of Node %s (Machine %s); status.certificates %+v; CertificatesExpiring %s %s: %q",
			date, want.node, want.machine, st, cond.Status, cond.Reason, cond.Message)
		ok := st != nil && st.SoonestExpiry != nil && st.SoonestExpiry.Equal(&metav1.Time{Time: want.at}) &&
			st.NodeName == want.node && st.MachineName == want.machine && want.files.Has(st.Certificate) &&
			cond.Status == metav1.ConditionTrue && cond.Reason == controlplanev1.CertificatesExpiringReason &&
			strings.Contains(cond.Message, date) && strings.Contains(cond.Message, "node "+want.node+" ")
		soonestMachine = want.machine
		return ok, state, nil
	})
	return soonestMachine
}

// setCertificatesExpiryDays sets (or, with 0, unsets) rollout.before.certificatesExpiryDays.
func (s *scenario) setCertificatesExpiryDays(days int32) {
	s.t.Helper()
	s.patchKCP(func(kcp *controlplanev1.KThreesControlPlane) { kcp.Spec.Rollout.Before.CertificatesExpiryDays = days })
}

// renewalWatch polls, while a renewal runs, how many restart Plans exist at once on
// the workload cluster and how many Machines are marked for a restart at once, and the
// order in which Machines are first marked.
type renewalWatch struct {
	stop chan struct{}
	done chan struct{}

	mu           sync.Mutex
	maxPlans     int
	maxMarked    int
	plans        sets.Set[string]
	marked       []string
	quorumLost   bool
	err          error
	polls        int
	concurrentAt string
	// live is the number of restart Plans at the last poll.
	live int
}

// watchRenewals starts polling until stopped.
func (s *scenario) watchRenewals() *renewalWatch {
	s.t.Helper()
	wc := s.workloadClient()
	w := &renewalWatch{stop: make(chan struct{}), done: make(chan struct{}), plans: sets.New[string]()}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			w.poll(s, wc)
			select {
			case <-w.stop:
				w.poll(s, wc)
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *renewalWatch) poll(s *scenario, wc client.Client) {
	plans := &unstructured.UnstructuredList{}
	plans.SetGroupVersionKind(schema.GroupVersionKind{Group: "upgrade.cattle.io", Version: "v1", Kind: "PlanList"})
	perr := wc.List(s.ctx, plans, client.MatchingLabels{inplace.RenewalLabel: "true"})
	machines := &clusterv1.MachineList{}
	merr := env.Client.List(s.ctx, machines, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name})
	w.mu.Lock()
	defer w.mu.Unlock()
	if perr != nil || merr != nil {
		if w.err == nil {
			w.err = errors.Join(perr, merr)
		}
		return
	}
	w.polls++
	var live []string
	for _, p := range plans.Items {
		w.plans.Insert(p.GetName())
		if p.GetDeletionTimestamp() == nil {
			live = append(live, p.GetName())
		}
	}
	var marked []string
	for _, m := range machines.Items {
		if _, ok := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]; ok {
			marked = append(marked, m.Name)
			if !slices.Contains(w.marked, m.Name) {
				w.marked = append(w.marked, m.Name)
			}
		}
	}
	if len(live) > 1 || len(marked) > 1 {
		sort.Strings(live)
		sort.Strings(marked)
		w.concurrentAt = fmt.Sprintf("Plans %v, marked Machines %v", live, marked)
	}
	w.live = len(live)
	w.maxPlans, w.maxMarked = max(w.maxPlans, len(live)), max(w.maxMarked, len(marked))
	w.quorumLost = w.quorumLost || simulator.QuorumLost(s.key)
}

// end stops the polling and waits for its last poll.
func (w *renewalWatch) end() {
	close(w.stop)
	<-w.done
}

// checkCertificateRenewalInPlace: every server's and agent's certificates are
// backdated into k3s's window; the expiry is reported; with
// rollout.before.certificatesExpiryDays set, k3s is restarted on one node at a time
// (servers first) by system-upgrade-controller Plans, which renews every node's
// certificates without replacing a Machine, a Node or an etcd member, losing quorum or
// touching the token; the renewed expiry (beyond k3s's window: no report, so no
// annotation) is reported and the warning clears. The setting is removed at the end,
// so that the scenario goes on as before.
func (s *scenario) checkCertificateRenewalInPlace() {
	s.t.Helper()
	machines := s.machineUIDs()
	nodes := sets.KeySet(s.nodes())
	members := simulator.EtcdMembers(s.key)
	value := string(s.tokenSecret().Data["value"])

	// A different age per Machine, so that one is the soonest: the last agent.
	servers, agents := sets.List(s.serverNames()), sets.List(s.agentNames())
	order := append(append([]string{}, servers...), agents...)
	ago := map[string]time.Duration{}
	for i, name := range order {
		ago[name] = backdated + time.Duration(i)*24*time.Hour
	}
	s.backdateCertificates(ago)
	if got := s.waitCertificatesReported(); got != order[len(order)-1] {
		s.t.Errorf("the control plane reports %s's certificates as the soonest, want %s's", got, order[len(order)-1])
	}

	watch := s.watchRenewals()
	s.setCertificatesExpiryDays(renewalDays)
	s.eventually("every node's certificates to be renewed in place", func(ctx context.Context) (bool, string, error) {
		list, err := s.machines(ctx, client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name})
		if err != nil {
			return false, "", err
		}
		for _, m := range list {
			if expiry, _ := s.simSoonest(m.Status.NodeRef.Name); inK3sWindow(expiry) {
				return false, fmt.Sprintf("%s's certificates still expire at %s", m.Name, expiry.UTC().Format(time.RFC3339)), nil
			}
			if _, ok := m.Annotations[controlplanev1.CertificatesRestartedForAnnotation]; !ok {
				return false, m.Name + " has no record of a restart", nil
			}
			if v, ok := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]; ok {
				return false, fmt.Sprintf("%s is still being renewed (%s)", m.Name, v), nil
			}
		}
		return true, "", nil
	})
	// The renewed expiry: beyond k3s's window, which k3s does not report, so no
	// Machine has an expiry and the warning clears.
	if got := s.waitCertificatesReported(); got != "" {
		s.t.Errorf("after the renewal the control plane still reports %s's certificates", got)
	}
	s.eventually("the restart Plans to be deleted", func(ctx context.Context) (bool, string, error) {
		watch.mu.Lock()
		defer watch.mu.Unlock()
		return watch.live == 0, fmt.Sprintf("%d restart Plans at poll %d", watch.live, watch.polls), nil
	})
	watch.end()
	s.t.Logf("certificate renewal: %d polls saw restart Plans %v, at most %d restart Plans and %d marked Machines at once; Machines in the order marked: %v",
		watch.polls, sets.List(watch.plans), watch.maxPlans, watch.maxMarked, watch.marked)
	if watch.plans.Len() == 0 {
		s.t.Error("no restart Plan was seen during the certificate renewal")
	}

	if watch.err != nil {
		s.t.Errorf("watching the renewal: %v", watch.err)
	}
	if watch.maxPlans > 1 || watch.maxMarked > 1 {
		s.t.Errorf("k3s was restarted on more than one node at a time: %s", watch.concurrentAt)
	}
	if watch.quorumLost || simulator.QuorumLost(s.key) {
		s.t.Error("etcd lost quorum during the certificate renewal")
	}
	// Servers first, then agents; in each, the soonest expiry first (the reverse of
	// order, whose certificates are older the later they come).
	want := append(append([]string{}, servers...), agents...)
	slices.Reverse(want[:len(servers)])
	slices.Reverse(want[len(servers):])
	if !slices.Equal(watch.marked, want) {
		s.t.Errorf("Machines marked for a restart in the order %v, want %v", watch.marked, want)
	}
	if got := s.machineUIDs(); !equalUIDs(got, machines) {
		s.t.Errorf("Machines changed: before %v, after %v", machines, got)
	}
	if got := sets.KeySet(s.nodes()); !got.Equal(nodes) {
		s.t.Errorf("Nodes changed: before %v, after %v", sets.List(nodes), sets.List(got))
	}
	if got := simulator.EtcdMembers(s.key); !sets.New(got...).Equal(sets.New(members...)) {
		s.t.Errorf("etcd members changed: before %v, after %v", members, got)
	}
	if got := string(s.tokenSecret().Data["value"]); got != value {
		s.t.Error("the token's value changed during the certificate renewal")
	}
	s.setCertificatesExpiryDays(0)
}

// checkCertificateRenewalByReplacement: without the in-place path, a server whose
// certificates are backdated into the window is replaced once
// rollout.before.certificatesExpiryDays covers their expiry, and its replacement
// reports no certificate within k3s's window.
func (s *scenario) checkCertificateRenewalByReplacement() {
	s.t.Helper()
	servers := s.serverNames()
	ago := map[string]time.Duration{}
	for name := range servers {
		ago[name] = backdated
	}
	s.backdateCertificates(ago)
	s.waitCertificatesReported()

	s.setCertificatesExpiryDays(renewalDays)
	s.eventually("the servers with expiring certificates to be replaced", func(context.Context) (bool, string, error) {
		now := s.serverNames()
		return now.Intersection(servers).Len() == 0, fmt.Sprintf("servers %v", sets.List(now)), nil
	})
	s.waitServers(int32(servers.Len()), s.version)
	// The new servers' k3s checked its certificates. Its leaves are fine; the
	// cluster's short-lived CAs (shortCADays) are listed under them, so k3s warns
	// rather than recording OK, and the warning lists no leaf (waitCertificatesReported
	// below).
	s.eventually("the new servers' k3s to report its certificates", func(ctx context.Context) (bool, string, error) {
		machines, err := s.serverMachines(ctx)
		if err != nil {
			return false, "", err
		}
		events := &corev1.EventList{}
		if err := s.workloadClient().List(ctx, events, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return false, "", err
		}
		for _, m := range machines {
			if !slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
				return e.Source.Component == k3smodel.CertMonitorComponent && e.InvolvedObject.Name == m.Status.NodeRef.Name &&
					e.Reason == k3smodel.CertificateExpirationWarning && !e.LastTimestamp.Time.Before(m.CreationTimestamp.Time)
			}) {
				return false, fmt.Sprintf("no %s Event on Node %q of %s", k3smodel.CertificateExpirationWarning, m.Status.NodeRef.Name, m.Name), nil
			}
		}
		return true, "", nil
	})
	if got := s.waitCertificatesReported(); got != "" {
		s.t.Errorf("the replaced servers still report expiring certificates: %s", got)
	}
	s.setCertificatesExpiryDays(0)
}
