package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/collections"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/certexpiry"
	"github.com/capk3s/capk3s/internal/workload"
)

// certExpiry is what a pass read of the nodes' certificate reports.
type certExpiry struct {
	// read says k3s's certificate-monitor Events were read this pass.
	read    bool
	summary certexpiry.Summary
	// machineOf is each reporting Node's Machine.
	machineOf map[string]string
	// ignored says which reports were left out: Events k3s did not write
	// (certexpiry.Authentic) and dates no node of the Machine could hold
	// (certexpiry.Implausible), one line each.
	ignored []string
}

// observeCertificateExpiry reads k3s's certificate-monitor Events of every node of
// the cluster, servers and agents, from the ClusterCache (one informer per cluster,
// limited to those Events by workload.WithCertMonitorEvents), writes each Machine's
// certificates-expiry annotation, and keeps the summary for the status. Agents are
// done here too: this controller already holds the workload cluster's connection
// and the Event watch, and a cluster has one control plane but many
// MachineDeployments and MachinePools (docs/design.md). Only while the workload
// cluster was reached this pass; a failure is logged and reported Unknown, and never
// holds back the servers' steps.
func (r *Reconciler) observeCertificateExpiry(ctx context.Context, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, seen *observed) {
	if seen.nodes == nil {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	key := client.ObjectKeyFromObject(cluster)
	if err := r.watchCertMonitorEvents(ctx, key, kcp); err != nil && !errors.Is(err, clustercache.ErrClusterNotConnected) && !meta.IsNoMatchError(err) {
		log.Error(err, "Watching the workload cluster's certificate-monitor Events")
	}
	reader, err := r.ClusterCache.GetReader(ctx, key)
	if err != nil {
		return
	}
	events, err := workload.CertMonitorEvents(ctx, reader)
	if err != nil {
		if !errors.Is(err, clustercache.ErrClusterNotConnected) {
			log.Error(err, "Reading k3s's certificate-monitor Events")
		}
		return
	}
	workers, err := r.passWorkers(ctx, cluster, seen)
	if err != nil {
		log.Error(err, "Listing the cluster's worker Machines")
		return
	}
	workerNodes, err := r.passWorkerNodes(ctx, cluster, seen)
	if err != nil {
		return
	}
	nodes := workload.Nodes{}
	for name, n := range workerNodes {
		nodes[name] = n
	}
	machines := collections.FromMachines(append(seen.machines.UnsortedList(), workers.UnsortedList()...)...)
	for name, n := range seen.nodes {
		nodes[name] = n
	}
	// Only what k3s itself could have written counts. A CA listed under a leaf file is
	// told apart from the leaf by what no Event writer can forge: the CA Secrets and
	// k3s's own CA names (certexpiry.KnownCAs), never a node's CA warning.
	events, rejected := certexpiry.Accept(events)
	cas := seen.caCerts
	decisions := map[string]certexpiry.Node{}
	machineOf := map[string]string{}
	var ignored []string
	for _, m := range machines.SortedByCreationTimestamp() {
		node, ok := nodes[m.Name]
		if !ok {
			continue
		}
		d := certexpiry.Decide(events[node.Name], cas)
		if why := certexpiry.Implausible(d, m.CreationTimestamp.Time); why != "" {
			// Nothing is learnt of the leaves; the last date stays (AnnotationValue).
			ignored = append(ignored, fmt.Sprintf("the report of node %s: %s", node.Name, why))
			d.State, d.Expiry, d.Certificate = certexpiry.Unknown, time.Time{}, ""
		}
		decisions[node.Name], machineOf[node.Name] = d, m.Name
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if value, keep := certexpiry.AnnotationValue(d, nodeReady(node) == corev1.ConditionTrue); !keep {
			if err := r.setExpiryAnnotation(ctx, m, value); err != nil {
				log.Error(err, "Writing a Machine's certificates-expiry annotation", "Machine", m.Name)
			}
		}
	}
	for _, r := range rejected {
		if _, ours := machineOf[r.Node]; ours {
			ignored = append(ignored, fmt.Sprintf("an Event %s about node %s not written as k3s writes it: %s", r.Reason, r.Node, r.Why))
		}
	}
	if len(rejected) > 0 {
		log.V(2).Info("Ignoring certificate-monitor Events k3s did not write", "count", len(rejected))
	}
	sort.Strings(ignored)
	seen.certs = certExpiry{read: true, summary: certexpiry.Summarize(decisions, time.Now()), machineOf: machineOf, ignored: ignored}
}

// workerMachines are the cluster's Machines that are not servers: those of its
// MachineDeployments and MachinePools.
func (r *Reconciler) workerMachines(ctx context.Context, cluster *clusterv1.Cluster) (collections.Machines, error) {
	list := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cluster.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name}); err != nil {
		return nil, fmt.Errorf("listing Machines: %w", err)
	}
	return collections.FromMachineList(list).Filter(collections.Not(collections.ControlPlaneMachines(cluster.Name))), nil
}

// passWorkers is workerMachines, listed once per pass.
func (r *Reconciler) passWorkers(ctx context.Context, cluster *clusterv1.Cluster, seen *observed) (collections.Machines, error) {
	if !seen.workersRead {
		workers, err := r.workerMachines(ctx, cluster)
		if err != nil {
			return nil, err
		}
		seen.workers, seen.workersRead = workers, true
	}
	return seen.workers, nil
}

// passWorkerNodes are the Nodes of passWorkers, read once per pass.
func (r *Reconciler) passWorkerNodes(ctx context.Context, cluster *clusterv1.Cluster, seen *observed) (workload.Nodes, error) {
	if !seen.workerNodesRead {
		workers, err := r.passWorkers(ctx, cluster, seen)
		if err != nil {
			return nil, err
		}
		nodes := workload.Nodes{}
		if workers.Len() > 0 {
			if nodes, err = workload.NodesOf(ctx, r.ClusterCache, client.ObjectKeyFromObject(cluster), workers); err != nil {
				return nil, err
			}
		}
		seen.workerNodes, seen.workerNodesRead = nodes, true
	}
	return seen.workerNodes, nil
}

// setExpiryAnnotation sets (value) or removes ("") the annotation CAPI's Machine
// controller copies into a control-plane Machine's status.certificatesExpiryDate.
// Only a change is written, as a merge patch of that one key.
func (r *Reconciler) setExpiryAnnotation(ctx context.Context, m *clusterv1.Machine, value string) error {
	current, has := m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation]
	if (value == "" && !has) || (value != "" && current == value) {
		return nil
	}
	original := m.DeepCopy()
	if value == "" {
		delete(m.Annotations, clusterv1.MachineCertificatesExpiryDateAnnotation)
	} else {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[clusterv1.MachineCertificatesExpiryDateAnnotation] = value
	}
	return r.Client.Patch(ctx, m, client.MergeFrom(original))
}

// watchCertMonitorEvents wakes the control plane on k3s's certificate-monitor
// Events: a new warning or OK, a warning repeated (every 30 minutes per node, which
// keeps "expired" current), and one that the API server drops at its TTL.
func (r *Reconciler) watchCertMonitorEvents(ctx context.Context, key client.ObjectKey, kcp *controlplanev1.KThreesControlPlane) error {
	if r.controller == nil {
		return nil
	}
	request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kcp)}
	isCertEvent := func(o client.Object) bool {
		e, ok := o.(*corev1.Event)
		return ok && workload.IsCertMonitorEvent(e)
	}
	return r.ClusterCache.Watch(ctx, key, clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:    "kthreescontrolplane-watchCertMonitorEvents",
		Watcher: r.controller,
		Kind:    &corev1.Event{},
		EventHandler: handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{request}
		}),
		Predicates: []predicate.Predicate{predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return isCertEvent(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return isCertEvent(e.ObjectNew) },
			DeleteFunc:  func(e event.DeleteEvent) bool { return isCertEvent(e.Object) },
			GenericFunc: func(e event.GenericEvent) bool { return isCertEvent(e.Object) },
		}},
	}))
}

// setCertificatesStatus writes status.certificates and CertificatesExpiring from
// what the pass read. A pass that did not read the Events keeps the last soonest
// expiry (it is still the best knowledge) and says Unknown while the workload
// cluster cannot be reached. The messages hold dates, never relative times, so an
// idle pass writes nothing.
func setCertificatesStatus(kcp *controlplanev1.KThreesControlPlane, seen observed) {
	setAuthoritiesCondition(kcp, seen.certs.summary, seen.certs.read, seen.authorities, time.Now())
	if seen.authorities != nil {
		certificatesStatus(kcp).Authorities = seen.authorities
	}
	c := seen.certs
	switch {
	case c.read:
	case seen.unreachable():
		conditions.Set(kcp, metav1.Condition{Type: controlplanev1.CertificatesExpiringCondition, Status: metav1.ConditionUnknown,
			Reason: controlplanev1.WorkloadClusterUnreachableReason, Message: "The workload cluster's Events could not be read"})
		return
	default:
		return
	}
	s := c.summary
	st := certificatesStatus(kcp)
	st.SoonestExpiry, st.NodeName, st.MachineName, st.Certificate = nil, "", "", ""
	cond := metav1.Condition{Type: controlplanev1.CertificatesExpiringCondition}
	var notes []string
	if s.Soonest != "" {
		st.SoonestExpiry = &metav1.Time{Time: s.Expiry}
		st.NodeName, st.MachineName, st.Certificate = s.Soonest, c.machineOf[s.Soonest], s.Certificate
		cond.Status, cond.Reason = metav1.ConditionTrue, controlplanev1.CertificatesExpiringReason
		// The soonest is the first to expire: if any has expired, it has.
		verb := "expires"
		if len(s.Expired) > 0 {
			cond.Reason, verb = controlplanev1.CertificatesExpiredReason, "expired"
		}
		cond.Message = fmt.Sprintf("Certificate %s of node %s (Machine %s) %s at %s; restart k3s on a node within %d days of expiry to renew its certificates",
			s.Certificate, s.Soonest, c.machineOf[s.Soonest], verb, s.Expiry.UTC().Format(time.RFC3339), certexpiry.RenewDays)
		if len(s.Expired) > 0 {
			notes = append(notes, "expired on nodes "+strings.Join(s.Expired, ", "))
		}
		if len(s.Expiring) > 0 {
			notes = append(notes, fmt.Sprintf("within %d days on nodes %s", certexpiry.RenewDays, strings.Join(s.Expiring, ", ")))
		}
	} else {
		cond.Status, cond.Reason = metav1.ConditionFalse, controlplanev1.CertificatesNotExpiringReason
		cond.Message = fmt.Sprintf("No node reports a k3s certificate expiring within %d days", certexpiry.RenewDays)
	}
	if n := len(c.ignored); n > 0 {
		// The first few: a forger may write many.
		shown := c.ignored[:min(n, 3)]
		note := "ignored " + strings.Join(shown, "; ")
		if n > len(shown) {
			note += fmt.Sprintf(" (and %d more)", n-len(shown))
		}
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		cond.Message += "; " + strings.Join(notes, "; ")
	}
	conditions.Set(kcp, cond)
	if st.SoonestExpiry == nil && len(st.Authorities) == 0 {
		kcp.Status.Certificates = nil
	}
}

// certificatesStatus is kcp's status.certificates, made when missing.
func certificatesStatus(kcp *controlplanev1.KThreesControlPlane) *controlplanev1.CertificatesStatus {
	if kcp.Status.Certificates == nil {
		kcp.Status.Certificates = &controlplanev1.CertificatesStatus{}
	}
	return kcp.Status.Certificates
}

// caAuthorities are the CAs' expiry dates, in the order of their Secrets' names.
// A certificate that does not parse is left out (CertificatesAvailable says why).
func caAuthorities(cas caSecrets) []controlplanev1.CertificateAuthorityStatus {
	out := []controlplanev1.CertificateAuthorityStatus{}
	for _, s := range cas {
		crt, err := certs.DecodeCertPEM(s.Data[secret.TLSCrtDataName])
		if err != nil {
			continue
		}
		out = append(out, controlplanev1.CertificateAuthorityStatus{SecretName: s.Name, NotAfter: metav1.NewTime(crt.NotAfter.UTC())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SecretName < out[j].SecretName })
	return out
}
