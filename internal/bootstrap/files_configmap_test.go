package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

func fromConfigMap(name, key string) *bootstrapv1.FileSource {
	return &bootstrapv1.FileSource{ConfigMap: bootstrapv1.ConfigMapFileSource{Name: name, Key: key}}
}

// A file's content comes from a ConfigMap's data or binaryData, byte for byte, and
// is written like inline content (0644): a ConfigMap is not secret.
func TestFilesFromConfigMaps(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	binary := []byte{0xff, 0x00, 0xfe}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Data: map[string]string{"app.ini": "[main]\nlevel = 3\n"}, BinaryData: map[string][]byte{"blob": binary}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{
		{Path: "/etc/app/app.ini", ContentFrom: fromConfigMap("app", "app.ini")},
		{Path: "/etc/app/blob", ContentFrom: fromConfigMap("app", "blob"), Permissions: "0600"},
	}})
	if err := pass(env.Client, config); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), s); err != nil {
		t.Fatalf("no bootstrap data: %v", err)
	}
	var cc struct {
		WriteFiles []struct {
			Path, Permissions, Encoding, Content string
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(s.Data["value"], &cc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range cc.WriteFiles {
		got[f.Path] = f.Permissions + " " + f.Encoding + " " + f.Content
	}
	for path, want := range map[string]string{
		"/etc/app/app.ini": "0644  [main]\nlevel = 3\n",
		"/etc/app/blob":    "0600 b64 /wD+",
	} {
		if got[path] != want {
			t.Errorf("%s = %q, want %q", path, got[path], want)
		}
	}
}

// A ConfigMap without the key is the user's to fix, and the config says which.
func TestFileFromConfigMapWithoutTheKey(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Data: map[string]string{"other": "x"}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{
		{Path: "/etc/app/app.ini", ContentFrom: fromConfigMap("app", "app.ini")},
	}})
	if err := pass(env.Client, config); err == nil {
		t.Error("Reconcile returned no error; want one, for a retry once the ConfigMap has the key")
	}
	cond := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition)
	want := `spec.files[0] (/etc/app/app.ini): configmap app has no key "app.ini" in data or binaryData`
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, want) {
		t.Errorf("DataSecretAvailable = %+v, want False with %q", cond, want)
	}
}
