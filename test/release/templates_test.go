package release

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// flavor is one published template and what clusterctl must generate from it.
type flavor struct {
	file string
	// kinds the generated objects must be, in any order.
	kinds []string
	// infra is the apiVersion of the flavor's infrastructure kinds. They are created
	// like the rest when the test apiserver serves them (see installInfraCRDs), else
	// only their apiVersion is checked.
	infra string
}

const (
	capdAPIVersion = "infrastructure.cluster.x-k8s.io/v1beta2"
	simAPIVersion  = "infrastructure.sim.capk3s.io/v1beta2"
)

var flavors = []flavor{
	{file: "cluster-template.yaml", infra: capdAPIVersion, kinds: []string{
		"Cluster", "DockerCluster", "KThreesControlPlane", "DockerMachineTemplate",
		"MachineDeployment", "DockerMachineTemplate", "KThreesConfigTemplate"}},
	{file: "cluster-template-sim.yaml", infra: simAPIVersion, kinds: []string{
		"Cluster", "SimCluster", "KThreesControlPlane", "SimMachineTemplate",
		"MachineDeployment", "SimMachineTemplate", "KThreesConfigTemplate"}},
	{file: "clusterclass-k3s.yaml", infra: capdAPIVersion, kinds: []string{
		"ClusterClass", "DockerClusterTemplate", "KThreesControlPlaneTemplate",
		"DockerMachineTemplate", "DockerMachineTemplate", "KThreesConfigTemplate"}},
	{file: "cluster-template-topology.yaml", kinds: []string{"Cluster"}},
}

// generate runs clusterctl generate cluster on a published template, the way
// docs/install.md tells users to (--from), with every variable that has no default.
func generate(t *testing.T, repo repository, release, file, namespace string, controlPlanes int64) []unstructured.Unstructured {
	t.Helper()
	tmpl, err := repo.client.GetClusterTemplate(context.Background(), clusterctl.GetClusterTemplateOptions{
		Kubeconfig:               repo.kubeconfig,
		URLSource:                &clusterctl.URLSourceOptions{URL: filepath.Join(release, file)},
		TargetNamespace:          namespace,
		ClusterName:              "demo",
		KubernetesVersion:        "v1.35.4+k3s1",
		ControlPlaneMachineCount: ptr.To(controlPlanes),
		WorkerMachineCount:       ptr.To[int64](2),
	})
	if err != nil {
		t.Fatalf("clusterctl generate cluster --from %s: %v", file, err)
	}
	return tmpl.Objs()
}

// TestGeneratedClusters generates a cluster from every published template and creates
// the objects on the test apiserver: CAPI's kinds pass their CRD schemas, and capk3s's
// kinds pass its webhooks, which default them.
func TestGeneratedClusters(t *testing.T) {
	startWebhooks(t)
	release := buildRelease(t)
	repo := newRepository(t, release)
	served := installInfraCRDs(t, repo.capiVersion)

	for _, f := range flavors {
		t.Run(f.file, func(t *testing.T) {
			ns := env.NewNamespace(t)
			objs := generate(t, repo, release, f.file, ns, 3)
			infraServed := served[f.infra]
			var kinds []string
			for i := range objs {
				obj := &objs[i]
				kinds = append(kinds, obj.GetKind())
				if obj.GetNamespace() != ns {
					t.Errorf("%s %s is in namespace %q, want %q", obj.GetKind(), obj.GetName(), obj.GetNamespace(), ns)
				}
				if obj.GetAPIVersion() == f.infra && !infraServed {
					continue // not served here; its apiVersion is right
				}
				// Strict: a misspelt field would otherwise be pruned without a word.
				if err := env.Client.Create(context.Background(), obj, client.FieldValidation("Strict")); err != nil {
					t.Errorf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
			}
			if !sameKinds(kinds, f.kinds) {
				t.Errorf("generated %v, want %v", kinds, f.kinds)
			}
			if slices.Contains(f.kinds, "KThreesControlPlane") {
				checkDefaultedControlPlane(t, ns)
			}
		})
	}

	t.Run("an even number of servers is refused", func(t *testing.T) {
		ns := env.NewNamespace(t)
		for _, obj := range generate(t, repo, release, "cluster-template-sim.yaml", ns, 2) {
			if obj.GetKind() != "KThreesControlPlane" {
				continue
			}
			err := env.Client.Create(context.Background(), &obj)
			if err == nil || !strings.Contains(err.Error(), "validation.kthreescontrolplane") || !strings.Contains(err.Error(), "must be odd") {
				t.Errorf("a control plane of 2 servers: %v, want a rejection by the validating webhook", err)
			}
			return
		}
		t.Fatal("no KThreesControlPlane generated")
	})
}

// checkDefaultedControlPlane reads back the generated control plane as stored: the
// variables' defaults reached it and the defaulting webhook completed it.
func checkDefaultedControlPlane(t *testing.T, ns string) {
	t.Helper()
	cp := &controlplanev1.KThreesControlPlane{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "demo-control-plane"}, cp); err != nil {
		t.Fatalf("reading the control plane: %v", err)
	}
	s := cp.Spec
	if ptr.Deref(s.Replicas, 0) != 3 || s.Version != "v1.35.4+k3s1" {
		t.Errorf("replicas %v, version %q: want 3, v1.35.4+k3s1", s.Replicas, s.Version)
	}
	if s.KThreesConfigSpec.ServerConfig.ClusterCidr != "10.42.0.0/16" || s.KThreesConfigSpec.ServerConfig.ServiceCidr != "10.43.0.0/16" {
		t.Errorf("k3s networks %q, %q: want the templates' defaults", s.KThreesConfigSpec.ServerConfig.ClusterCidr, s.KThreesConfigSpec.ServerConfig.ServiceCidr)
	}
	rs := s.RolloutStrategy
	if rs == nil || rs.Type != controlplanev1.RollingUpdateStrategyType || rs.RollingUpdate == nil ||
		ptr.Deref(rs.RollingUpdate.MaxSurge, intstr.FromInt32(-1)) != intstr.FromInt32(1) {
		t.Errorf("rolloutStrategy %+v: want the defaulting webhook's RollingUpdate with maxSurge 1", rs)
	}
}

func sameKinds(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
