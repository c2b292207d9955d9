package release

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// networkPolicyFile is the optional NetworkPolicy manifest a release publishes.
const networkPolicyFile = "capk3s-networkpolicy.yaml"

// splitDocuments returns the YAML documents of a file with a kind.
func splitDocuments(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s: %v", filepath.Base(path), err)
		}
		if meta.Kind != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// managerDeployments are the managers' Deployments in the components files, by namespace.
func managerDeployments(t *testing.T, release string) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, file := range []string{"bootstrap-components.yaml", "control-plane-components.yaml"} {
		for _, doc := range splitDocuments(t, filepath.Join(release, file)) {
			d := &appsv1.Deployment{}
			if err := yaml.Unmarshal(doc, d); err != nil || d.Kind != "Deployment" {
				continue
			}
			out[d.Namespace] = d
		}
	}
	return out
}

// The optional NetworkPolicy manifest parses strictly as NetworkPolicies, the API
// server accepts them, and each selects a manager's pods in that manager's namespace
// and opens only ports the manager serves.
func TestNetworkPolicyManifest(t *testing.T) {
	ctx := context.Background()
	release := buildRelease(t)
	deployments := managerDeployments(t, release)
	if len(deployments) != 2 {
		t.Fatalf("manager Deployments by namespace: %v", deployments)
	}
	var covered []string
	for _, doc := range splitDocuments(t, filepath.Join(release, networkPolicyFile)) {
		np := &networkingv1.NetworkPolicy{}
		if err := yaml.UnmarshalStrict(doc, np); err != nil {
			t.Fatalf("%s: %v", networkPolicyFile, err)
		}
		if np.Kind != "NetworkPolicy" {
			t.Fatalf("%s holds a %s", networkPolicyFile, np.Kind)
		}
		d := deployments[np.Namespace]
		if d == nil {
			t.Errorf("NetworkPolicy %s is in namespace %q, where no manager runs", np.Name, np.Namespace)
			continue
		}
		covered = append(covered, np.Namespace)
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("NetworkPolicy %s selects %v (%v), not the manager's pods %v", np.Name, np.Spec.PodSelector, err, d.Spec.Template.Labels)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			t.Errorf("NetworkPolicy %s restricts %v, want ingress and egress", np.Name, np.Spec.PolicyTypes)
		}
		served := map[int32]bool{}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, p := range c.Ports {
				served[p.ContainerPort] = true
			}
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || !served[p.Port.IntVal] {
					t.Errorf("NetworkPolicy %s opens port %v, which the manager in %s does not serve", np.Name, p.Port, np.Namespace)
				}
			}
		}
		if !served[9443] || !opens(np, 9443) {
			t.Errorf("NetworkPolicy %s does not let the kube-apiserver reach the webhooks on 9443", np.Name)
		}

		// Server-side validation: a dry-run create in the manager's namespace.
		ns := &corev1.Namespace{}
		ns.Name = np.Namespace
		if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, np, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses NetworkPolicy %s: %v", np.Name, err)
		}
	}
	slices.Sort(covered)
	if !slices.Equal(covered, []string{"capk3s-bootstrap-system", "capk3s-control-plane-system"}) {
		t.Errorf("NetworkPolicies cover namespaces %v, want both managers'", covered)
	}
}

func opens(np *networkingv1.NetworkPolicy, port int32) bool {
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.IntVal == port {
				return true
			}
		}
	}
	return false
}
