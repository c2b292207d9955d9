package webhooktest

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SpecLeaves are obj's spec fields, keyed by path, with JSON's values.
func SpecLeaves(t testing.TB, obj any) map[string]any {
	t.Helper()
	return Prefixed(Leaves(JSONValue(t, obj)), "spec")
}

// CheckWarnings fails the test unless got (sorted, as WarningRecorder.Take returns
// them) are exactly want.
func CheckWarnings(t testing.TB, got, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}

// CheckTypedRoundTrip requires the Go type to hold every stored field: decoded into
// typed and encoded again, the spec is what the apiserver stored, so that a
// controller's or a webhook's typed write cannot drop a field.
func CheckTypedRoundTrip(t testing.TB, c client.Reader, stored *unstructured.Unstructured, typed client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), typed); err != nil {
		t.Fatal(err)
	}
	for _, d := range StoredDifferences(SpecLeaves(t, stored.Object), SpecLeaves(t, typed), nil, nil) {
		t.Errorf("the Go type of %s loses a stored field: %s", stored.GetKind(), d)
	}
}
