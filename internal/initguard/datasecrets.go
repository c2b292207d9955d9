package initguard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// DataSecret is a server's bootstrap data Secret, as a Machine or a KThreesConfig
// names it. The Secret itself may be gone.
type DataSecret struct {
	// Name is the Secret's name, in the cluster's namespace.
	Name string
	// Of says whose data it is, e.g. "Machine c1-cp-abcde", for messages.
	Of string
	// Named is true when a Machine's spec or a config's status names the Secret:
	// a server may then have booted from it. It is false for the Secret a config
	// writes under its own name before its status says so; that Secret counts
	// only once it exists and that config controls it.
	Named bool

	namespace string
	config    *bootstrapv1.KThreesConfig
}

// ServerDataSecrets lists the bootstrap data Secrets of the control plane's
// servers, each name once: first those the cluster's control-plane Machines name,
// then those of the KThreesConfigs that kcp owns, by their status or, while the
// status does not name one yet, by the config's name (the bootstrap provider's
// data Secret is named after its config).
func ServerDataSecrets(ctx context.Context, r client.Reader, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane) ([]DataSecret, error) {
	machines := &clusterv1.MachineList{}
	if err := r.List(ctx, machines,
		client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name},
		client.HasLabels{clusterv1.MachineControlPlaneLabel},
	); err != nil {
		return nil, fmt.Errorf("listing control plane Machines: %w", err)
	}
	configs := &bootstrapv1.KThreesConfigList{}
	if err := r.List(ctx, configs,
		client.InNamespace(cluster.Namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: cluster.Name},
	); err != nil {
		return nil, fmt.Errorf("listing KThreesConfigs: %w", err)
	}

	var out []DataSecret
	seen := map[string]bool{}
	add := func(d DataSecret) {
		if d.Name == "" || seen[d.Name] {
			return
		}
		seen[d.Name] = true
		d.namespace = cluster.Namespace
		out = append(out, d)
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		if name := m.Spec.Bootstrap.DataSecretName; name != nil {
			add(DataSecret{Name: *name, Of: "Machine " + m.Name, Named: true})
		}
	}
	for i := range configs.Items {
		cfg := &configs.Items[i]
		if !ownedBy(cfg, kcp) {
			// Agents' configs among them: their "token" is the agent token.
			continue
		}
		if cfg.Status.DataSecretName != "" {
			add(DataSecret{Name: cfg.Status.DataSecretName, Of: "KThreesConfig " + cfg.Name, Named: true})
			continue
		}
		add(DataSecret{Name: cfg.Name, Of: "KThreesConfig " + cfg.Name, config: cfg})
	}
	return out, nil
}

// Read returns the Secret, or found=false when it does not exist or, for a
// Secret found only by its config's name, when that config does not control it.
func (d DataSecret) Read(ctx context.Context, r client.Reader) (s *corev1.Secret, found bool, err error) {
	s = &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: d.namespace, Name: d.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading bootstrap data Secret %s of %s: %w", d.Name, d.Of, err)
	}
	if !d.Named && !metav1.IsControlledBy(s, d.config) {
		return nil, false, nil
	}
	return s, true, nil
}

// ownedBy matches any reference to kcp by group, kind and name: references in
// older versions, or written before the control plane was re-created under the
// same name (a move, a restore), still count.
func ownedBy(cfg *bootstrapv1.KThreesConfig, kcp *controlplanev1.KThreesControlPlane) bool {
	want := schema.GroupKind{Group: controlplanev1.GroupVersion.Group, Kind: "KThreesControlPlane"}
	for _, ref := range cfg.OwnerReferences {
		if ref.Name == kcp.Name && schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind() == want {
			return true
		}
	}
	return false
}
