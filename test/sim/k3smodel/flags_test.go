package k3smodel

import "testing"

// Facts read in k3s's pkg/cli/cmds, pinned per minor, so that a regenerated table that
// loses one shows here.
func TestFlagsPerMinor(t *testing.T) {
	for _, m := range Minors {
		for _, c := range []struct {
			role, name string
			want       bool
		}{
			{RoleAgent, "flannel-cni-conf", true},
			{RoleAgent, "flannel-cni-conf-dir", false},
			{RoleServer, "flannel-cni-conf-dir", false},
			{RoleServer, "system-default-registry", true},
			{RoleAgent, "system-default-registry", false},
			{RoleAgent, "disable-apiserver-lb", true},
			{RoleServer, "disable-apiserver-lb", false},
			{RoleServer, "kube-apiserver-extra-mount", false},
			{RoleServer, "kube-scheduler-extra-mount", false},
			{RoleServer, "secrets-encryption-provider", true},
			{RoleServer, "etcd-s3-retention", true},
			{RoleServer, "etcd-s3-bucket-lookup-type", true},
			{RoleServer, "etcd-s3-session-token", true},
			{RoleServer, "etcd-snapshot-reconcile-interval", true},
			{RoleServer, "helm-controller-arg", false},
			{RoleServer, "write-kubeconfig-name", false},
			{RoleServer, "disable-etcd", true},
			{RoleAgent, "disable-etcd", false},
			{RoleAgent, "s", true}, // alias of server
			{RoleAgent, "lb-server-port", true},
		} {
			if got := HasFlag(m.Number, c.role, c.name); got != c.want {
				t.Errorf("v1.%d %s %s: HasFlag = %v, want %v", m.Number, c.role, c.name, got, c.want)
			}
		}
	}
	if HasFlag(33, RoleServer, "token") {
		t.Error("a minor the table was not read for has flags")
	}
}

func TestTableWasReadAtTheModelsCommits(t *testing.T) {
	for _, m := range Minors {
		if k3sFlagsRead[m.Number] != m.Commit {
			t.Errorf("v1.%d: flags read at %q, the model reads %s", m.Number, k3sFlagsRead[m.Number], m.Commit)
		}
	}
}
