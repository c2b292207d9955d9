package token

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/initguard"
	"github.com/capk3s/capk3s/internal/ownerref"
)

// Outcome says what Reconcile found and did.
type Outcome string

const (
	// Unchanged means the Secret was already right; nothing was written.
	Unchanged Outcome = "Unchanged"
	// Created means a new token was generated before the cluster was initialized.
	Created Outcome = "Created"
	// TakenOver means the Secret existed and its ownership or labels were corrected.
	TakenOver Outcome = "TakenOver"
	// Recovered means the Secret was missing (or empty) and was rebuilt from a server's
	// bootstrap data.
	Recovered Outcome = "Recovered"
	// Lost means the Secret is missing while servers may already hold the token (the
	// control plane is initialized, or a server has bootstrap data), and no server's
	// bootstrap data gives it back. Nothing was created; joining more machines must wait.
	Lost Outcome = "Lost"
	// ManagedExternally means the Secret is controlled by other software (a
	// SealedSecret, an ExternalSecret, ...): its value is used as it is and nothing
	// is written to it.
	ManagedExternally Outcome = "ManagedExternally"
	// ManagedExternallyWithoutValue is ManagedExternally for a Secret that has no
	// server passphrase yet: nothing can join until its controller writes one.
	ManagedExternallyWithoutValue Outcome = "ManagedExternallyWithoutValue"
)

// Result is what Reconcile reports. Message is safe to show users: it never holds
// the token.
type Result struct {
	Outcome Outcome
	Message string
}

// Available reports whether machines can be given the token.
func (r Result) Available() bool {
	return r.Outcome != Lost && r.Outcome != ManagedExternallyWithoutValue
}

// Reconcile makes the cluster's token Secret exist and be controlled by kcp. It writes
// only when something is wrong, and returns every API error other than NotFound.
func Reconcile(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, opts ...Option) (Result, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	key := client.ObjectKey{Namespace: cluster.Namespace, Name: SecretName(cluster.Name)}
	existing := &corev1.Secret{}
	err := o.secretReader(c).Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
		return create(ctx, c, cluster, kcp, o)
	case err != nil:
		return Result{}, fmt.Errorf("reading join token Secret %s: %w", key, err)
	}
	return takeOver(ctx, c, cluster, kcp, existing, o)
}

// create makes the Secret. A token found in a server's bootstrap data wins over a new
// one, even before initialization: the first server may be booting with it already.
func create(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, o options) (Result, error) {
	tok, result, err := recoverOrGenerate(ctx, c, cluster, kcp, o)
	if err != nil || result.Outcome == Lost {
		return result, err
	}
	s := newSecret(cluster, tok)
	if err := controllerutil.SetControllerReference(kcp, s, c.Scheme()); err != nil {
		return Result{}, fmt.Errorf("owning join token Secret: %w", err)
	}
	if err := c.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Someone else created it between our Get and Create: adopt theirs.
			existing := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), existing); err != nil {
				return Result{}, fmt.Errorf("reading join token Secret: %w", err)
			}
			return takeOver(ctx, c, cluster, kcp, existing, o)
		}
		return Result{}, fmt.Errorf("creating join token Secret: %w", err)
	}
	return result, nil
}

func recoverOrGenerate(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, o options) (Token, Result, error) {
	tok, found, err := recoverFromServers(ctx, c, cluster, kcp)
	switch {
	case errors.Is(err, errServersDisagree):
		return Token{}, Result{Outcome: Lost, Message: "join token Secret is missing and " + err.Error()}, nil
	case err != nil:
		return Token{}, Result{}, err
	case found:
		return tok, Result{Outcome: Recovered, Message: "join token Secret was missing; recovered it from a server's bootstrap data"}, nil
	}
	started := o.started
	if started == nil {
		started = func() (string, error) { return initguard.Started(ctx, c, o.live, cluster, kcp) }
	}
	evidence, err := started()
	if err != nil {
		return Token{}, Result{}, err
	}
	if evidence != "" {
		return Token{}, Result{Outcome: Lost, Message: "join token Secret " + SecretName(cluster.Name) +
			" is missing while servers may already hold the token (" + evidence + "), and no server's bootstrap data gives it back; " +
			"restore the Secret from a backup (key " + ServerKey + ") so that machines can join"}, nil
	}
	tok, err = Generate()
	if err != nil {
		return Token{}, Result{}, err
	}
	return tok, Result{Outcome: Created, Message: "join token Secret created"}, nil
}

// takeOver corrects ownership and labels of an existing Secret, and fills in a missing
// server passphrase the way create would. The Secret's type is immutable in
// Kubernetes, so a Secret of another type is kept as it is.
func takeOver(ctx context.Context, c client.Client, cluster *clusterv1.Cluster, kcp *controlplanev1.KThreesControlPlane, existing *corev1.Secret, o options) (Result, error) {
	if ctl := ownerref.ExternalController(existing); ctl != nil {
		return managedExternally(existing, ctl), nil
	}
	desired := existing.DeepCopy()
	result := Result{Outcome: Unchanged}
	changed, err := ownerref.TakeOver(desired, kcp, c.Scheme())
	if err != nil {
		return Result{}, fmt.Errorf("taking over join token Secret: %w", err)
	}
	if desired.Labels[clusterv1.ClusterNameLabel] != cluster.Name {
		if desired.Labels == nil {
			desired.Labels = map[string]string{}
		}
		desired.Labels[clusterv1.ClusterNameLabel] = cluster.Name
		changed = true
	}
	if len(desired.Data[ServerKey]) == 0 {
		tok, r, err := recoverOrGenerate(ctx, c, cluster, kcp, o)
		if err != nil {
			return r, err
		}
		if r.Outcome != Lost {
			if desired.Data == nil {
				desired.Data = map[string][]byte{}
			}
			desired.Data[ServerKey] = []byte(tok.Server)
			if tok.Agent != "" {
				desired.Data[AgentKey] = []byte(tok.Agent)
			}
			changed = true
		}
		// A lost value still gets its ownership fixed below, so that a rollout cannot
		// garbage-collect the Secret a user is about to restore the value into.
		result = r
	}
	if !changed {
		return result, nil
	}
	// The optimistic lock makes a concurrent change of the owner references fail this
	// patch instead of being overwritten by it; the next reconcile starts over.
	if err := c.Patch(ctx, desired, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		return Result{}, fmt.Errorf("taking over join token Secret: %w", err)
	}
	if result.Outcome == Unchanged {
		result = Result{Outcome: TakenOver, Message: "join token Secret is now controlled by the control plane"}
	}
	return result, nil
}

// managedExternally reports a Secret that other software controls, without
// writing it: taking it over would make two controllers fight over it, and would
// tie its life to the control plane's. The message names the controller, never
// the value.
func managedExternally(s *corev1.Secret, ctl *metav1.OwnerReference) Result {
	by := ctl.Kind + " " + ctl.Name + " (" + ctl.APIVersion + ")"
	if len(s.Data[ServerKey]) == 0 {
		return Result{Outcome: ManagedExternallyWithoutValue, Message: "join token Secret " + s.Name + " is managed by " + by +
			" and has no " + ServerKey + " key yet; machines join once that controller writes it"}
	}
	return Result{Outcome: ManagedExternally, Message: "join token Secret " + s.Name + " is managed by " + by +
		"; the control plane uses it as it is and does not write it"}
}
