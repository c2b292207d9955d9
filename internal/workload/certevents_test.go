package workload

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capk3s/capk3s/internal/certexpiry"
)

func TestCertMonitorEventsReadsK3sEventsByNode(t *testing.T) {
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	event := func(name, ns, source, kind, node string, set func(*corev1.Event)) *corev1.Event {
		e := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: node},
			Source:         corev1.EventSource{Component: source}, Reason: certexpiry.ReasonOK}
		if set != nil {
			set(e)
		}
		return e
	}
	c := fake.NewClientBuilder().WithObjects(
		event("a", "default", certexpiry.Source, "Node", "n1", func(e *corev1.Event) { e.LastTimestamp = metav1.NewTime(at) }),
		// Without lastTimestamp (the newer events API): eventTime stands in.
		event("b", "default", certexpiry.Source, "Node", "n1", func(e *corev1.Event) {
			e.EventTime = metav1.NewMicroTime(at.Add(time.Minute))
			e.Reason = certexpiry.ReasonLeafWarning
		}),
		event("c", "default", "kubelet", "Node", "n1", nil),
		event("d", "default", certexpiry.Source, "Pod", "n1", nil),
		event("e", "kube-system", certexpiry.Source, "Node", "n1", nil),
		event("f", "default", certexpiry.Source, "Node", "n2", func(e *corev1.Event) { e.FirstTimestamp = metav1.NewTime(at) }),
	).Build()
	got, err := CertMonitorEvents(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got["n1"]) != 2 || len(got["n2"]) != 1 {
		t.Fatalf("got %+v, want two Events of n1 and one of n2", got)
	}
	for _, e := range got["n1"] {
		want := at
		if e.Reason == certexpiry.ReasonLeafWarning {
			want = at.Add(time.Minute)
		}
		if !e.Time.Equal(want) || e.ResourceVersion == "" {
			t.Errorf("%s: time %s (rv %q), want %s", e.Reason, e.Time, e.ResourceVersion, want)
		}
	}
	if !got["n2"][0].Time.Equal(at) {
		t.Errorf("n2: time %s, want firstTimestamp %s", got["n2"][0].Time, at)
	}
}

type noEvents struct{ client.Reader }

func (noEvents) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Event"}}
}

// An API server that serves no Events (CAPI's in-memory one) has nothing to report.
func TestCertMonitorEventsWithoutTheKind(t *testing.T) {
	got, err := CertMonitorEvents(context.Background(), noEvents{})
	if err != nil || len(got) != 0 {
		t.Errorf("got %+v, %v; want nothing and no error", got, err)
	}
}
