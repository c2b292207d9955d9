package release

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// access is one request a manager's ServiceAccount makes (or must not be able to).
type access struct {
	verb, group, resource, subresource string
	// name is the object's name, for rules limited to named objects.
	name string
	// namespace: "" for cluster-wide, "own" for the provider's namespace, "any" for
	// some other namespace (a user's).
	namespace string
}

func (a access) String() string {
	return fmt.Sprintf("%s %s/%s/%s %q in %q", a.verb, a.group, a.resource, a.subresource, a.name, a.namespace)
}

func serviceAccount(p installed) string {
	return "system:serviceaccount:" + p.namespace + ":" + p.prefix + "manager"
}

// checkRBAC asks the apiserver's RBAC authorizer, through SubjectAccessReviews, what
// the manager's ServiceAccount may do, which proves the bindings as well as the rules.
func checkRBAC(t *testing.T, p installed) {
	t.Helper()
	for allowed, accesses := range map[bool][]access{
		true:  append(append([]access{}, common.allowed...), p.allowed...),
		false: append(append([]access{}, common.denied...), p.denied...),
	} {
		for _, a := range accesses {
			if got := authorized(t, p, a); got != allowed {
				t.Errorf("%s may %s: %v, want %v", serviceAccount(p), a, got, allowed)
			}
		}
	}
	checkAggregatedRole(t, p)
}

func authorized(t *testing.T, p installed, a access) bool {
	t.Helper()
	ns := map[string]string{"": "", "own": p.namespace, "any": "default"}[a.namespace]
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   serviceAccount(p),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + p.namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: ns, Name: a.name,
		},
	}}
	if err := env.Client.Create(context.Background(), sar); err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return sar.Status.Allowed
}

// checkAggregatedRole requires a ClusterRole that Cluster API core's manager role
// aggregates (by label) and that covers every CRD of the provider.
func checkAggregatedRole(t *testing.T, p installed) {
	t.Helper()
	roles := &rbacv1.ClusterRoleList{}
	if err := env.Client.List(context.Background(), roles, byProvider(p),
		client.MatchingLabels{"cluster.x-k8s.io/aggregate-to-manager": "true"}); err != nil {
		t.Fatal(err)
	}
	if len(roles.Items) != 1 {
		t.Fatalf("%d ClusterRoles of %s aggregated to CAPI's manager, want 1", len(roles.Items), p.label)
	}
	covered := map[string]bool{}
	for _, rule := range roles.Items[0].Rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				covered[r+"."+g] = true
			}
		}
	}
	for _, crd := range p.crds {
		if !covered[crd] {
			t.Errorf("aggregated ClusterRole %s does not cover %s", roles.Items[0].Name, crd)
		}
	}
}
