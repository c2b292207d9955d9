package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"
	"sigs.k8s.io/cluster-api/util/test/builder"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

const newerVersion = "v1.32.1+k3s1"

// initializedCluster is a Cluster whose control plane is up: token, CAs, initialized.
func initializedCluster(t *testing.T) (*clusterv1.Cluster, token.Token, []byte) {
	t.Helper()
	ctx := context.Background()
	cluster := newReadyCluster(t, env.NewNamespace(t))
	tok := createToken(t, cluster)
	if err := k3s.ClusterCertificates().LookupOrGenerate(ctx, env.Client, client.ObjectKeyFromObject(cluster),
		metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID}); err != nil {
		t.Fatal(err)
	}
	ca, err := secret.Get(ctx, env.Client, client.ObjectKeyFromObject(cluster), secret.ClusterCA)
	if err != nil {
		t.Fatal(err)
	}
	markInitialized(t, cluster)
	return cluster, tok, ca.Data[secret.TLSCrtDataName]
}

// newPoolWithConfig creates a MachinePool and its KThreesConfig, owned as CAPI's
// MachinePool controller leaves it.
func newPoolWithConfig(t *testing.T, cluster *clusterv1.Cluster, name string, labels map[string]string, spec bootstrapv1.KThreesConfigSpec) (*clusterv1.MachinePool, *bootstrapv1.KThreesConfig) {
	t.Helper()
	ctx := context.Background()
	mp := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: cluster.Name,
			Replicas:    ptr.To[int32](2),
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: labels},
				Spec: clusterv1.MachineSpec{
					ClusterName: cluster.Name,
					Version:     testVersion,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: bootstrapv1.GroupVersion.Group, Kind: "KThreesConfig", Name: name,
					}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachinePoolKind, Name: name,
					},
				},
			},
		},
	}
	if err := env.Client.Create(ctx, mp); err != nil {
		t.Fatal(err)
	}
	config := &bootstrapv1.KThreesConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: spec,
	}
	if err := controllerutil.SetControllerReference(mp, config, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, config); err != nil {
		t.Fatal(err)
	}
	return mp, config
}

// waitForData waits until the config's data Secret satisfies want, and returns it.
func waitForData(t *testing.T, config *bootstrapv1.KThreesConfig, what string, want func(data string) bool) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	last := ""
	err := waitFor(func(ctx context.Context) (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), s); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		data := string(s.Data["value"])
		// Only the install line is shown on failure: the data carries the join token.
		last = installLine(data)
		return want(data), nil
	})
	if err != nil {
		t.Fatalf("%s: the data Secret never %s; last install command: %s", config.Name, what, last)
	}
	return s
}

// waitObserved waits until the controller has reconciled the config's current spec.
func waitObserved(t *testing.T, config *bootstrapv1.KThreesConfig) {
	t.Helper()
	if err := waitFor(func(ctx context.Context) (bool, error) {
		got := &bootstrapv1.KThreesConfig{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), got); err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation, nil
	}); err != nil {
		t.Fatalf("%s: spec never observed: %v", config.Name, err)
	}
}

func installLine(data string) string {
	for _, l := range strings.Split(data, "\n") {
		if strings.Contains(l, "INSTALL_K3S_VERSION") {
			return strings.TrimSpace(l)
		}
	}
	return "(none)"
}

func installs(version string) func(string) bool {
	return func(data string) bool { return strings.Contains(data, "INSTALL_K3S_VERSION='"+version+"'") }
}

// A pool's config re-renders its data Secret in place when the pool's version changes
// and when the config's spec changes; the Secret keeps its name and UID, and every
// rendering carries the cluster's CA-pinned agent token.
func TestPoolDataSecretFollowsThePool(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	cluster, tok, caPEM := initializedCluster(t)
	wantToken, err := tok.AgentJoinToken(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	mp, config := newPoolWithConfig(t, cluster, "pool", nil, bootstrapv1.KThreesConfigSpec{
		AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"pool=a"}},
	})
	first := waitForDataSecret(t, config)
	if !installs(testVersion)(string(first.Data["value"])) {
		t.Fatalf("first rendering does not install %s", testVersion)
	}
	checkToken := func(s *corev1.Secret) {
		t.Helper()
		if got := k3sConfig(t, s.Data["value"])["token"]; got != wantToken {
			t.Errorf("token is not the cluster's CA-pinned agent token")
		}
		if s.UID != first.UID || s.Name != first.Name {
			t.Errorf("data Secret %s (uid %s) replaced the first one %s (uid %s)", s.Name, s.UID, first.Name, first.UID)
		}
	}
	checkToken(first)

	before := mp.DeepCopy()
	mp.Spec.Template.Spec.Version = newerVersion
	if err := env.Client.Patch(ctx, mp, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	upgraded := waitForData(t, config, "installed "+newerVersion, installs(newerVersion))
	checkToken(upgraded)

	got := getConfig(t, config)
	beforeConfig := got.DeepCopy()
	got.Spec.AgentConfig.NodeLabels = []string{"pool=b"}
	if err := env.Client.Patch(ctx, got, client.MergeFrom(beforeConfig)); err != nil {
		t.Fatal(err)
	}
	relabelled := waitForData(t, config, "carried the new label", func(data string) bool {
		return strings.Contains(data, "pool=b") && !strings.Contains(data, "pool=a")
	})
	checkToken(relabelled)
	if !installs(newerVersion)(string(relabelled.Data["value"])) {
		t.Error("the spec change lost the pool's version")
	}
	got = getConfig(t, config)
	if got.Status.DataSecretName != first.Name || !conditions.IsTrue(got, clusterv1.ReadyCondition) {
		t.Errorf("status dataSecretName %q, Ready %v; want %s and true", got.Status.DataSecretName,
			conditions.IsTrue(got, clusterv1.ReadyCondition), first.Name)
	}

	// A spec change that renders the same data (the version the pool already gives)
	// writes nothing.
	rv := relabelled.ResourceVersion
	got = getConfig(t, config)
	beforeConfig = got.DeepCopy()
	got.Spec.Version = newerVersion
	if err := env.Client.Patch(ctx, got, client.MergeFrom(beforeConfig)); err != nil {
		t.Fatal(err)
	}
	waitObserved(t, config)
	same := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), same); err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != rv {
		t.Errorf("an unchanged rendering rewrote the data Secret (resourceVersion %s, then %s)", rv, same.ResourceVersion)
	}
}

// A Machine boots once: its data is never rendered again, whatever changes.
func TestMachineDataSecretIsRenderedOnce(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	cluster, _, _ := initializedCluster(t)
	config := newMachineWithConfig(t, cluster, "agent-0", false, bootstrapv1.KThreesConfigSpec{
		AgentConfig: bootstrapv1.KThreesAgentConfig{NodeLabels: []string{"pool=a"}},
	})
	first := waitForDataSecret(t, config)

	got := getConfig(t, config)
	before := got.DeepCopy()
	got.Spec.AgentConfig.NodeLabels = []string{"pool=b"}
	if err := env.Client.Patch(ctx, got, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	waitObserved(t, config)
	after := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != first.ResourceVersion || strings.Contains(string(after.Data["value"]), "pool=b") {
		t.Error("a Machine's data Secret was rendered again after a spec change")
	}
}

// A MachinePool that asks for servers gets no data, and the config says why.
func TestServerInMachinePoolIsRefused(t *testing.T) {
	startManager(t)
	ctx := context.Background()
	cluster, _, _ := initializedCluster(t)
	_, config := newPoolWithConfig(t, cluster, "servers", map[string]string{clusterv1.MachineControlPlaneLabel: ""}, bootstrapv1.KThreesConfigSpec{})

	waitForReason(t, config, bootstrapv1.ServerInMachinePoolReason)
	got := getConfig(t, config)
	c := conditions.Get(got, bootstrapv1.DataSecretAvailableCondition)
	if !strings.Contains(c.Message, "agents only") || !strings.Contains(c.Message, clusterv1.MachineControlPlaneLabel) {
		t.Errorf("message %q does not say what is wrong", c.Message)
	}
	if conditions.IsTrue(got, clusterv1.ReadyCondition) {
		t.Error("a refused config is Ready")
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(config), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("bootstrap data was created for a pool of servers (Get = %v)", err)
	}
}

// A pool's config is rendered on every pass, and its data Secret exists after the
// first: a pass with nothing new reads the Secret and writes nothing, rather than
// trying to create it again and being answered AlreadyExists every time.
func TestAnUnchangedPoolsPassMeetsNo409(t *testing.T) {
	cluster, _, _ := initializedCluster(t)
	_, config := newPoolWithConfig(t, cluster, "pool-0", nil, bootstrapv1.KThreesConfigSpec{})
	c, got409 := answers409(t)
	r := &Reconciler{Client: c, APIReader: env.Client}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)}
	for pass := 1; pass <= 2; pass++ {
		if _, err := r.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	data := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(config), data); err != nil {
		t.Fatalf("no data Secret after two passes: %v", err)
	}
	if len(*got409) != 0 {
		t.Errorf("answered 409: %v", *got409)
	}
}

// A Secret under a pool config's name that the config does not control is someone
// else's: the pool's pass fails and neither takes it up as its data nor rewrites it.
func TestAPoolConfigLeavesAForeignSecretUnderItsName(t *testing.T) {
	ctx := context.Background()
	cluster, _, _ := initializedCluster(t)
	_, config := newPoolWithConfig(t, cluster, "pool-0", nil, bootstrapv1.KThreesConfigSpec{})
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: config.Namespace, Name: config.Name},
		Data: map[string][]byte{"value": []byte("someone else's")}}
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: env.Client, APIReader: env.Client}
	_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(config)})
	if err == nil || !strings.Contains(err.Error(), "is not this KThreesConfig's bootstrap data") {
		t.Fatalf("Reconcile = %v, want the foreign Secret refused", err)
	}
	got := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if string(got.Data["value"]) != "someone else's" || len(got.Data) != 1 || got.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Secret was rewritten: %v", got.Data)
	}
	if ptr.Deref(getConfig(t, config).Status.Initialization.DataSecretCreated, false) {
		t.Error("a Secret the config does not control was taken up as its data")
	}
}
