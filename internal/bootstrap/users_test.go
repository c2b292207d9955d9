package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

const userPasswordHash = "$6$rounds=4096$usersalt$u2C0hashhashhashhashhashhashhashhashhashhashhashhashhashhashhash/"

func passwdSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{Users: []bootstrapv1.User{
		{Name: "ops", PasswdFrom: &bootstrapv1.PasswdSource{Secret: bootstrapv1.SecretKeyReference{Name: "ops-password", Key: "hash"}}},
	}}
}

// A server whose user takes a password from a Secret waits, with a reason and a
// message naming the field, while the Secret is missing; no data Secret exists
// then. Creating the Secret alone wakes it, and the hash (without the trailing
// newline of a Secret made from a file) becomes the user's passwd, unlocked. The
// hash is in no log line and no condition.
func TestUserPasswordFromSecret(t *testing.T) {
	logs := startManagerWithLogs(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	config := newMachineWithConfig(t, cluster, "server-0", true, passwdSpec())

	waitForReason(t, config, bootstrapv1.WaitingForUserPasswordSecretReason)
	if msg := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition).Message; msg != "Waiting for Secret ops-password, named by spec.users[0].passwdFrom (user ops)" {
		t.Errorf("waiting message = %q", msg)
	}
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), &corev1.Secret{})
	if err == nil {
		t.Fatal("a data Secret exists while the password Secret is missing")
	}

	// Marked as the cluster's, so that it is labelled for clusterctl move.
	createClusterSecret(t, cluster, "ops-password", map[string]string{"other": "x"})
	if err := waitFor(func(context.Context) (bool, error) {
		c := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition)
		return c != nil && strings.Contains(c.Message, `Waiting for key "hash" in Secret ops-password`), nil
	}); err != nil {
		t.Fatalf("not woken by the password Secret, or no message about its key: %v", err)
	}

	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "ops-password"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["hash"] = []byte(userPasswordHash + "\n")
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	data := waitForDataSecret(t, config).Data["value"]
	var cc struct {
		Users []struct {
			Name       string `json:"name"`
			Passwd     string `json:"passwd"`
			LockPasswd bool   `json:"lock_passwd"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	if len(cc.Users) != 1 || cc.Users[0].Name != "ops" || cc.Users[0].Passwd != userPasswordHash || cc.Users[0].LockPasswd {
		t.Errorf("users = %+v, want ops with the Secret's hash, unlocked", cc.Users)
	}
	// The user's Secret goes along when the cluster is moved.
	if _, ok := getSecret(t, ns, "ops-password").Labels[clusterctlv1.ClusterctlMoveLabel]; !ok {
		t.Errorf("password Secret has no %s label", clusterctlv1.ClusterctlMoveLabel)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "usersalt") {
			t.Errorf("a log line carries the password hash: %.300s", line)
		}
	}
	for _, c := range getConfig(t, config).Status.Conditions {
		if strings.Contains(c.Message, "usersalt") {
			t.Errorf("condition %s carries the password hash", c.Type)
		}
	}
}

// A clear-text password in the Secret is refused: the config says what to fix,
// without the value, and gets no data.
func TestUserPasswordMustBeAHash(t *testing.T) {
	startManager(t)
	ns := env.NewNamespace(t)
	cluster := newReadyCluster(t, ns)
	createToken(t, cluster)
	createSecret(t, ns, "ops-password", map[string]string{"hash": "hunter2"})
	config := newMachineWithConfig(t, cluster, "server-0", true, passwdSpec())

	waitForReason(t, config, bootstrapv1.DataSecretGenerationFailedReason)
	msg := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition).Message
	if !strings.Contains(msg, "spec.users[0].passwdFrom") || !strings.Contains(msg, "not a crypt(3) password hash") || strings.Contains(msg, "hunter2") {
		t.Errorf("message = %q", msg)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), &corev1.Secret{}); err == nil {
		t.Error("a data Secret was created from a clear-text password")
	}
}
