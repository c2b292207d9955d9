package statuspatch

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// A pass whose object changed after it read it stores its metadata (a finalizer must
// not be lost) but not its status: that status was computed from an older copy, and
// the change's watch event brings the pass that computes it again. The guard is the
// version the pass read, also when the pass writes metadata first.
func TestWriteGuardsStatusWithTheVersionRead(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	for _, tc := range []struct {
		name            string
		changedMeantime bool
		wantStatus      bool
	}{
		{"unchanged since the read: metadata and status written", false, true},
		{"changed since the read: metadata written, status not", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "guard-"}}
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			pass := New(obj)
			if tc.changedMeantime {
				other := obj.DeepCopy()
				other.Labels = map[string]string{"changed": "meantime"}
				if err := env.Client.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			obj.Finalizers = []string{"capk3s.test/guard"}
			obj.Status.DataSecretName = "computed-from-the-read"
			if _, err := pass.Write(ctx, env.Client, obj); err != nil {
				t.Fatal(err)
			}
			stored := &bootstrapv1.KThreesConfig{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				t.Fatal(err)
			}
			if len(stored.Finalizers) != 1 {
				t.Errorf("finalizers %v, want the pass's", stored.Finalizers)
			}
			if got := stored.Status.DataSecretName != ""; got != tc.wantStatus {
				t.Errorf("status written: %v, want %v", got, tc.wantStatus)
			}
			if tc.changedMeantime && stored.Labels["changed"] != "meantime" {
				t.Errorf("the change made in the meantime was lost: labels %v", stored.Labels)
			}
			stored.Finalizers = nil
			if err := env.Client.Update(ctx, stored); err != nil {
				t.Fatal(err)
			}
		})
	}
}
