package stack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// TopologyOptions describe a Cluster made by Cluster API's topology controller from
// the published ClusterClass (templates/clusterclass-k3s.yaml) on the simulator.
type TopologyOptions struct {
	Namespace, Name string
	Servers, Agents int32
	Version         string
	// Variables are the Cluster's spec.topology.variables, by name, as JSON.
	Variables map[string]string
}

// Topology is what a user applies for a topology Cluster: the ClusterClass with its
// templates, and the Cluster.
type Topology struct {
	// Class is the published ClusterClass and its capk3s templates, its Docker
	// templates replaced by the simulator's.
	Class   []client.Object
	Cluster *clusterv1.Cluster
}

// AgentsClass is the worker class of the published ClusterClass.
const AgentsClass = "default-worker"

// NewTopology reads the published ClusterClass and builds a Cluster on it. The
// class's infrastructure templates (Docker's) are replaced by the simulator's;
// everything else (variables, patches, capk3s's templates) is as published, so that
// what users get is what the end-to-end tests run.
func NewTopology(o TopologyOptions) (*Topology, error) {
	docs, err := publishedClusterClass()
	if err != nil {
		return nil, err
	}
	t := &Topology{}
	simTemplate := func(kind, name string) map[string]any {
		return map[string]any{"apiVersion": simv1.GroupVersion.String(), "kind": kind, "name": name}
	}
	for _, u := range docs {
		u.SetNamespace(o.Namespace)
		switch u.GetKind() {
		case "DockerClusterTemplate", "DockerMachineTemplate":
			continue
		case "ClusterClass":
			for _, ref := range []struct {
				path []string
				obj  map[string]any
			}{
				{[]string{"spec", "infrastructure", "templateRef"}, simTemplate("SimClusterTemplate", "k3s-cluster")},
				{[]string{"spec", "controlPlane", "machineInfrastructure", "templateRef"}, simTemplate("SimMachineTemplate", "k3s-control-plane")},
			} {
				if err := unstructured.SetNestedMap(u.Object, ref.obj, ref.path...); err != nil {
					return nil, err
				}
			}
			mds, _, err := unstructured.NestedSlice(u.Object, "spec", "workers", "machineDeployments")
			if err != nil {
				return nil, fmt.Errorf("the published ClusterClass's worker classes: %w", err)
			}
			if len(mds) != 1 {
				return nil, fmt.Errorf("the published ClusterClass has %d worker classes, want 1", len(mds))
			}
			md := mds[0].(map[string]any)
			if err := unstructured.SetNestedMap(md, simTemplate("SimMachineTemplate", "k3s-default-worker"), "infrastructure", "templateRef"); err != nil {
				return nil, err
			}
			if err := unstructured.SetNestedSlice(u.Object, mds, "spec", "workers", "machineDeployments"); err != nil {
				return nil, err
			}
		}
		raw, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if bytes.Contains(raw, []byte("${")) {
			return nil, fmt.Errorf("%s %s still has a clusterctl variable", u.GetKind(), u.GetName())
		}
		t.Class = append(t.Class, u)
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: o.Namespace, Name: name} }
	t.Class = append(t.Class,
		&simv1.SimClusterTemplate{ObjectMeta: meta("k3s-cluster")},
		&simv1.SimMachineTemplate{ObjectMeta: meta("k3s-control-plane")},
		&simv1.SimMachineTemplate{ObjectMeta: meta("k3s-default-worker")},
	)
	var vars []clusterv1.ClusterVariable
	for _, name := range slices.Sorted(maps.Keys(o.Variables)) {
		value := o.Variables[name]
		vars = append(vars, clusterv1.ClusterVariable{Name: name, Value: apiextensionsv1.JSON{Raw: []byte(value)}})
	}
	t.Cluster = &clusterv1.Cluster{
		ObjectMeta: meta(o.Name),
		Spec: clusterv1.ClusterSpec{
			// k3s's defaults, as cluster-template-topology.yaml has them.
			ClusterNetwork: clusterv1.ClusterNetwork{
				Pods:     clusterv1.NetworkRanges{CIDRBlocks: []string{"10.42.0.0/16"}},
				Services: clusterv1.NetworkRanges{CIDRBlocks: []string{"10.43.0.0/16"}},
			},
			Topology: clusterv1.Topology{
				ClassRef:     clusterv1.ClusterClassRef{Name: "k3s"},
				Version:      o.Version,
				ControlPlane: clusterv1.ControlPlaneTopology{Replicas: ptr.To(o.Servers)},
				Variables:    vars,
			},
		},
	}
	if o.Agents > 0 {
		t.Cluster.Spec.Topology.Workers.MachineDeployments = []clusterv1.MachineDeploymentTopology{{
			Class: AgentsClass, Name: "md-0", Replicas: ptr.To(o.Agents),
			// The pool label the scenarios select agents by reaches the Machines.
			Metadata: clusterv1.ObjectMeta{Labels: map[string]string{PoolLabel: "agents"}},
		}}
	}
	return t, nil
}

// publishedClusterClass reads templates/clusterclass-k3s.yaml.
func publishedClusterClass() ([]*unstructured.Unstructured, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("cannot locate the stack package source")
	}
	path := filepath.Join(filepath.Dir(file), "..", "..", "templates", "clusterclass-k3s.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
