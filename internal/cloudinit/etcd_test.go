package cloudinit

import (
	"strings"
	"testing"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// TestEtcdS3CredentialsOnlyInTheEnvironmentFile: the S3 secrets reach the machine
// in the 0600 environment file the k3s unit reads, and nowhere else.
func TestEtcdS3CredentialsOnlyInTheEnvironmentFile(t *testing.T) {
	for _, tc := range goldenCases() {
		if tc.in.EtcdS3 == nil {
			continue
		}
		p := parse(t, render(t, tc.in))
		for _, f := range p.WriteFiles {
			holds := strings.Contains(f.Content, testS3SecretKey) || strings.Contains(f.Content, testS3AccessKey)
			if holds != (f.Path == k3sEnvPath) {
				t.Errorf("%s: %s holds the S3 credentials: %v", tc.name, f.Path, holds)
			}
			if f.Path == k3sEnvPath && f.Permissions != "0600" {
				t.Errorf("%s: %s permissions %s, want 0600", tc.name, f.Path, f.Permissions)
			}
		}
		for _, c := range p.RunCmd {
			if strings.Contains(c, testS3SecretKey) {
				t.Errorf("%s: a command holds the S3 secret key", tc.name)
			}
		}
	}
}

func TestEtcdOnAgentsAndDatastores(t *testing.T) {
	agent := Input{
		Role: Agent, Version: "v1.35.4+k3s1", ServerURL: testServerURL, Token: testToken,
		Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: testEtcd()}},
	}
	p := parse(t, render(t, agent))
	cfg := p.k3sConfig(t)
	for k := range cfg {
		if strings.HasPrefix(k, "etcd-") || strings.HasPrefix(k, "cluster-reset") {
			t.Errorf("agent config has %s", k)
		}
	}
	for _, c := range p.RunCmd {
		if strings.Contains(c, "cluster-reset") || strings.Contains(c, "INSTALL_K3S_SKIP_START") {
			t.Errorf("agent restores: %s", c)
		}
	}
	agent.EtcdS3 = testEtcdS3()
	if _, err := Render(agent); err == nil || !strings.Contains(err.Error(), "servers only") {
		t.Errorf("agent with S3 credentials: %v", err)
	}

	ds := Input{
		Role: ServerInit, Version: "v1.35.4+k3s1", Token: testToken, Datastore: testDatastore(), EtcdS3: testEtcdS3(),
		Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{
			Etcd:      testEtcd(),
			Datastore: &bootstrapv1.Datastore{EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"}},
		}},
	}
	if _, err := Render(ds); err == nil || !strings.Contains(err.Error(), "embedded etcd") {
		t.Errorf("etcd on a datastore: %v", err)
	}
}

func TestEtcdS3InputErrorsQuoteNoSecret(t *testing.T) {
	in := Input{
		Role: ServerInit, Version: "v1.35.4+k3s1", Token: testToken,
		Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: testEtcd()}},
	}
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "not resolved") {
		t.Errorf("S3 Secrets named but not resolved: %v", err)
	}
	bad := "se'cret\nvalue"
	in.EtcdS3 = &EtcdS3{AccessKeyID: "id", SecretAccessKey: bad}
	_, err := Render(in)
	if err == nil || strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "se'cret") {
		t.Errorf("bad secret: %v", err)
	}
	in.EtcdS3 = &EtcdS3{AccessKeyID: "id"}
	if _, err := Render(in); err == nil {
		t.Error("an access key without a secret key renders")
	}
}

// TestRestoreCommandFollowsWhereK3sReadsTheSnapshot: with etcd-s3 on, k3s's
// cluster-reset reads cluster-reset-restore-path as a key in the bucket's folder
// (k3s pkg/etcd/etcd.go, Reset; pkg/etcd/s3/s3.go, Download), so a local snapshot
// file is restored with S3 turned off on the command line, which wins over
// config.yaml (pkg/configfilearg/parser.go); a snapshot name is left to S3.
func TestRestoreCommandFollowsWhereK3sReadsTheSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name, restoreFrom string
		s3                bool
		want              string
	}{
		{"a snapshot in S3", "etcd-snapshot-cp-0-1", true, "k3s server --cluster-reset --cluster-reset-restore-path='etcd-snapshot-cp-0-1')"},
		{"a local file beside S3", "/var/lib/etcd-snapshots/snap-1", true, "k3s server --cluster-reset --etcd-s3=false --cluster-reset-restore-path='/var/lib/etcd-snapshots/snap-1')"},
		{"a local file without S3", "/var/lib/etcd-snapshots/snap-1", false, "k3s server --cluster-reset --cluster-reset-restore-path='/var/lib/etcd-snapshots/snap-1')"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Role: ServerInit, Version: "v1.36.3+k3s1", Token: testToken, EtcdS3: testEtcdS3(),
				Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: testEtcd()}}}
			in.Spec.ServerConfig.Etcd.RestoreFrom = tc.restoreFrom
			if !tc.s3 {
				in.Spec.ServerConfig.Etcd.Snapshots.S3, in.EtcdS3 = nil, nil
			}
			p := parse(t, render(t, in))
			restores := 0
			for _, c := range p.RunCmd {
				if strings.Contains(c, "--cluster-reset") {
					restores++
					if !strings.Contains(c, tc.want) {
						t.Errorf("restore command %q, want it to run %q", c, tc.want)
					}
				}
			}
			if restores != 1 {
				t.Errorf("%d restore commands, want 1", restores)
			}
		})
	}
	in := Input{Role: ServerInit, Version: "v1.36.3+k3s1", Token: testToken, EtcdS3: testEtcdS3(),
		Spec: bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: testEtcd()}}}
	in.Spec.ServerConfig.Etcd.RestoreFrom = "../elsewhere/snap"
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "snapshot name in the bucket's folder") {
		t.Errorf("a snapshot name leaving the folder renders: %v", err)
	}
}

func render(t *testing.T, in Input) []byte {
	t.Helper()
	out, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return out
}
