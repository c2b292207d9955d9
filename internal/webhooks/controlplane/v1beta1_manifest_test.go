package controlplane

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/test/webhooktest"
)

// A manifest in cluster-api-k3s's v1beta1 shape, with every field of that version's
// spec, is accepted with strict field validation (through the conversion to v1beta2
// and capk3s's webhooks) and reads back at v1beta1 with every field as written.
func TestClusterAPIK3sV1Beta1ManifestKeepsEveryField(t *testing.T) {
	startWebhooks(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	c, warnings := webhooktest.StrictClient(t, env.Config, env.Scheme)

	written := webhooktest.LoadManifest(t, "testdata/clusterapik3s-v1beta1-controlplane.yaml", ns)
	if err := c.Create(ctx, written.DeepCopy()); err != nil {
		t.Fatalf("creating the v1beta1 manifest with strict field validation: %v", err)
	}
	for _, w := range warnings.Take() {
		// The deprecation of v1beta1 is the one warning expected.
		if w != "controlplane.cluster.x-k8s.io/v1beta1 KThreesControlPlane is deprecated; use controlplane.cluster.x-k8s.io/v1beta2" {
			t.Errorf("unexpected warning %q", w)
		}
	}

	read := &unstructured.Unstructured{}
	read.SetGroupVersionKind(written.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(written), read); err != nil {
		t.Fatal(err)
	}
	wrote, got := webhooktest.SpecLeaves(t, written.Object), webhooktest.SpecLeaves(t, read.Object)
	if len(wrote) < 40 {
		t.Fatalf("the manifest has %d spec fields; it is meant to set every v1beta1 field", len(wrote))
	}
	if diffs := webhooktest.StoredDifferences(wrote, got, nil, nil); len(diffs) > 0 {
		t.Errorf("the v1beta1 spec read back differs from the one written:\n%v", diffs)
	}
}
