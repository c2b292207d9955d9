package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/test/sim"
	"github.com/capk3s/capk3s/test/stack"
)

// e2ePasswordHash is a crypt(3)-shaped hash; the simulator checks the shape.
const e2ePasswordHash = "$6$rounds=4096$e2esalt$ZTJlaGFzaGUyZWhhc2hlMmVoYXNoZTJlaGFzaGUyZWhhc2g"

// osSetup is every OS setup field both formats carry, the password from a Secret.
func osSetup(spec *bootstrapv1.KThreesConfigSpec) {
	spec.BootCommands = []string{"modprobe br_netfilter"}
	spec.NTP = &bootstrapv1.NTP{Servers: []string{"time.example.com"}}
	spec.Users = []bootstrapv1.User{{
		Name: "ops", Groups: "wheel", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA ops"},
		PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "ops-password", Key: "hash"}},
	}}
	spec.DiskSetup = &bootstrapv1.DiskSetup{
		Partitions:  []bootstrapv1.Partition{{Device: "/dev/vdb", Layout: ptr.To(true), TableType: "gpt"}},
		Filesystems: []bootstrapv1.Filesystem{{Device: "/dev/vdb", Partition: "1", Filesystem: "ext4", Label: "k3s-data"}},
	}
	spec.Mounts = []bootstrapv1.MountPoints{{"LABEL=k3s-data", "/var/lib/rancher"}}
	// Owned by the user above and by IDs, which cloud-init's write_files cannot
	// set as it writes: the simulator fails data that leaves them to it.
	spec.Files = append(spec.Files,
		bootstrapv1.File{Path: "/home/ops/.profile", Owner: "ops:ops", Content: "export EDITOR=vi\n"},
		bootstrapv1.File{Path: "/var/lib/app/state", Owner: "1000:1000", Content: "ready\n"})
}

// TestOSSetup: servers booted from cloud-config and agents booted from Ignition,
// both with every OS setup field (users' passwords from a Secret), pass the
// simulator's checks and form the cluster; each data Secret carries the setup in
// its format.
func TestOSSetup(t *testing.T) {
	s := newScenarioWith(t, stack.ClusterOptions{Servers: 1, Agents: 1, Version: oldestVersion})
	osSetup(&s.objs.ControlPlane.Spec.KThreesConfigSpec)
	s.objs.ControlPlane.Spec.KThreesConfigSpec.Users[0].Sudo = "ALL=(ALL) NOPASSWD:ALL" // cloud-config only
	agents := &s.objs.AgentConfigTemplate.Spec.Template.Spec
	osSetup(agents)
	agents.Format = bootstrapv1.Ignition
	// Verified installs ride along: servers download a checked script and take the
	// binary from a mirror; agents are air-gapped, their image's files checked.
	s.objs.ControlPlane.Spec.KThreesConfigSpec.AgentConfig.InstallScriptURL = "https://mirror.example.com/k3s/install.sh"
	s.objs.ControlPlane.Spec.KThreesConfigSpec.AgentConfig.InstallScriptSHA256 = sim.SHA256(sim.InstallScript)
	s.objs.ControlPlane.Spec.KThreesConfigSpec.AgentConfig.ArtifactURL = "https://mirror.example.com/k3s/releases"
	agents.AgentConfig.AirGapped = true
	agents.AgentConfig.InstallScriptSHA256 = sim.SHA256(sim.InstallScript)
	agents.AgentConfig.AirGappedChecksums = []bootstrapv1.FileChecksum{
		{Path: sim.ImageK3sBinaryPath, SHA256: sim.SHA256(sim.ImageK3sBinary(s.version))},
		{Path: sim.ImageAirgapImagesPath, SHA256: sim.SHA256(sim.ImageAirgapImages(s.version))},
	}
	s.must("creating the password Secret", env.Client.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "ops-password"},
		StringData: map[string]string{"hash": e2ePasswordHash + "\n"},
	}))
	s.create()
	s.waitServers(1, s.version)
	s.waitAgents(1)

	configs := &bootstrapv1.KThreesConfigList{}
	s.must("listing KThreesConfigs", env.Client.List(s.ctx, configs, client.InNamespace(s.ns)))
	for _, c := range configs.Items {
		data := &corev1.Secret{}
		s.must("reading bootstrap data", env.Client.Get(s.ctx, client.ObjectKey{Namespace: s.ns, Name: c.Status.DataSecretName}, data))
		value := string(data.Data["value"])
		want := []string{"bootcmd:", "passwd: " + e2ePasswordHash, "sudo: ALL=(ALL) NOPASSWD:ALL", "LABEL=k3s-data", "| sha256sum -c -"}
		if string(data.Data["format"]) == string(bootstrapv1.Ignition) {
			want = []string{`"passwordHash":"` + e2ePasswordHash + `"`, "capk3s-bootcmd.service", "var-lib-rancher.mount", `"label":"k3s-data"`}
		}
		for _, w := range want {
			if !strings.Contains(value, w) {
				t.Errorf("KThreesConfig %s (%s): data lacks %q", c.Name, data.Data["format"], w)
			}
		}
	}
	if n := len(s.nodes()); n != 2 {
		t.Errorf("workload cluster has %d Nodes, want 2", n)
	}
}
