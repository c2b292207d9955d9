package chaos

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capk3s/capk3s/test/envtest"
)

// The checkers must be able to fail: fed what a broken manager would do, each reports it.

func TestLeaderCheckerSeesTwoActingReplicas(t *testing.T) {
	c := &leaderChecker{procs: map[string]*envtest.ManagerProcess{
		"controlplane-manager-0": {Name: "controlplane-manager-0"},
		"controlplane-manager-1": {Name: "controlplane-manager-1"},
	}, last: map[string]write{}, acquired: map[string][]time.Time{}}
	at := time.Now()
	ev := func(user, resource string, d time.Duration) auditEvent {
		e := auditEvent{Verb: "create", Received: at.Add(d)}
		e.User.Username, e.ObjectRef.Resource = user, resource
		return e
	}
	c.event(ev("controlplane-manager-0", "machines", 0))
	c.event(ev("controlplane-manager-0", "secrets", time.Second))
	c.event(ev("controlplane-manager-1", "leases", 2*time.Second))
	if _, problems := c.counts(); len(problems) != 0 {
		t.Fatalf("one writer and a Lease write reported: %v", problems)
	}
	// Neither replica died: the second writer acted beside the first.
	c.event(ev("controlplane-manager-1", "machines", 3*time.Second))
	if n, problems := c.counts(); len(problems) != 1 || n != 3 {
		t.Fatalf("two live writers: %d checks, problems %v; want 3 checks, 1 problem", n, problems)
	}
}

func TestTokenCheckerSeesAChangedToken(t *testing.T) {
	reg := newRegistry()
	reg.add(types.NamespacedName{Namespace: "ns", Name: "c"}, "c-control-plane", 3)
	c := newTokenChecker(reg)
	secret := func(uid, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-token", UID: types.UID(uid)},
			Data: map[string][]byte{"value": []byte(value)}}
	}
	h := c.handler()
	h.OnAdd(secret("1", "a"), false)
	h.OnUpdate(nil, secret("1", "a"))
	if _, problems := c.counts(); len(problems) != 0 {
		t.Fatalf("an unchanged token reported: %v", problems)
	}
	h.OnUpdate(nil, secret("1", "b"))
	h.OnUpdate(nil, secret("2", "a"))
	h.OnDelete(secret("2", "a"))
	if _, problems := c.counts(); len(problems) != 3 {
		t.Fatalf("changed, replaced, deleted: problems %v, want 3", problems)
	}
}
