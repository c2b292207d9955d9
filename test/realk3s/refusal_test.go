package realk3s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/test/realk3s/host"
)

// The k3s setting every server of an embedded-etcd cluster must share that the
// refusal steps change, and the value they change it to.
const (
	forcedCIDR      = "10.52.0.0/16"
	k3sCriticalLine = "critical configuration value mismatch between servers"
	kcpValidation   = "validation.kthreescontrolplane.controlplane.cluster.x-k8s.io"
	cpValidatingCfg = "controlplane-validating-webhook-configuration"
)

// criticalSettingRefused: a change of cluster-cidr on a running embedded-etcd
// cluster is refused at admission; real k3s refuses a server that joins with
// another cluster-cidr (what capk3s's hold and the simulator's refusal rest on); and
// the change forced past the webhook makes capk3s hold every server, with the reason.
func (s *scenario) criticalSettingRefused() {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp))
	before := kcp.DeepCopy()
	kcp.Spec.KThreesConfigSpec.ServerConfig.ClusterCidr = forcedCIDR
	if err := env.Client.Patch(s.ctx, kcp, client.MergeFrom(before)); err == nil || !strings.Contains(err.Error(), "clusterCidr") {
		s.t.Errorf("changing cluster-cidr of a running cluster: %v, want refused at admission naming clusterCidr", err)
	} else {
		s.t.Logf("admission refused the cluster-cidr change: %v", err)
	}
	s.joinWithAnotherCIDRRefusedByK3s()
	s.forcedChangeHeld()
}

// joinWithAnotherCIDRRefusedByK3s boots a machine from a joined server's bootstrap
// data, whose image adds a k3s configuration drop-in with another cluster-cidr, and
// waits for real k3s to refuse it; etcd keeps its members.
func (s *scenario) joinWithAnotherCIDRRefusedByK3s() {
	s.t.Helper()
	var data []byte
	for _, m := range s.machines(true) {
		sec := &corev1.Secret{}
		s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: *m.Spec.Bootstrap.DataSecretName}, sec))
		if strings.Contains(string(sec.Data["value"]), "server: https://") {
			data = sec.Data["value"]
			break
		}
	}
	if data == nil {
		s.t.Fatal("no joined server's bootstrap data")
	}
	const name = "forced-cidr"
	m, err := layer.Start(host.MachineSpec{Name: name, InstanceID: name, UserData: data, K3sBinary: infra.Binaries[k3sVersion],
		Files: map[string][]byte{"/etc/rancher/k3s/config.yaml.d/99-forced.yaml": []byte("cluster-cidr: " + forcedCIDR + "\n")}})
	s.must("starting the forced machine", err)
	defer func() { s.must("stopping the forced machine", layer.Stop(name)) }()
	eventually(s.t, 5*time.Minute, "real k3s to refuse the join", func(context.Context) error {
		b, err := os.ReadFile(filepath.Join(m.Dir(), "upper", "var", "log", "minisystemd", "k3s.log"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), k3sCriticalLine) {
			return fmt.Errorf("k3s has not said %q", k3sCriticalLine)
		}
		return nil
	})
	members, err := etcdMembers(s.ctx, s.machines(true)[0].Name)
	s.must("etcd members", err)
	if hasMemberOf(members, name) || len(members) != len(s.machines(true)) {
		s.t.Errorf("etcd members after the refused join: %v", members)
	}
	s.t.Logf("real k3s refused a server joining with cluster-cidr %s: %q", forcedCIDR, k3sCriticalLine)
}

// forcedChangeHeld takes the control plane's validation webhook out, changes
// cluster-cidr, and checks that capk3s holds the servers (RollingOut names the
// critical setting, no server is added or removed for a minute); it puts the value
// and the webhook back.
func (s *scenario) forcedChangeHeld() {
	s.t.Helper()
	restore := s.withoutWebhook(kcpValidation)
	defer restore()
	servers := s.machineUIDs(true)
	s.patchClusterCIDR(forcedCIDR)
	eventually(s.t, 2*time.Minute, "capk3s to hold the servers for the critical change", func(ctx context.Context) error {
		kcp := &controlplanev1.KThreesControlPlane{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp); err != nil {
			return err
		}
		c := conditions.Get(kcp, controlplanev1.RollingOutCondition)
		if c == nil || c.Reason != controlplanev1.CriticalSettingChangedReason {
			return fmt.Errorf("RollingOut: %+v", c)
		}
		return nil
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if now := s.machineUIDs(true); !now.Equal(servers) {
			s.t.Fatalf("servers changed during a held critical change: %v, were %v", now.UnsortedList(), servers.UnsortedList())
		}
		time.Sleep(3 * time.Second)
	}
	s.patchClusterCIDR("")
	s.t.Log("a cluster-cidr change forced past the webhook held every server")
}

func (s *scenario) patchClusterCIDR(cidr string) {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp))
	before := kcp.DeepCopy()
	kcp.Spec.KThreesConfigSpec.ServerConfig.ClusterCidr = cidr
	s.must("patching cluster-cidr", env.Client.Patch(s.ctx, kcp, client.MergeFrom(before)))
}

// withoutWebhook removes one webhook from the control plane's validating
// configuration, as an admin who bypasses it would, and returns what puts it back.
func (s *scenario) withoutWebhook(name string) func() {
	s.t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	s.must("reading the validating webhooks", env.Client.Get(s.ctx, client.ObjectKey{Name: cpValidatingCfg}, cfg))
	saved := cfg.DeepCopy()
	var kept []admissionregistrationv1.ValidatingWebhook
	for _, w := range cfg.Webhooks {
		if w.Name != name {
			kept = append(kept, w)
		}
	}
	if len(kept) == len(cfg.Webhooks) {
		s.t.Fatalf("no webhook %s in %s", name, cpValidatingCfg)
	}
	cfg.Webhooks = kept
	s.must("taking the webhook out", env.Client.Update(s.ctx, cfg))
	// The apiserver reloads webhook configurations asynchronously.
	time.Sleep(3 * time.Second)
	return func() {
		now := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		s.must("reading the validating webhooks", env.Client.Get(s.ctx, client.ObjectKey{Name: cpValidatingCfg}, now))
		now.Webhooks = saved.Webhooks
		s.must("putting the webhook back", env.Client.Update(s.ctx, now))
		time.Sleep(3 * time.Second)
	}
}
