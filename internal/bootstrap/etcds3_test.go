package bootstrap

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const s3SecretKey = "s3-secret-access-key-value"

func etcdS3Spec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{ServerConfig: bootstrapv1.KThreesServerConfig{Etcd: &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{Schedule: "0 */6 * * *", S3: &bootstrapv1.EtcdSnapshotsS3{
			Bucket: "backups", Endpoint: "minio.example.com:9000",
			EndpointCASecret:  &bootstrapv1.SecretKeyReference{Name: "s3-ca", Key: "ca.crt"},
			CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3-creds"},
		}},
	}}}
}

// A server with snapshots to S3 waits for the credentials Secret and each of its
// documented keys, then for the CA, is woken by each (they carry no cluster label),
// and gets the credentials in the 0600 environment file only: not in config.yaml,
// not in a log line, not in a condition. Agents get none of it.
func TestEtcdS3CredentialsFromTheSecret(t *testing.T) {
	logs := startManagerWithLogs(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	first := newMachineWithConfig(t, cluster, "server-0", true, etcdS3Spec())

	waitForReason(t, first, bootstrapv1.WaitingForEtcdS3SecretReason)
	if msg := conditions.Get(getConfig(t, first), bootstrapv1.DataSecretAvailableCondition).Message; msg != "Waiting for Secret s3-creds, named by spec.serverConfig.etcd.snapshots.s3.credentialsSecret" {
		t.Errorf("waiting message = %q", msg)
	}
	createSecret(t, ns, "s3-creds", map[string]string{bootstrapv1.EtcdS3AccessKeyIDKey: "AKIAEXAMPLE"})
	waitMessage := func(want string) {
		t.Helper()
		if err := waitFor(func(context.Context) (bool, error) {
			c := conditions.Get(getConfig(t, first), bootstrapv1.DataSecretAvailableCondition)
			return c != nil && c.Message == want, nil
		}); err != nil {
			t.Fatalf("waiting for %q: %v; condition %+v", want, err, conditions.Get(getConfig(t, first), bootstrapv1.DataSecretAvailableCondition))
		}
	}
	waitMessage(`Waiting for key "etcd-s3-secret-key" in Secret s3-creds, named by spec.serverConfig.etcd.snapshots.s3.credentialsSecret`)
	s := getSecret(t, ns, "s3-creds")
	s.StringData = map[string]string{bootstrapv1.EtcdS3SecretAccessKeyKey: s3SecretKey}
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	waitMessage("Waiting for Secret s3-ca, named by spec.serverConfig.etcd.snapshots.s3.endpointCASecret")
	createSecret(t, ns, "s3-ca", map[string]string{"ca.crt": "S3 CA PEM\n"})
	data := waitForDataSecret(t, first).Data["value"]

	cfg := k3sConfig(t, data)
	if cfg["etcd-s3"] != true || cfg["etcd-s3-bucket"] != "backups" || cfg["etcd-s3-endpoint-ca"] != "/var/lib/rancher/k3s/server/tls/etcd-s3/ca.crt" {
		t.Errorf("config.yaml = %v", cfg)
	}
	files := writeFiles(t, data)
	envFile := files["/etc/default/k3s"]
	if envFile.Permissions != "0600" || envFile.Content != "AWS_ACCESS_KEY_ID='AKIAEXAMPLE'\nAWS_SECRET_ACCESS_KEY='"+s3SecretKey+"'\n" {
		t.Errorf("environment file = %+v", envFile)
	}
	if f := files["/var/lib/rancher/k3s/server/tls/etcd-s3/ca.crt"]; f.Permissions != "0600" || f.Content != "S3 CA PEM\n" {
		t.Errorf("S3 CA file = %+v", f)
	}
	for path, f := range files {
		if path != "/etc/default/k3s" && strings.Contains(f.Content, s3SecretKey) {
			t.Errorf("%s holds the S3 secret key", path)
		}
	}

	markInitialized(t, cluster)
	agent := newMachineWithConfig(t, cluster, "agent-0", false, etcdS3Spec())
	if agentData := waitForDataSecret(t, agent).Data["value"]; strings.Contains(string(agentData), s3SecretKey) || strings.Contains(string(agentData), "etcd-s3") {
		t.Errorf("agent data carries the S3 settings:\n%s", agentData)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, s3SecretKey) {
			t.Errorf("a log line carries the S3 secret key: %.300s", line)
		}
	}
	for _, c := range getConfig(t, first).Status.Conditions {
		if strings.Contains(c.Message, s3SecretKey) {
			t.Errorf("condition %s carries the S3 secret key", c.Type)
		}
	}
}
