package release

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capk3s/capk3s/internal/controlplane"
	"github.com/capk3s/capk3s/internal/inplace"
	"github.com/capk3s/capk3s/internal/manager"
)

func deployment(t *testing.T, p installed) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	key := client.ObjectKey{Namespace: p.namespace, Name: p.prefix + "controller-manager"}
	if err := env.Client.Get(context.Background(), key, d); err != nil {
		t.Fatalf("the manager Deployment: %v", err)
	}
	return d
}

func managerContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("Deployment %s has no container named manager", d.Name)
	return corev1.Container{}
}

// checkDeployment checks the manager as it would start: arguments the binary accepts
// (variables substituted by clusterctl), probes where the binary serves them, and a
// locked-down security context.
func checkDeployment(t *testing.T, p installed) {
	t.Helper()
	d := deployment(t, p)
	c := managerContainer(t, d)
	if c.Image != p.image {
		t.Errorf("image %q, want %q", c.Image, p.image)
	}
	for _, want := range []string{"--leader-elect", "--diagnostics-address=:8443", "--insecure-diagnostics=false"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	opts := parseManagerArgs(t, p, c.Args)

	ports := map[string]int32{}
	for _, port := range c.Ports {
		ports[port.Name] = port.ContainerPort
	}
	if !strings.HasSuffix(opts.HealthAddr, ":9440") || ports["healthz"] != 9440 {
		t.Errorf("health endpoint %q, container port healthz %d: want both on 9440", opts.HealthAddr, ports["healthz"])
	}
	if ports["webhook-server"] != int32(opts.WebhookPort) {
		t.Errorf("container port webhook-server %d, manager serves webhooks on %d", ports["webhook-server"], opts.WebhookPort)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "healthz" {
			t.Errorf("probe %+v, want GET %s on port healthz", probe, path)
		}
	}
	checkCertMount(t, c, opts)
	checkSecurity(t, d, c)
}

// parseManagerArgs parses args with p's manager's own flag set: an argument the binary
// does not know would crash the Pod.
func parseManagerArgs(t *testing.T, p installed, args []string) manager.Options {
	t.Helper()
	opts, _ := parseArgs(t, p, args)
	return opts
}

// parseArgs is parseManagerArgs that also returns the control-plane manager's own
// flags, those of the in-place update extension.
func parseArgs(t *testing.T, p installed, args []string) (manager.Options, inplace.Flags) {
	t.Helper()
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	// Each main fixes its own Lease name; it is not a flag.
	opts := manager.Options{LeaderElectionID: "release-test", FeatureGates: featuregate.NewFeatureGate()}
	var ext inplace.Flags
	if p.label == controlPlaneLabel {
		// The control plane's main registers its gates before parsing.
		if err := controlplane.AddFeatureGates(opts.FeatureGates); err != nil {
			t.Fatal(err)
		}
		ext.AddFlags(fs)
	}
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manager rejects its Deployment's args %v: %v", args, err)
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("the manager rejects its Deployment's args %v: %v", args, err)
	}
	return opts, ext
}

func checkCertMount(t *testing.T, c corev1.Container, opts manager.Options) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.Name == "cert" && strings.TrimSuffix(m.MountPath, "/") == strings.TrimSuffix(opts.WebhookCertDir, "/") {
			return
		}
	}
	t.Errorf("no volume cert mounted at the manager's webhook certificate directory %s: %+v", opts.WebhookCertDir, c.VolumeMounts)
}

func checkSecurity(t *testing.T, d *appsv1.Deployment, c corev1.Container) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("Pod does not require runAsNonRoot")
	}
	if pod.SecurityContext == nil || pod.SecurityContext.SeccompProfile == nil ||
		pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("Pod does not use the RuntimeDefault seccomp profile")
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("manager container has no security context")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("manager container allows privilege escalation")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want all dropped and none added", sc.Capabilities)
	case sc.RunAsUser == nil || *sc.RunAsUser != 65532:
		t.Error("manager container does not run as user 65532 (distroless nonroot)")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("no CPU/memory requests: %+v", c.Resources.Requests)
	}
	tolerated := false
	for _, tol := range pod.Tolerations {
		tolerated = tolerated || tol.Key == "node-role.kubernetes.io/control-plane"
	}
	if !tolerated {
		t.Error("the manager does not tolerate control-plane nodes")
	}
	if pod.TerminationGracePeriodSeconds == nil {
		t.Error("no terminationGracePeriodSeconds")
	}
}
