package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// The topology scenario's variables: a k3s option without a field of its own and a
// registry mirror, set through the published ClusterClass's variables.
const (
	topologyServerOptions   = `{"flannel-backend":"wireguard-native"}`
	topologyMirrorRegistry  = "docker.io"
	topologyMirrorEndpoint  = "https://mirror.example.com:5000"
	topologyRegistryMirrors = `[{"registry":"` + topologyMirrorRegistry + `","endpoints":["` + topologyMirrorEndpoint + `"]}]`
)

// useTopology makes the scenario's cluster one with a topology, and builds (but does not create) a Cluster with a topology on the
// published ClusterClass. The control plane and the MachineDeployment are the
// topology controller's, named by it: createTopology finds them.
func (s *scenario) useTopology(servers, agents int32) *stack.Topology {
	s.t.Helper()
	topo, err := stack.NewTopology(stack.TopologyOptions{
		Namespace: s.ns, Name: s.key.Name, Servers: servers, Agents: agents, Version: s.version,
		Variables: map[string]string{"serverOptions": topologyServerOptions, "registryMirrors": topologyRegistryMirrors},
	})
	s.must("reading the published ClusterClass", err)
	s.objs = &stack.Cluster{
		Cluster:      topo.Cluster,
		ControlPlane: &controlplanev1.KThreesControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns}},
		Workers:      &clusterv1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns}},
	}
	return topo
}

// createTopology creates the ClusterClass, its templates and the Cluster, and waits
// for the topology controller to make the control plane and the MachineDeployment.
func (s *scenario) createTopology(topo *stack.Topology) {
	s.t.Helper()
	for _, o := range append(topo.Class, topo.Cluster) {
		s.must(fmt.Sprintf("creating %s %s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName()), env.Client.Create(s.ctx, o))
	}
	s.eventually("the topology's control plane and MachineDeployment", func(ctx context.Context) (bool, string, error) {
		c := &clusterv1.Cluster{}
		if err := env.Client.Get(ctx, s.key, c); err != nil {
			return false, "", err
		}
		s.objs.ControlPlane.Name = c.Spec.ControlPlaneRef.Name
		mds := &clusterv1.MachineDeploymentList{}
		if err := env.Client.List(ctx, mds, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterTopologyMachineDeploymentNameLabel: "md-0"}); err != nil {
			return false, "", err
		}
		if len(mds.Items) == 1 {
			s.objs.Workers.Name = mds.Items[0].Name
		}
		return s.objs.ControlPlane.Name != "" && s.objs.Workers.Name != "",
			fmt.Sprintf("controlPlaneRef %q, %d MachineDeployments", s.objs.ControlPlane.Name, len(mds.Items)), nil
	})
}

// patchTopology changes the Cluster's topology.
func (s *scenario) patchTopology(change func(*clusterv1.Topology)) {
	s.t.Helper()
	c := &clusterv1.Cluster{}
	s.must("reading the Cluster", env.Client.Get(s.ctx, s.key, c))
	before := c.DeepCopy()
	change(&c.Spec.Topology)
	s.must("patching the Cluster's topology", env.Client.Patch(s.ctx, c, client.MergeFrom(before)))
}

// checkTopologyPatches: the ClusterClass's patches put the variables into the
// control plane and the agents' KThreesConfigTemplate, and from there into every
// machine's bootstrap data.
func (s *scenario) checkTopologyPatches() {
	s.t.Helper()
	wantMirrors := []bootstrapv1.RegistryMirror{{Registry: topologyMirrorRegistry, Endpoints: []string{topologyMirrorEndpoint}}}
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.ControlPlane), kcp))
	spec := kcp.Spec.KThreesConfigSpec
	if got := string(spec.ServerConfig.ExtraConfig["flannel-backend"].Raw); got != `"wireguard-native"` {
		s.t.Errorf("control plane's serverConfig.extraConfig flannel-backend = %s, want the serverOptions variable's", got)
	}
	if spec.AgentConfig.Registries == nil || !reflect.DeepEqual(spec.AgentConfig.Registries.Mirrors, wantMirrors) {
		s.t.Errorf("control plane's agentConfig.registries = %+v, want the registryMirrors variable's", spec.AgentConfig.Registries)
	}
	md := &clusterv1.MachineDeployment{}
	s.must("reading the MachineDeployment", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.Workers), md))
	tmpl := &bootstrapv1.KThreesConfigTemplate{}
	s.must("reading the agents' KThreesConfigTemplate", env.Client.Get(s.ctx,
		client.ObjectKey{Namespace: s.ns, Name: md.Spec.Template.Spec.Bootstrap.ConfigRef.Name}, tmpl))
	if r := tmpl.Spec.Template.Spec.AgentConfig.Registries; r == nil || !reflect.DeepEqual(r.Mirrors, wantMirrors) {
		s.t.Errorf("agents' KThreesConfigTemplate agentConfig.registries = %+v, want the registryMirrors variable's", r)
	}

	machines, err := s.machines(s.ctx, client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name})
	s.must("listing Machines", err)
	for _, m := range machines {
		files := s.bootstrapFiles(m)
		if !strings.Contains(files["/etc/rancher/k3s/registries.yaml"], topologyMirrorEndpoint) {
			s.t.Errorf("Machine %s's registries.yaml lacks the mirror: %q", m.Name, files["/etc/rancher/k3s/registries.yaml"])
		}
		// The label's value is empty: its presence marks a server.
		_, server := m.Labels[clusterv1.MachineControlPlaneLabel]
		if has := strings.Contains(files["/etc/rancher/k3s/config.yaml"], "flannel-backend: wireguard-native"); has != server {
			s.t.Errorf("Machine %s (server %v): config.yaml has flannel-backend: wireguard-native = %v", m.Name, server, has)
		}
	}
}

// bootstrapFiles are the files a Machine's cloud-config writes, by path.
func (s *scenario) bootstrapFiles(m clusterv1.Machine) map[string]string {
	s.t.Helper()
	if m.Spec.Bootstrap.DataSecretName == nil {
		s.t.Fatalf("Machine %s has no bootstrap data", m.Name)
	}
	data := &corev1.Secret{}
	s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: *m.Spec.Bootstrap.DataSecretName}, data))
	var cc struct {
		WriteFiles []struct{ Path, Content, Encoding string } `json:"write_files"`
	}
	s.must("parsing cloud-config of "+m.Name, yaml.Unmarshal(data.Data["value"], &cc))
	files := map[string]string{}
	for _, f := range cc.WriteFiles {
		content := f.Content
		if f.Encoding == "b64" {
			b, err := base64.StdEncoding.DecodeString(content)
			s.must("decoding "+f.Path, err)
			content = string(b)
		}
		files[f.Path] = content
	}
	return files
}
