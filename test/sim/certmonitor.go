package sim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/sim/k3smodel"
)

// The simulator plays k3s's certificate monitor (k3smodel, certmonitor.go) on every
// running machine: once k3s runs and the workload API serves, it checks at once and
// then every period, and writes the Events on the machine's Node as k3s's event
// recorder does: in namespace default, on {Kind: Node, Name: <node>, UID: <node>},
// source k3s-cert-monitor on the node; an Event recorded again since k3s started is
// counted on the same object (count, lastTimestamp), as client-go's event correlator
// does. client-go's aggregation of more than 10 similar Events with different
// messages within 10 minutes is not played. A k3s that is stopped, or whose kubelet
// client certificate has expired (the monitor writes with the kubelet's
// credentials), records nothing.

// The SimMachine's condition about its certificates, and its reasons.
const (
	certificatesCondition      = "Certificates"
	certificatesIssuedReason   = "Issued"
	invalidIssuedAtReason      = "InvalidCertificatesIssuedAt"
	invalidCheckIntervalReason = "InvalidCertificateCheckInterval"
)

// certCheckInterval is the monitor's period for a cluster: the SimCluster's
// annotation, else the Provider's CertificateCheckInterval, else k3s's 30 minutes. A
// bad annotation is reported and ignored.
func (p *Provider) certCheckInterval(ctx context.Context, cluster *clusterv1.Cluster) (time.Duration, error) {
	period := k3smodel.CertMonitorPeriod
	if p.CertificateCheckInterval > 0 {
		period = p.CertificateCheckInterval
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.Kind != "SimCluster" || ref.Name == "" {
		return period, nil
	}
	sc := &simv1.SimCluster{}
	if err := p.Client.Get(ctx, types.NamespacedName{Namespace: cluster.Namespace, Name: ref.Name}, sc); err != nil {
		return period, client.IgnoreNotFound(err)
	}
	v, ok := sc.Annotations[simv1.CertificateCheckIntervalAnnotation]
	if !ok {
		return period, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return period, fmt.Errorf("annotation %s on SimCluster %s is %q, not a positive duration such as \"2s\"; the monitor checks every %s",
			simv1.CertificateCheckIntervalAnnotation, sc.Name, v, period)
	}
	return d, nil
}

// keepCertificates applies the machine's CertificatesIssuedAtAnnotation and runs the
// node's certificate monitor when it is due; it says when to look again (0: no need).
func (r *machineReconciler) keepCertificates(ctx context.Context, sm *simv1.SimMachine, wc *workloadCluster, cluster *clusterv1.Cluster) (time.Duration, error) {
	node := sm.Status.NodeName
	if wc == nil || node == "" {
		return 0, nil
	}
	now := time.Now()
	server := sm.Status.Role == roleServer
	wc.k3sStarted(node, server, now)
	cond := metav1.Condition{Type: certificatesCondition, Status: metav1.ConditionTrue, Reason: certificatesIssuedReason}
	if v, ok := sm.Annotations[simv1.CertificatesIssuedAtAnnotation]; ok {
		if at, err := time.Parse(time.RFC3339, v); err != nil {
			// The certificates stay as they are, and the monitor goes on.
			cond.Status, cond.Reason = metav1.ConditionFalse, invalidIssuedAtReason
			cond.Message = fmt.Sprintf("annotation %s is %q, not an RFC3339 time; the certificates are left as they are; ", simv1.CertificatesIssuedAtAnnotation, v)
		} else {
			wc.issuedAt(node, server, v, at, now)
		}
	}
	period, perr := r.p.certCheckInterval(ctx, cluster)
	if perr != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, invalidCheckIntervalReason
		cond.Message += perr.Error() + "; "
	}
	cond.Message += "the soonest leaf certificate expires at " + k3smodel.Soonest(wc.leavesOf(node)).Format(time.RFC3339)
	conditions.Set(sm, cond)

	if h, _ := nodeHealthOf(sm); h == nodeK3sStopped {
		return 0, nil
	}
	if wc.kubeletExpired(node, now) {
		return 0, nil
	}
	cl, _, err := wc.ready()
	if err != nil {
		return 0, nil
	}
	check, due := wc.certCheck(node, now, period)
	if due {
		for _, e := range check.Events() {
			if err := wc.recordCertEvent(ctx, cl, node, e, now); err != nil {
				return 0, err
			}
		}
		wc.checkedCerts(node, now)
	}
	return wc.nextCertWake(node, now, period), nil
}

// certCheck is the monitor's check of a node at now, and whether it is due.
func (c *workloadCluster) certCheck(node string, now time.Time, period time.Duration) (k3smodel.CertCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.certs[node]
	if !ok {
		return k3smodel.CertCheck{}, false
	}
	first := nc.checked.IsZero()
	return k3smodel.CertCheck{Server: nc.server, Leaves: append([]k3smodel.Leaf(nil), nc.leaves...), CAs: c.cas, Now: now, First: first},
		first || !now.Before(nc.checked.Add(period))
}

func (c *workloadCluster) checkedCerts(node string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc, ok := c.certs[node]; ok {
		nc.checked = now
	}
}

// nextCertWake is when the machine must be looked at again: the monitor's next check,
// or the moment its kubelet client certificate expires, if sooner.
func (c *workloadCluster) nextCertWake(node string, now time.Time, period time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	nc, ok := c.certs[node]
	if !ok {
		return 0
	}
	next := nc.checked.Add(period).Sub(now)
	for _, l := range nc.leaves {
		if l.Path == k3smodel.KubeletClientPath {
			if d := l.NotAfter.Sub(now) + time.Second; d > 0 && d < next {
				next = d
			}
		}
	}
	return max(next, time.Millisecond)
}

// recordCertEvent writes one Event of the monitor as k3s's recorder does: a repeat
// since k3s started counts on the Event it recorded before, if that still exists.
func (c *workloadCluster) recordCertEvent(ctx context.Context, cl client.Client, node string, e k3smodel.CertEvent, now time.Time) error {
	c.mu.Lock()
	nc, ok := c.certs[node]
	var prior string
	if ok {
		prior = nc.events[e]
	}
	c.mu.Unlock()
	ts := metav1.NewTime(now)
	if prior != "" {
		ev := &corev1.Event{}
		err := cl.Get(ctx, client.ObjectKey{Namespace: k3smodel.CertMonitorNamespace, Name: prior}, ev)
		if err == nil {
			ev.Count++
			ev.LastTimestamp = ts
			return cl.Update(ctx, ev)
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading Event %s: %w", prior, err)
		}
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: k3smodel.CertMonitorNamespace, Name: fmt.Sprintf("%s.%x", node, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)},
		Reason:         e.Reason, Message: e.Message, Type: e.Type,
		Source:         corev1.EventSource{Component: k3smodel.CertMonitorComponent, Host: node},
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
		ReportingController: k3smodel.CertMonitorComponent, ReportingInstance: node,
	}
	if err := cl.Create(ctx, ev); err != nil {
		return fmt.Errorf("recording Event %s on Node %s: %w", e.Reason, node, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc, ok := c.certs[node]; ok {
		if nc.events == nil {
			nc.events = map[k3smodel.CertEvent]string{}
		}
		nc.events[e] = ev.Name
	}
	return nil
}
