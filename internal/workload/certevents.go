package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/certexpiry"
)

// certMonitorNamespace is where k3s's certificate monitor records its Events
// (metav1.NamespaceDefault, pkg/certmonitor/certmonitor.go).
const certMonitorNamespace = metav1.NamespaceDefault

// WithCertMonitorEvents restricts the workload clusters' caches to the Events the
// control plane reads: k3s's certificate-monitor Events in "default", selected by the
// API server (the core/v1 Event field "source" is the source component). Events are
// the busiest kind of a cluster; without this, reading a few would cache them all,
// for every cluster.
func WithCertMonitorEvents(opts clustercache.CacheOptions) clustercache.CacheOptions {
	byObject := make(map[client.Object]ctrlcache.ByObject, len(opts.ByObject)+1)
	for k, v := range opts.ByObject {
		byObject[k] = v
	}
	byObject[&corev1.Event{}] = ctrlcache.ByObject{
		Namespaces: map[string]ctrlcache.Config{certMonitorNamespace: {}},
		Field:      fields.OneTermEqualSelector("source", certexpiry.Source),
	}
	opts.ByObject = byObject
	return opts
}

// IsCertMonitorEvent says e is one of k3s's certificate-monitor Events about a Node.
func IsCertMonitorEvent(e *corev1.Event) bool {
	return e.Namespace == certMonitorNamespace && e.Source.Component == certexpiry.Source && e.InvolvedObject.Kind == "Node"
}

// CertMonitorEvents are k3s's certificate-monitor Events, by Node name. The source is
// checked here too, so that a cache without WithCertMonitorEvents reads the same.
// Each carries how it was written, for certexpiry.Accept: any Event writer can use
// this source.
func CertMonitorEvents(ctx context.Context, reader client.Reader) (map[string][]certexpiry.Event, error) {
	list := &corev1.EventList{}
	if err := reader.List(ctx, list, client.InNamespace(certMonitorNamespace)); err != nil {
		switch {
		case meta.IsNoMatchError(err):
			// An API server without Events (CAPI's in-memory test server) has
			// nothing to say; a real one always serves them.
			return map[string][]certexpiry.Event{}, nil
		case errors.Is(err, clustercache.ErrClusterNotConnected):
			return nil, err
		}
		return nil, fmt.Errorf("listing the workload cluster's Events: %w", err)
	}
	out := map[string][]certexpiry.Event{}
	for i := range list.Items {
		e := &list.Items[i]
		if !IsCertMonitorEvent(e) {
			continue
		}
		o := e.InvolvedObject
		out[o.Name] = append(out[o.Name], certexpiry.Event{
			Reason: e.Reason, Message: e.Message, Time: recordedAt(e), ResourceVersion: e.ResourceVersion,
			Written: certexpiry.Written{
				Name: e.Name, Namespace: e.Namespace, Type: e.Type,
				Component: e.Source.Component, Host: e.Source.Host,
				ReportingController: e.ReportingController, ReportingInstance: e.ReportingInstance,
				ObjectKind: o.Kind, ObjectName: o.Name, ObjectUID: string(o.UID), ObjectNamespace: o.Namespace, ObjectAPIVersion: o.APIVersion,
			},
		})
	}
	return out, nil
}

// recordedAt is when the node last recorded e: client-go's recorder sets
// lastTimestamp on every repeat; the newer events API's series and eventTime, and the
// first and creation times, stand in when it is not set.
func recordedAt(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
