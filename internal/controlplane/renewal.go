package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/collections"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/renewalplan"
	"github.com/capk3s/capk3s/internal/controlplane/serverplan"
	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/workload"
)

// Certificate renewal (spec.rollout.before.certificatesExpiryDays). A node whose k3s
// certificates expire within the window is renewed by a k3s restart through the
// workload cluster's system-upgrade-controller when the in-place path is available
// (the InPlaceUpdates gate, spec.inPlaceUpdates not Never, SUC installed), one node of
// the cluster at a time, servers before agents; otherwise a server is replaced by the
// rollout (its reason names the expiry) and an agent is left to its MachineDeployment.
// The control plane drives the agents' restarts too: it already reaches the workload
// cluster, and CAPI's MachineDeployment has no certificate rollout.
//
// A restart: the Machine is marked (CertificatesRenewingAnnotation, the commitment),
// then the Plan is created; each pass follows it until the node's report moves out of
// the window or SUC completed the Plan on the Node, then deletes the Plan and records
// the restart on the Machine, so that a node is restarted once per reported expiry.
// While a restart runs, scaling and the rollout wait, as for any step on the servers.

// renewalPoll is how soon a pass looks again at a restart under way: SUC's progress
// (the Plan's status, the Node's label) is on the workload cluster, which no watch of
// the control plane follows.
const renewalPoll = 10 * time.Second

// renewalView is what a pass knows of certificate renewal.
type renewalView struct {
	days int32
	now  time.Time
	// decided: in-place availability is known (the workload cluster was asked, or
	// nothing needed asking). Until it is, no server is replaced or restarted for its
	// certificates.
	decided bool
	// inPlace: the in-place path is available, with SUC in sucNamespace.
	inPlace      bool
	sucNamespace string
	// workers are the cluster's other Machines (agents), workerNodes their Nodes
	// (read only when they may be restarted).
	workers     collections.Machines
	workerNodes workload.Nodes
	// blocked says why the next server's restart waits.
	blocked string
	// version is the control plane's k3s, for a restart Plan of a Machine without one.
	version string
	// replaceAllowed is the one server the rollout may replace for its certificates
	// now (renewal_limit.go); replaceHeld says which others wait and until when, and
	// replaceNext is that time (zero when none waits for it).
	replaceAllowed string
	replaceHeld    string
	replaceNext    time.Time
}

// replaceReason is why the rollout replaces server m for its certificates, or "".
func (v renewalView) replaceReason(m *clusterv1.Machine) string {
	if !v.decided || m.Name != v.replaceAllowed {
		return ""
	}
	return renewalplan.ReplaceReason(m, v.days, v.inPlace, v.now)
}

// observeRenewal fills seen.renewal: the path, then which server may be replaced.
func (r *Reconciler) observeRenewal(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) error {
	err := r.observeRenewalPath(ctx, cluster, kcp, seen)
	return errors.Join(err, r.limitReplacements(ctx, kcp, seen))
}

// observeRenewalPath decides the path. The workload cluster is asked for SUC only when a
// Machine is due or a restart is under way, and only when in-place updates are allowed.
func (r *Reconciler) observeRenewalPath(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) error {
	v := renewalView{days: kcp.Spec.Rollout.Before.CertificatesExpiryDays, now: time.Now(), decided: true, version: kcp.Spec.Version}
	// The agents are read only when renewal is asked for: a fleet's Machines are
	// mostly agents, and each pass would copy them all out of the cache.
	workers := collections.Machines{}
	if v.days > 0 {
		var err error
		if workers, err = r.passWorkers(ctx, cluster, seen); err != nil {
			return err
		}
	}
	v.workers = workers
	needed := false
	for _, m := range append(seen.machines.UnsortedList(), workers.UnsortedList()...) {
		_, renewing := renewalplan.RenewingExpiry(m)
		_, due := renewalplan.Due(m, v.days, v.now)
		needed = needed || renewing || due
	}
	seen.renewal = v
	if !needed || !r.inPlaceAllowed(kcp) {
		return nil
	}
	if seen.nodes == nil {
		// The workload cluster cannot be reached: nothing is decided on it.
		seen.renewal.decided = false
		return nil
	}
	wc, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(cluster))
	if err != nil {
		seen.renewal.decided = false
		return fmt.Errorf("reaching the workload cluster for certificate renewal: %w", err)
	}
	ns, err := inplace.SUCNamespace(ctx, wc)
	switch {
	case errors.Is(err, inplace.ErrNoSUC):
		ctrl.LoggerFrom(ctx).V(4).Info("Certificates are renewed by replacing servers", "reason", err.Error())
		return nil
	case err != nil:
		seen.renewal.decided = false
		return err
	}
	seen.renewal.inPlace, seen.renewal.sucNamespace = true, ns
	if seen.renewal.workerNodes, err = r.passWorkerNodes(ctx, cluster, seen); err != nil {
		seen.renewal.decided = false
		return err
	}
	return nil
}

// renewing names those of machines whose k3s is being restarted, with the expiry.
func (v renewalView) renewing(machines collections.Machines) []string {
	var out []string
	for _, m := range machines {
		if expiry, ok := renewalplan.RenewingExpiry(m); ok && m.DeletionTimestamp.IsZero() {
			out = append(out, fmt.Sprintf("%s (certificates expiring at %s)", m.Name, expiry.UTC().Format(time.RFC3339)))
		}
	}
	return sorted(out)
}

// followRenewals takes every restart under way a step further; busy says one still
// runs, which holds the pass's scaling and rollout.
func (r *Reconciler) followRenewals(ctx context.Context, cluster *clusterv1.Cluster, seen *observed) (busy bool, err error) {
	v := seen.renewal
	var under []*clusterv1.Machine
	for _, m := range append(seen.machines.UnsortedList(), v.workers.UnsortedList()...) {
		if _, ok := renewalplan.RenewingExpiry(m); ok {
			under = append(under, m)
		}
	}
	if len(under) == 0 {
		return false, nil
	}
	if !v.decided {
		// Nothing can be followed without the workload cluster; the restart holds.
		return true, nil
	}
	var wc client.Client
	if v.inPlace {
		if wc, err = r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(cluster)); err != nil {
			return true, err
		}
	}
	for _, m := range under {
		running, err := r.followRenewal(ctx, wc, seen, m)
		if err != nil {
			return true, err
		}
		busy = busy || running
	}
	return busy, nil
}

// followRenewal is one step of m's restart; it reports whether it still runs.
func (r *Reconciler) followRenewal(ctx context.Context, wc client.Client, seen *observed, m *clusterv1.Machine) (bool, error) {
	v := seen.renewal
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", m.Name)
	expiry, _ := renewalplan.RenewingExpiry(m)
	if !v.inPlace {
		// SUC went away, or in-place updates were turned off: the restart cannot be
		// followed; the mark goes, and the Machine is judged again without it.
		log.Info("Ending a certificate renewal the in-place path no longer serves")
		return false, r.endRenewal(ctx, m, expiry, false)
	}
	plan := inplace.NewPlan()
	key := client.ObjectKey{Namespace: v.sucNamespace, Name: inplace.RenewalPlanName(m, expiry)}
	err := wc.Get(ctx, key, plan)
	switch {
	case apierrors.IsNotFound(err):
		plan = nil
	case err != nil:
		return true, fmt.Errorf("reading Plan %s: %w", key, err)
	default:
		if err := inplace.CheckRestartPlan(plan, m); err != nil {
			return true, fmt.Errorf("restart Plan %s: %w", key, err)
		}
	}
	node := v.nodeOf(seen, m)
	_, stillDue := renewalplan.Due(m, v.days, v.now)
	switch {
	case !m.DeletionTimestamp.IsZero(), !stillDue:
		// The node reported certificates beyond the window (or the Machine goes).
		log.Info("Certificates renewed", "expiry", expiry.UTC().Format(time.RFC3339))
	case plan != nil && inplace.RestartFailure(plan) != "":
		log.Info("The k3s restart failed; the Machine is judged again after the report grace", "failure", inplace.RestartFailure(plan))
	case plan != nil && inplace.RestartDone(plan, node):
		log.Info("k3s restarted to renew certificates", "expiry", expiry.UTC().Format(time.RFC3339))
	case plan == nil:
		return true, r.createRestartPlan(ctx, wc, v, m, node, expiry)
	default:
		return true, nil
	}
	if plan != nil {
		if err := wc.Delete(ctx, plan); client.IgnoreNotFound(err) != nil {
			return true, fmt.Errorf("deleting Plan %s: %w", key, err)
		}
	}
	if err := releaseRestartTarget(ctx, wc, node); err != nil {
		return true, err
	}
	return false, r.endRenewal(ctx, m, expiry, true)
}

// createRestartPlan creates m's restart Plan, after checking past the cache that m is
// still marked: a cache behind the end of a restart would start it again.
func (r *Reconciler) createRestartPlan(ctx context.Context, wc client.Client, v renewalView, m *clusterv1.Machine, node *corev1.Node, expiry time.Time) error {
	if node == nil {
		return nil // its Node is not known yet; the next pass looks again
	}
	live := &clusterv1.Machine{}
	if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(m), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if got, ok := renewalplan.RenewingExpiry(live); !ok || !got.Equal(expiry) {
		return nil
	}
	plan, err := r.restartPlanFor(ctx, wc, v, m, node, expiry)
	if err != nil {
		return err
	}
	if err := wc.Create(ctx, plan); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Plan %s/%s: %w", plan.GetNamespace(), plan.GetName(), err)
	}
	ctrl.LoggerFrom(ctx).Info("Restarting k3s to renew certificates", "Machine", m.Name, "node", node.Name,
		"unit", inplace.K3sUnit(m), "expiry", expiry.UTC().Format(time.RFC3339))
	return nil
}

// endRenewal removes m's mark and, when a restart ran (or was tried), records it.
func (r *Reconciler) endRenewal(ctx context.Context, m *clusterv1.Machine, expiry time.Time, restarted bool) error {
	before := m.DeepCopy()
	a := m.Annotations
	delete(a, controlplanev1.CertificatesRenewingAnnotation)
	if restarted {
		a[controlplanev1.CertificatesRestartedForAnnotation] = expiry.UTC().Format(time.RFC3339)
		a[controlplanev1.CertificatesRestartedAtAnnotation] = time.Now().UTC().Format(time.RFC3339)
	}
	// No optimistic lock: the patch only removes the mark and writes the record, the
	// same whichever copy it is made from.
	if err := r.Client.Patch(ctx, m, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("ending the certificate renewal of Machine %s: %w", m.Name, err)
	}
	return nil
}

// startRenewal starts the next restart when one is due, servers first: called only
// when the servers need no other step. The server's restart waits for the same checks
// as any step on the servers (serverRestartBlocked); an agent's for its Node Ready.
func (r *Reconciler) startRenewal(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) (started bool, err error) {
	v := &seen.renewal
	if !v.decided || !v.inPlace {
		return false, nil
	}
	var target *clusterv1.Machine
	if servers := renewalplan.RestartCandidates(seen.machines, v.days, true, v.now); len(servers) > 0 {
		target = servers[0]
		if why := serverRestartBlocked(kcp, seen.machines, seen.nodes, target); why != "" {
			v.blocked = "the certificate renewal waits: " + why
			return false, nil
		}
	} else {
		for _, m := range renewalplan.RestartCandidates(v.workers, v.days, true, v.now) {
			if v.workerNodes.Ready(m.Name) {
				target = m
				break
			}
		}
	}
	node := v.nodeOf(seen, target)
	if target == nil || node == nil {
		return false, nil
	}
	// The mark is the commitment. It is decided again on the Machine as the API
	// server has it, and written with that copy's resourceVersion: a cache that has
	// not seen the last restart end (its record) must not start it again.
	live := &clusterv1.Machine{}
	if err := r.apiReader().Get(ctx, client.ObjectKeyFromObject(target), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	action, expiry := renewalplan.Decide(live, v.days, true, v.now)
	if _, under := renewalplan.RenewingExpiry(live); action != renewalplan.Restart || under {
		return false, nil
	}
	before := live.DeepCopy()
	if live.Annotations == nil {
		live.Annotations = map[string]string{}
	}
	live.Annotations[controlplanev1.CertificatesRenewingAnnotation] = expiry.UTC().Format(time.RFC3339)
	if err := r.Client.Patch(ctx, live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("marking Machine %s for a certificate renewal: %w", target.Name, err)
	}
	target.Annotations = live.Annotations
	wc, err := r.ClusterCache.GetUncachedClient(ctx, client.ObjectKeyFromObject(cluster))
	if err != nil {
		return true, err
	}
	return true, r.createRestartPlan(ctx, wc, *v, target, node, expiry)
}

func (v renewalView) nodeOf(seen *observed, m *clusterv1.Machine) *corev1.Node {
	if m == nil {
		return nil
	}
	if renewalplan.IsServer(m) {
		return seen.nodes[m.Name]
	}
	return v.workerNodes[m.Name]
}

func (r *Reconciler) renewalPlanOptions(namespace string) inplace.PlanOptions {
	o := inplace.PlanOptions{Namespace: namespace, ServiceAccount: inplace.DefaultServiceAccount, Image: r.RenewalImage}
	if o.Image == "" {
		o.Image = inplace.DefaultImage
	}
	return o
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// renewalMessage is RollingOut's report of the servers' certificate renewal in place:
// the restart under way, and the servers whose restart is to come (with why it
// waits); "" when there is none.
func (o observed) renewalMessage() string {
	v := o.renewal
	if !v.decided {
		return ""
	}
	msg := ""
	if renewing := v.renewing(o.machines); len(renewing) > 0 {
		msg = "Renewing certificates by a k3s restart: " + list(renewing)
	}
	var next []string
	for _, m := range renewalplan.RestartCandidates(o.machines, v.days, v.inPlace, v.now) {
		if _, under := renewalplan.RenewingExpiry(m); !under {
			expiry, _ := renewalplan.CertificatesExpiry(m)
			next = append(next, fmt.Sprintf("%s (certificates expiring at %s)", m.Name, expiry.UTC().Format(time.RFC3339)))
		}
	}
	if len(next) > 0 {
		if msg != "" {
			msg += "; "
		}
		msg += "Certificates to renew by a k3s restart: " + list(next)
		if v.blocked != "" {
			msg += "; " + v.blocked
		}
	}
	return msg
}

// serverRestartBlocked says why k3s must not be restarted on server target now, or "".
// The same rules as a step that changes the servers (preflight: initialized, nothing
// being deleted, every server's Node Ready), and the quorum rule of remediation
// (renewalplan.QuorumBlocked). With an external datastore the servers hold no data;
// the others serve meanwhile.
func serverRestartBlocked(kcp *controlplanev1.KThreesControlPlane, machines collections.Machines, nodes workload.Nodes, target *clusterv1.Machine) string {
	if blocked := serverplan.Preflight(machines, nodes, isTrue(kcp.Status.Initialization.ControlPlaneInitialized)); blocked != "" {
		return blocked
	}
	if externalDatastore(kcp) {
		return ""
	}
	return renewalplan.QuorumBlocked(machines, target, func(m *clusterv1.Machine) bool { return serverplan.IsHealthyServer(m, nodes) })
}
