package controlplane

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	controlplanewebhooks "github.com/capk3s/capk3s/internal/webhooks/controlplane"
	"github.com/capk3s/capk3s/test/webhooktest"
)

// FuzzUpToDate builds random control planes (webhooktest.FillFromFuzz), as the
// webhooks store them: defaulted, and only if accepted. The server desiredstate.go
// makes for one, cloned and stored as scale.go does it, must be up to date at once,
// or every reconcile would replace servers forever; and giving the control plane
// another k3s release must make that server outdated, or an upgrade would never roll
// out. A control plane whose version does not parse must never count a server as up
// to date. Nothing may panic on any input.
func FuzzUpToDate(f *testing.F) {
	f.Add([]byte(`{"spec":{"version":"v1.31.4+k3s1","machineTemplate":{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"cp"}}}}}`), "v1.31.4+k3s2")
	f.Add([]byte(`{"spec":{"version":"1.31.4+k3s1","kthreesConfigSpec":{"format":"cloud-config","serverConfig":{"etcdProxyImage":"x"}},"machineTemplate":{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"cp"}}}}}`), "v1.31.4+k3s1")
	f.Add([]byte(`{"spec":{"version":"v1.32.0-rc1+k3s1","rolloutAfter":"2026-09-21T13:00:00Z","machineTemplate":{"spec":{"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"cp"}}}}}`), "1.32.0+k3s1")
	f.Add([]byte(`{"spec":{"version":"latest"}}`), "v1.31.4")
	f.Fuzz(func(t *testing.T, cpData []byte, otherVersion string) {
		kcp := &controlplanev1.KThreesControlPlane{}
		if !webhooktest.FillFromFuzz(cpData, kcp) {
			t.Skip("not an object JSON can carry")
		}
		kcp.Namespace, kcp.Name, kcp.UID = metav1.NamespaceDefault, "fuzz", "fuzz-uid"
		now := webhooktest.FuzzNow
		want, err := k3s.ParseVersion(kcp.Spec.Version)
		m, objs := desiredServer(t, kcp, now)
		if err != nil {
			if upToDateReason(m, objs, kcp, now) == "" {
				t.Fatalf("a server counts as up to date although the control plane's version %q does not parse", kcp.Spec.Version)
			}
			return
		}
		w := &controlplanewebhooks.KThreesControlPlane{}
		if err := w.Default(context.Background(), kcp); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ValidateCreate(context.Background(), kcp.DeepCopy()); err != nil {
			return
		}
		if !webhooktest.RoundTrip(kcp) {
			t.Fatal("a valid control plane cannot be stored")
		}
		m, objs = desiredServer(t, kcp, now)
		if reason := upToDateReason(m, objs, kcp, now); reason != "" {
			t.Fatalf("a server just made from the control plane's desired state is outdated: %s\n%s", reason, spew(kcp))
		}
		other, err := k3s.ParseVersion(otherVersion)
		if err != nil || other.String() == want.String() {
			return
		}
		upgraded := kcp.DeepCopy()
		upgraded.Spec.Version = otherVersion
		if upToDateReason(m, objs, upgraded, now) == "" {
			t.Fatalf("a server of %s counts as up to date for version %s", m.Spec.Version, otherVersion)
		}
	})
}

// desiredServer is the Machine, KThreesConfig and infrastructure machine scale.go
// would create for kcp, as read back from the apiserver, created at now.
func desiredServer(t *testing.T, kcp *controlplanev1.KThreesControlPlane, now time.Time) (*clusterv1.Machine, serverObjects) {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: kcp.Namespace, Name: "cluster"}}
	const name = "fuzz-server"
	ref := kcp.Spec.MachineTemplate.Spec.InfrastructureRef
	template := &unstructured.Unstructured{}
	template.SetAPIVersion(ref.APIGroup + "/v1beta2")
	template.SetKind(ref.Kind)
	template.SetNamespace(kcp.Namespace)
	template.SetName(ref.Name)
	owner := controllerRef(kcp)
	infra, err := external.GenerateTemplate(&external.GenerateTemplateInput{
		Template: template,
		TemplateRef: &corev1.ObjectReference{
			APIVersion: template.GetAPIVersion(), Kind: template.GetKind(), Namespace: template.GetNamespace(), Name: template.GetName(),
		},
		Namespace: kcp.Namespace, Name: name, ClusterName: cluster.Name, OwnerRef: &owner,
		Labels: desiredLabels(kcp, cluster), Annotations: desiredAnnotations(kcp),
	})
	if err != nil {
		t.Skipf("no infrastructure machine can be cloned from %v: %v", ref, err)
	}
	config := desiredKThreesConfig(kcp, cluster, name)
	configRef := clusterv1.ContractVersionedObjectReference{APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name}
	infraRef := clusterv1.ContractVersionedObjectReference{APIGroup: infra.GroupVersionKind().Group, Kind: infra.GetKind(), Name: name}
	m := desiredMachine(kcp, cluster, name, "", configRef, infraRef)
	m.CreationTimestamp = metav1.NewTime(now)
	// The infrastructure machine is unstructured, its JSON form already.
	if !webhooktest.RoundTrip(config) || !webhooktest.RoundTrip(m) {
		t.Fatal("a desired server cannot be stored as JSON")
	}
	return m, serverObjects{config: config, infra: infra}
}

func spew(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
