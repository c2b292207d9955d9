package certexpiry

import (
	"fmt"
	"strings"
)

// Written is how an Event was written: the fields k3s's recorder always sets the same
// way (pkg/certmonitor/certmonitor.go with pkg/util/api.go's
// BuildControllerEventRecorder and client-go's tools/record recorder, k3s v1.34.9,
// v1.35.4 and v1.36.2).
type Written struct {
	// Name is the Event's name: client-go's "<node>.<nanoseconds in hex>".
	Name string
	// Namespace is the Event's namespace: "default" (metav1.NamespaceDefault).
	Namespace string
	// Type is Warning for the two warnings, Normal for the OK.
	Type string
	// Component and Host are the Event's source: "k3s-cert-monitor" and the node's
	// name (the NODE_NAME k3s's agent sets, pkg/agent/config/config.go).
	Component, Host string
	// ReportingController and ReportingInstance: client-go copies the source into them.
	ReportingController, ReportingInstance string
	// The involvedObject: {Kind: "Node", Name: <node>, UID: <node>}, no namespace and
	// no apiVersion. k3s sets the UID to the node's name, as the kubelet does, never
	// the Node object's UID.
	ObjectKind, ObjectName, ObjectUID, ObjectNamespace, ObjectAPIVersion string
}

// Authentic says why e is not an Event k3s's certificate monitor on node wrote, or ""
// when every field k3s always sets is as k3s sets it, and its message has the words
// k3s puts there for its reason. It narrows who can forge a report; it cannot close
// it: whoever may create Events in "default" of the workload cluster can copy every
// one of these fields (docs/security.md).
func Authentic(e Event, node string) string {
	w := e.Written
	check := []struct{ field, got, want string }{
		{"namespace", w.Namespace, "default"},
		{"source.component", w.Component, Source},
		{"source.host", w.Host, node},
		{"reportingController", w.ReportingController, Source},
		{"reportingInstance", w.ReportingInstance, node},
		{"involvedObject.kind", w.ObjectKind, "Node"},
		{"involvedObject.name", w.ObjectName, node},
		{"involvedObject.uid", w.ObjectUID, node},
		{"involvedObject.namespace", w.ObjectNamespace, ""},
		{"involvedObject.apiVersion", w.ObjectAPIVersion, ""},
	}
	for _, c := range check {
		if c.got != c.want {
			return fmt.Sprintf("%s is %q, k3s writes %q", c.field, c.got, c.want)
		}
	}
	if !strings.HasPrefix(w.Name, node+".") {
		return fmt.Sprintf("name %q does not start with the node's name, as client-go names k3s's Events", w.Name)
	}
	msg := strings.TrimPrefix(e.Message, aggregatedLead)
	var typ, lead string
	switch e.Reason {
	case ReasonLeafWarning:
		typ, lead = "Warning", LeafLead
	case ReasonCAWarning:
		typ, lead = "Warning", CALead
	case ReasonOK:
		if msg != OKMessage {
			return "its message is not k3s's OK message"
		}
		typ = "Normal"
	default:
		return fmt.Sprintf("reason %q is not one of k3s's certificate monitor", e.Reason)
	}
	if w.Type != typ {
		return fmt.Sprintf("type is %q, k3s writes %q for %s", w.Type, typ, e.Reason)
	}
	if !strings.HasPrefix(msg, lead) {
		return "its message does not start with k3s's words for " + e.Reason
	}
	return ""
}

// Rejected is an Event that Accept left out, and why.
type Rejected struct {
	Node, Reason, Why string
}

// Accept keeps, of each node's Events, those Authentic says k3s could have written;
// the others are returned with why, so that they can be shown.
func Accept(byNode map[string][]Event) (map[string][]Event, []Rejected) {
	out := make(map[string][]Event, len(byNode))
	var rejected []Rejected
	for node, events := range byNode {
		for _, e := range events {
			if why := Authentic(e, node); why != "" {
				rejected = append(rejected, Rejected{Node: node, Reason: e.Reason, Why: why})
				continue
			}
			out[node] = append(out[node], e)
		}
	}
	return out, rejected
}
