package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
	"github.com/capk3s/capk3s/test/stack"
)

// TestClusterDeletion: deleting the Cluster removes every object of it, the garbage
// collector included, and stops its workload API.
func TestClusterDeletion(t *testing.T) {
	s := newScenarioWith(t, stack.ClusterOptions{Servers: 3, Agents: 2, Version: oldestVersion})
	s.create()
	s.waitServers(3, s.version)
	s.waitAgents(2)
	s.clusterAvailable()
	endpoint := fmt.Sprintf("127.0.0.1:%d", s.endpointPort())

	s.deleting = true
	s.must("deleting the Cluster", env.Client.Delete(s.ctx, s.objs.Cluster))
	s.eventuallyGone("the Cluster", func(ctx context.Context) error {
		return env.Client.Get(ctx, s.key, &clusterv1.Cluster{})
	})
	s.eventually("no object of the cluster left", func(ctx context.Context) (bool, string, error) {
		left, err := s.leftovers(ctx)
		return len(left) == 0, strings.Join(left, ", "), err
	})
	if conn, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		_ = conn.Close()
		t.Errorf("the workload API still listens on %s", endpoint)
	}
}

// endpointPort is the SimCluster's endpoint port.
func (s *scenario) endpointPort() int32 {
	s.t.Helper()
	sc := &simv1.SimCluster{}
	s.must("reading SimCluster", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.objs.SimCluster), sc))
	return sc.Spec.ControlPlaneEndpoint.Port
}

func (s *scenario) eventuallyGone(what string, get func(ctx context.Context) error) {
	s.t.Helper()
	s.eventually(what+" to be gone", func(ctx context.Context) (bool, string, error) {
		err := get(ctx)
		return apierrors.IsNotFound(err), "still there", client.IgnoreNotFound(err)
	})
}

// leftovers lists every object in the scenario's namespace of the kinds a cluster
// is made of, as kind/name.
func (s *scenario) leftovers(ctx context.Context) ([]string, error) {
	var left []string
	for _, list := range []client.ObjectList{
		&clusterv1.ClusterList{}, &clusterv1.MachineDeploymentList{}, &clusterv1.MachineSetList{}, &clusterv1.MachineList{},
		&controlplanev1.KThreesControlPlaneList{}, &bootstrapv1.KThreesConfigList{}, &bootstrapv1.KThreesConfigTemplateList{},
		&simv1.SimClusterList{}, &simv1.SimMachineList{}, &simv1.SimMachineTemplateList{},
		&corev1.SecretList{}, &corev1.ConfigMapList{},
	} {
		if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			o := item.(client.Object)
			left = append(left, fmt.Sprintf("%T %s", list, o.GetName()))
		}
	}
	return left, nil
}
