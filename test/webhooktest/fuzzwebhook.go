package webhooktest

import (
	"context"
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook is a defaulting and validating webhook of objects P.
type Webhook[P any] interface {
	Default(context.Context, P) error
	ValidateCreate(context.Context, P) (admission.Warnings, error)
	ValidateUpdate(context.Context, P, P) (admission.Warnings, error)
}

// FuzzWebhook checks the properties every webhook must have, on objects made from
// fuzz input (FillFromFuzz): nothing panics; every rejection is an Invalid error
// naming its fields (CheckFieldErrors); defaulting is idempotent, since the apiserver
// may call a mutating webhook again and defaults every update; a defaulted object that
// validates still validates once stored, defaulted again and created again, and an
// update that changes nothing of it is let through (the controllers' metadata-only
// writes depend on that). The update is validated as the apiserver sends it: old as
// stored (any content, as before this webhook existed), new defaulted. dryRun makes
// the request a dry run and marks new as Cluster API's topology dry run, which the
// template webhooks treat apart.
func FuzzWebhook[O any, P interface {
	*O
	client.Object
}](t *testing.T, w Webhook[P], oldData, newData []byte, dryRun bool) {
	ctx := UpdateRequest(dryRun)
	newObj := P(new(O))
	if !FillFromFuzz(newData, (*O)(newObj)) {
		t.Skip("not an object JSON can carry")
	}
	place(newObj)
	if err := w.Default(ctx, newObj); err != nil {
		t.Fatalf("Default: %v", err)
	}
	again := copyOf(newObj)
	if err := w.Default(ctx, again); err != nil {
		t.Fatalf("second Default: %v", err)
	}
	if !SameJSON(newObj, again) {
		t.Fatalf("defaulting is not idempotent:\nonce  %s\ntwice %s", mustJSON(newObj), mustJSON(again))
	}
	_, createErr := w.ValidateCreate(ctx, copyOf(newObj))
	CheckFieldErrors(t, "ValidateCreate", createErr)
	if createErr == nil {
		stored := copyOf(newObj)
		if !RoundTrip((*O)(stored)) {
			t.Fatal("a valid object cannot be stored as JSON")
		}
		redefaulted := copyOf(stored)
		if err := w.Default(ctx, redefaulted); err != nil {
			t.Fatalf("Default of the stored object: %v", err)
		}
		if _, err := w.ValidateCreate(ctx, copyOf(redefaulted)); err != nil {
			t.Fatalf("a valid object is refused once stored and defaulted again: %v\n%s", err, mustJSON(redefaulted))
		}
		if _, err := w.ValidateUpdate(ctx, stored, redefaulted); err != nil {
			t.Fatalf("an update that changes nothing is refused: %v\n%s", err, mustJSON(stored))
		}
	}

	oldObj := P(new(O))
	if !FillFromFuzz(oldData, (*O)(oldObj)) {
		t.Skip("not an object JSON can carry")
	}
	place(oldObj)
	if dryRun {
		SetTopologyDryRun(newObj)
	}
	_, updateErr := w.ValidateUpdate(ctx, oldObj, newObj)
	CheckFieldErrors(t, "ValidateUpdate", updateErr)
}

// place gives obj the name and namespace the webhooks report and read; the rest of
// its metadata is the fuzzer's.
func place(obj metav1.Object) {
	obj.SetName("fuzz")
	obj.SetNamespace(metav1.NamespaceDefault)
}

func copyOf[P client.Object](obj P) P {
	return obj.DeepCopyObject().(P)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
