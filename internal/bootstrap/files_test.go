package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// writtenModes returns the permissions of each file the cloud-config writes.
func writtenModes(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var cc struct {
		WriteFiles []struct {
			Path        string `json:"path"`
			Permissions string `json:"permissions"`
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(data, &cc); err != nil {
		t.Fatalf("bootstrap data is not YAML: %v", err)
	}
	modes := map[string]string{}
	for _, f := range cc.WriteFiles {
		modes[f.Path] = f.Permissions
	}
	return modes
}

// A file whose content comes from a Secret is secret by the user's own account: left
// without permissions, it must not become world-readable on the machine. Permissions
// the user sets are kept, and inline files keep the usual default.
func TestFilesFromSecretsDefaultToOwnerOnly(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	createSecret(t, ns, "app", map[string]string{"password": "hunter2\n", "config": "a: b\n"})
	fromApp := func(key string) *bootstrapv1.FileSource {
		return &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "app", Key: key}}
	}
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{
		{Path: "/etc/app/password", ContentFrom: fromApp("password")},
		{Path: "/etc/app/config.yaml", ContentFrom: fromApp("config"), Permissions: "0640"},
		{Path: "/etc/motd", Content: "welcome\n"},
	}})

	if err := pass(env.Client, config); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), s); err != nil {
		t.Fatalf("no bootstrap data: %v", err)
	}
	modes := writtenModes(t, s.Data["value"])
	for path, want := range map[string]string{
		"/etc/app/password":    "0600",
		"/etc/app/config.yaml": "0640",
		"/etc/motd":            "0644",
	} {
		if modes[path] != want {
			t.Errorf("%s written with permissions %q, want %q", path, modes[path], want)
		}
	}
}

// Bootstrap data that cannot fit in a Secret is reported on the config, and the
// controller does not try to create a Secret the apiserver must refuse. Here the
// excess comes from Secrets, which admission cannot see.
func TestBootstrapDataTooLargeIsReported(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	// Each Secret fits the 1 MiB limit; the two files together do not.
	blob := strings.Repeat("0123456789abcdef\n", 600<<10/17)
	createSecret(t, ns, "blob-a", map[string]string{"data": blob})
	createSecret(t, ns, "blob-b", map[string]string{"data": blob})
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{
		{Path: "/opt/a", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "blob-a", Key: "data"}}},
		{Path: "/opt/b", ContentFrom: &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{Name: "blob-b", Key: "data"}}},
	}})

	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	dataSecretCreates := 0
	c := interceptor.NewClient(inner, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok && obj.GetName() == config.Name {
				dataSecretCreates++
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	// An error is returned as well, so that shrinking the Secrets (which are not
	// watched) is picked up by a retry.
	if err := pass(c, config); err == nil {
		t.Error("Reconcile returned no error; want one, for a retry once the Secrets shrink")
	}
	if dataSecretCreates != 0 {
		t.Errorf("the controller tried %d times to create a data Secret that cannot fit", dataSecretCreates)
	}
	got := getConfig(t, config)
	cond := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != bootstrapv1.DataSecretTooLargeReason {
		t.Fatalf("DataSecretAvailable = %+v, want False/%s", cond, bootstrapv1.DataSecretTooLargeReason)
	}
	for _, want := range []string{"1048576", "spec.files[0] (/opt/a)", "spec.files[1] (/opt/b)"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q does not mention %q", cond.Message, want)
		}
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a data Secret exists (Get = %v)", err)
	}
}

// Data too large because of the config alone (possible when admission is bypassed)
// is reported the same way, without an error: only a change to the config can fix
// it, and that change wakes the config.
func TestBootstrapDataTooLargeFromInlineContent(t *testing.T) {
	ns := env.NewNamespace(t)
	cluster := newInitializedCluster(t, ns)
	// This package's apiserver runs no webhooks, as when they are bypassed.
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{Files: []bootstrapv1.File{
		{Path: "/opt/inline", Content: strings.Repeat("0123456789abcdef\n", 1100<<10/17)},
	}})

	if err := pass(env.Client, config); err != nil {
		t.Errorf("Reconcile = %v, want no error: nothing but an edit of the config can fix it", err)
	}
	cond := conditions.Get(getConfig(t, config), bootstrapv1.DataSecretAvailableCondition)
	if cond == nil || cond.Reason != bootstrapv1.DataSecretTooLargeReason || !strings.Contains(cond.Message, "spec.files[0] (/opt/inline)") {
		t.Fatalf("DataSecretAvailable = %+v, want reason %s naming spec.files[0] (/opt/inline)", cond, bootstrapv1.DataSecretTooLargeReason)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a data Secret exists (Get = %v)", err)
	}
}
