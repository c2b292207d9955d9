package controlplane

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/controlplane/renewalplan"
)

// Servers are replaced for their certificates one per control plane per
// renewalplan.ReplaceInterval: a forged report can cause no more. The next one's time
// is in CertificateRenewalHeld.
func TestCertificateRenewalReplacementsAreRateLimited(t *testing.T) {
	f := newRenewalFixture(t, 3, coversVersion())
	f.rc = nil // no in-place path: certificates are renewed by replacement
	for _, m := range f.servers(t) {
		expireIn(t, m, 10*24*time.Hour)
	}
	// A server was replaced for its certificates an hour ago, and is gone.
	last := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	f.kcp.Annotations = map[string]string{controlplanev1.CertificatesReplacementAnnotation: renewalplan.Replacement{Machine: "gone", At: last}.String()}

	f.renewalPass(t)
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers, want 3: the next replacement waits for the interval", n)
	}
	next := last.Add(renewalplan.ReplaceInterval)
	c := conditions.Get(f.kcp, controlplanev1.CertificateRenewalHeldCondition)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != controlplanev1.ReplacementRateLimitedReason ||
		!strings.Contains(c.Message, "not before "+next.Format(time.RFC3339)) {
		t.Errorf("CertificateRenewalHeld = %+v, want True with the next time %s", c, next.Format(time.RFC3339))
	}

	// The interval has passed: one server is replaced, and recorded.
	last = time.Now().Add(-renewalplan.ReplaceInterval - time.Minute)
	f.kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation] = renewalplan.Replacement{Machine: "gone", At: last}.String()
	f.renewalPass(t)
	if n := len(f.servers(t)); n != 4 {
		t.Fatalf("%d servers, want a fourth created to replace one", n)
	}
	rec, ok := renewalplan.ParseReplacement(f.kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation])
	if !ok || rec.Machine == "gone" || time.Since(rec.At) > time.Minute {
		t.Fatalf("record %q, want the server being replaced, now", f.kcp.Annotations[controlplanev1.CertificatesReplacementAnnotation])
	}
	outdated := 0
	for name, m := range f.servers(t) {
		if c := conditions.Get(m, "UpToDate"); c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "certificates expire at") {
			outdated++
			if name != rec.Machine {
				t.Errorf("Machine %s is out of date for its certificates, but %s is the one being replaced", name, rec.Machine)
			}
		}
	}
	if outdated != 1 {
		t.Errorf("%d servers out of date for their certificates, want only the one being replaced", outdated)
	}
	if c := conditions.Get(f.kcp, controlplanev1.CertificateRenewalHeldCondition); c == nil || c.Reason != controlplanev1.ReplacementRateLimitedReason ||
		!strings.Contains(c.Message, "after "+rec.Machine+"'s replacement started") {
		t.Errorf("CertificateRenewalHeld = %+v, want the other two waiting", c)
	}
}

// The replacement record is stored before a server is replaced, guarded by the
// resourceVersion the pass read: a pass from a stale copy, without the record of a
// replacement another pass has just stored, replaces no second server.
func TestCertificateRenewalReplacementRecordFromAStaleCopyIsRefused(t *testing.T) {
	ctx := context.Background()
	f := newRenewalFixture(t, 3, coversVersion())
	f.rc = nil // no in-place path: certificates are renewed by replacement
	for _, m := range f.servers(t) {
		expireIn(t, m, 10*24*time.Hour)
	}
	stale := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.kcp), stale); err != nil {
		t.Fatal(err)
	}
	stale.Spec, stale.Status = f.kcp.Spec, *f.kcp.Status.DeepCopy()
	// Another pass replaced a server a minute ago and stored its record.
	newer := stale.DeepCopy()
	newer.Annotations = map[string]string{controlplanev1.CertificatesReplacementAnnotation: renewalplan.Replacement{Machine: "other", At: time.Now().Add(-time.Minute)}.String()}
	if err := env.Client.Patch(ctx, newer, client.MergeFrom(stale)); err != nil {
		t.Fatal(err)
	}
	f.kcp = stale
	f.renewalPass(t)
	if n := len(f.servers(t)); n != 3 {
		t.Errorf("%d servers, want 3: a pass from a copy without the last record replaced a second server", n)
	}
	if f.replaceWait <= 0 {
		t.Errorf("the pass whose record was refused asked for no retry")
	}
	got := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(f.kcp), got); err != nil {
		t.Fatal(err)
	}
	if rec, _ := renewalplan.ParseReplacement(got.Annotations[controlplanev1.CertificatesReplacementAnnotation]); rec.Machine != "other" {
		t.Errorf("stored record %q, want the other pass's, untouched", got.Annotations[controlplanev1.CertificatesReplacementAnnotation])
	}
}
