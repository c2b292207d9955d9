package realk3s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// TestRollingUpgradeWithATakenOverToken: a token Secret left by older software
// (controlled by a KThreesConfig, also owned by something else) is taken over by the
// control plane, and real k3s runs with its passphrase. Three servers and an agent on
// the first release are upgraded to the second: the control plane's own snapshot
// lands in S3 before any server changes, servers are replaced one at a time with etcd
// keeping quorum, the agents roll out, and the token is the same Secret throughout.
func TestRollingUpgradeWithATakenOverToken(t *testing.T) {
	startStack(t)
	if upgradeVersion == "" {
		t.Skipf("%s is not set: the upgrade needs a second k3s release", upgradeBinEnv)
	}
	s := &scenario{t: t, ctx: context.Background(), ns: env.NewNamespace(t)}
	s.c = newCluster(clusterOptions{namespace: s.ns, name: "upgrade", servers: 3, agents: 1, version: k3sVersion})
	s.key = client.ObjectKeyFromObject(s.c.cluster)
	if s3 != nil {
		s.withSnapshotsToS3()
	}
	const passphrase = "0123456789abcdef0123456789abcdef"
	foreign := s.legacyToken(passphrase)
	start := time.Now()
	for _, o := range s.c.objects() {
		s.must(fmt.Sprintf("creating %T %s", o, o.GetName()), env.Client.Create(s.ctx, o))
	}
	clusterAvailable(t, s.key, 20*time.Minute)
	s.wc, s.cs = workloadClients(t, s.key)
	s.serversSettled(3, 15*time.Minute)
	t.Logf("3 servers + 1 agent on %s Ready in %s", k3sVersion, time.Since(start).Round(time.Second))
	s.checkTakenOver(passphrase, foreign)
	s.k3sRunsWithPassphrase(passphrase)

	writes := s.keepWriting()
	start = time.Now()
	s.upgradeTo(upgradeVersion)
	writes.stop(t)
	t.Logf("servers and agents upgraded %s -> %s in %s", k3sVersion, upgradeVersion, time.Since(start).Round(time.Second))
	s.checkTakenOver(passphrase, foreign)
	s.k3sRunsWithPassphrase(passphrase)
	runWorkload(t, s.wc, s.cs)
}

// legacyToken writes the token Secret as older software did: controlled by a
// KThreesConfig, owned by another object too. It returns the other owner's UID.
func (s *scenario) legacyToken(passphrase string) string {
	s.t.Helper()
	legacy := &bootstrapv1.KThreesConfig{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "legacy-server-config"}}
	s.must("creating the old KThreesConfig", env.Client.Create(s.ctx, legacy))
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "backup-tool"}}
	s.must("creating the foreign owner", env.Client.Create(s.ctx, foreign))
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.key.Name + "-token",
			Labels: map[string]string{clusterv1.ClusterNameLabel: s.key.Name},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: bootstrapv1.GroupVersion.String(), Kind: "KThreesConfig", Name: legacy.Name, UID: legacy.UID, Controller: ptr.To(true)},
				{APIVersion: "v1", Kind: "ConfigMap", Name: foreign.Name, UID: foreign.UID},
			}},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": []byte(passphrase)},
	}
	s.must("creating the old token Secret", env.Client.Create(s.ctx, sec))
	return string(foreign.UID)
}

// checkTakenOver checks the token Secret: its value, the control plane as its
// controller, no KThreesConfig among its owners, the foreign owner kept.
func (s *scenario) checkTakenOver(passphrase, foreignUID string) {
	s.t.Helper()
	sec := s.tokenSecret()
	if string(sec.Data["value"]) != passphrase {
		s.t.Error("the token's value is not the one the old software wrote")
	}
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp))
	if c := metav1.GetControllerOf(sec); c == nil || c.UID != kcp.UID {
		s.t.Errorf("token controller is %v, want the KThreesControlPlane %s", c, kcp.UID)
	}
	kept := false
	for _, ref := range sec.OwnerReferences {
		if ref.Kind == "KThreesConfig" {
			s.t.Errorf("the token is still owned by KThreesConfig %s", ref.Name)
		}
		kept = kept || string(ref.UID) == foreignUID
	}
	if !kept {
		s.t.Errorf("the foreign owner was dropped: %v", sec.OwnerReferences)
	}
}

// k3sRunsWithPassphrase reads k3s's own token file on every server: the secure
// token k3s built (K10<CA hash>::server:<passphrase>) carries the Secret's value.
func (s *scenario) k3sRunsWithPassphrase(passphrase string) {
	s.t.Helper()
	for _, m := range s.machines(true) {
		hm, ok := layer.Machine(m.Name)
		if !ok {
			s.t.Errorf("server %s has no running machine", m.Name)
			continue
		}
		b, err := os.ReadFile(filepath.Join(hm.Dir(), "rancher", "k3s", "server", "token"))
		if err != nil {
			s.t.Errorf("server %s: %v", m.Name, err)
			continue
		}
		if tok := strings.TrimSpace(string(b)); !strings.HasPrefix(tok, "K10") || !strings.HasSuffix(tok, "::server:"+passphrase) {
			s.t.Errorf("server %s runs with a token that does not carry the Secret's passphrase", m.Name)
		}
	}
}

// upgradeTo moves the control plane and the agents to version and waits until every
// Machine and Node runs it. No server may change before the control plane's own
// snapshot succeeded, when the cluster has S3.
func (s *scenario) upgradeTo(version string) {
	s.t.Helper()
	kcp := &controlplanev1.KThreesControlPlane{}
	s.must("reading the control plane", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.controlPlane), kcp))
	before := kcp.DeepCopy()
	kcp.Spec.Version = version
	s.must("upgrading the control plane", env.Client.Patch(s.ctx, kcp, client.MergeFrom(before)))
	if s3 != nil {
		s.rolloutSnapshotFirst(version)
	}
	md := &clusterv1.MachineDeployment{}
	s.must("reading the MachineDeployment", env.Client.Get(s.ctx, client.ObjectKeyFromObject(s.c.workers), md))
	mdBefore := md.DeepCopy()
	md.Spec.Template.Spec.Version = version
	s.must("upgrading the agents", env.Client.Patch(s.ctx, md, client.MergeFrom(mdBefore)))
	eventually(s.t, 30*time.Minute, "every Machine and Node on "+version, func(ctx context.Context) error {
		list := &clusterv1.MachineList{}
		if err := env.Client.List(ctx, list, client.InNamespace(s.ns), client.MatchingLabels{clusterv1.ClusterNameLabel: s.key.Name}); err != nil {
			return err
		}
		if len(list.Items) != 4 {
			return fmt.Errorf("%d Machines", len(list.Items))
		}
		for _, m := range list.Items {
			if m.Spec.Version != version || !m.Status.NodeRef.IsDefined() {
				return fmt.Errorf("Machine %s: %s, node %q", m.Name, m.Spec.Version, m.Status.NodeRef.Name)
			}
		}
		nodes := &corev1.NodeList{}
		if err := s.wc.List(ctx, nodes); err != nil {
			return err
		}
		for _, n := range nodes.Items {
			if n.Status.NodeInfo.KubeletVersion != version {
				return fmt.Errorf("Node %s runs %s", n.Name, n.Status.NodeInfo.KubeletVersion)
			}
		}
		if len(nodes.Items) != 4 {
			return fmt.Errorf("%d Nodes", len(nodes.Items))
		}
		return nil
	})
	s.serversSettled(3, 10*time.Minute)
	clusterAvailable(s.t, s.key, 10*time.Minute)
}

// rolloutSnapshotFirst follows the rollout until its own snapshot
// (<control plane>-before-rollout-...) succeeded and is in the bucket: no server
// Machine may move to version before.
func (s *scenario) rolloutSnapshotFirst(version string) {
	s.t.Helper()
	prefix := s.c.controlPlane.Name + "-before-rollout-"
	eventually(s.t, 10*time.Minute, "the rollout's own snapshot before any server changes", func(ctx context.Context) error {
		list := &controlplanev1.KThreesEtcdSnapshotList{}
		if err := env.Client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
			return err
		}
		var phases []string
		for _, snap := range list.Items {
			if !strings.HasPrefix(snap.Name, prefix) {
				continue
			}
			phases = append(phases, snap.Name+": "+string(snap.Status.Phase))
			if snap.Status.Phase == controlplanev1.EtcdSnapshotSucceeded && snap.Status.Snapshot != nil {
				objs, err := s3.objects(ctx, s.ns)
				if err != nil {
					return err
				}
				if !slices.Contains(objs, s.ns+"/"+snap.Status.Snapshot.Name) {
					s.t.Errorf("the rollout's snapshot %s is not in the bucket: %v", snap.Status.Snapshot.Name, objs)
				}
				return nil
			}
		}
		for _, m := range s.machines(true) {
			if m.Spec.Version == version {
				s.t.Fatalf("server %s moved to %s before the rollout's snapshot succeeded (%v)", m.Name, version, phases)
			}
		}
		return fmt.Errorf("snapshots %v", phases)
	})
}
