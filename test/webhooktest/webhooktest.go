package webhooktest

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// UpdateRequest is a context carrying an UPDATE admission request, dry run or not, as
// controller-runtime gives it to validating webhooks: the template webhooks read it to
// tell Cluster API's topology dry runs apart.
func UpdateRequest(dryRun bool) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{
		AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, DryRun: ptr.To(dryRun)},
	})
}

// SetTopologyDryRun gives obj (only) the annotation with which Cluster API's topology
// controller marks its dry runs.
func SetTopologyDryRun(obj metav1.Object) {
	obj.SetAnnotations(map[string]string{clusterv1.TopologyDryRunAnnotation: ""})
}

// CheckInvalid requires no error for an empty want, else an Invalid error containing
// want.
func CheckInvalid(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("rejected: %v", err)
	case want != "" && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want)):
		t.Errorf("got %v, want an Invalid error containing %q", err, want)
	}
}

// Rejection is what an apiserver's rejection of an object must say.
type Rejection struct {
	// Path is the field the error must name.
	Path string
	// Message is a fragment of the explanation.
	Message string
	// Webhook is the name of the validating webhook expected to reject.
	Webhook string
	// BySchema: the CRD schema rejects the object before Webhook is called, so the
	// error must not come from Webhook. Such inputs are kept in the tests so that every
	// rule is shown to hold on a real server, whichever layer holds it.
	BySchema bool
}

// CheckRejected requires an Invalid error naming the field and explaining the
// problem; when the webhook (not the schema) is expected to reject, the error must
// also come from the named webhook.
func CheckRejected(t testing.TB, err error, want Rejection) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want rejection at %s", want.Path)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("error is not Invalid: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, want.Path) {
		t.Errorf("error does not name %s: %v", want.Path, msg)
	}
	if !strings.Contains(msg, want.Message) {
		t.Errorf("error does not explain %q: %v", want.Message, msg)
	}
	if fromWebhook := strings.Contains(msg, want.Webhook); fromWebhook == want.BySchema {
		t.Errorf("rejected by the webhook: %v, want %v: %v", fromWebhook, !want.BySchema, msg)
	}
}

// CheckNotStored requires that the object namespace/name does not exist: a rejected
// creation stored nothing. obj receives it if it does.
func CheckNotStored(t testing.TB, c client.Reader, obj client.Object, namespace, name string) {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if !apierrors.IsNotFound(err) {
		t.Errorf("rejected object was stored (get: %v)", err)
	}
}
