package bootstrap

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/cloudinit"
	"github.com/capk3s/capk3s/internal/k3s"
	"github.com/capk3s/capk3s/internal/token"
)

// inputs gathers everything the renderer needs. ready is false, with the reason set
// on the config, while something the machine depends on does not exist yet. The
// Secrets the spec names for the user are read through secrets.
func (r *Reconciler) inputs(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, owner *configOwner, secrets *userSecrets) (in cloudinit.Input, ready bool, err error) {
	version := config.Spec.Version
	if version == "" {
		version = owner.version
	}
	if _, err := k3s.ParseVersion(version); err != nil {
		msg := "no k3s version: set spec.version or the " + owner.kind + "'s version"
		if version != "" {
			msg = "spec.version: " + err.Error()
		}
		setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse, bootstrapv1.DataSecretGenerationFailedReason, msg)
		return in, false, nil
	}
	in = cloudinit.Input{Spec: config.Spec, Version: k3s.NormalizeVersion(version), InstallScriptURL: r.InstallScriptURL}

	role, ready, err := r.role(ctx, cluster, config, owner)
	if err != nil || !ready {
		return in, false, err
	}
	in.Role = role
	endpoint := cluster.Spec.ControlPlaneEndpoint
	onDatastore := role != cloudinit.Agent && config.Spec.ServerConfig.Datastore != nil
	if onDatastore {
		// Servers on an external datastore find the cluster there: no server URL, and
		// no cluster-init on the first one (the renderer leaves it out).
		var missing string
		if in.Datastore, missing, err = datastoreValues(ctx, secrets, config); err != nil || missing != "" {
			if missing != "" {
				waiting(config, bootstrapv1.WaitingForDatastoreSecretReason, missing)
			}
			return in, false, err
		}
	} else if role != cloudinit.ServerInit {
		if in.ServerURL, ready, err = r.joinURL(ctx, cluster, config); err != nil || !ready {
			return in, false, err
		}
	}
	if role != cloudinit.Agent {
		var missing string
		if in.EtcdS3, missing, err = etcdS3Values(ctx, secrets, config); err != nil || missing != "" {
			if missing != "" {
				waiting(config, bootstrapv1.WaitingForEtcdS3SecretReason, missing)
			}
			return in, false, err
		}
	}

	caPEM, ready, err := r.certificates(ctx, cluster, config, &in)
	if err != nil || !ready {
		return in, false, err
	}

	tokenRole := Agent
	if role != cloudinit.Agent {
		tokenRole = Server
		in.TLSSANs = []string{endpoint.Host}
	}
	opts, found, err := JoinTokenOptions(ctx, r.clusterSecrets(), cluster, tokenRole, caPEM)
	if err != nil {
		return in, false, err
	}
	if !found {
		waiting(config, bootstrapv1.WaitingForTokenReason,
			"Waiting for the control plane to create the join token Secret "+token.SecretName(cluster.Name))
		return in, false, nil
	}
	in.Token, in.AgentToken = opts.Token, opts.AgentToken

	// Referenced Secrets the user has not created yet are retried with backoff: they
	// are not watched, since any Secret could be one.
	if in.Files, err = userFiles(ctx, secrets, config); err != nil {
		return in, false, userInputFailed(config, err)
	}
	if in.RegistryCredentials, err = registryCredentials(ctx, secrets, config); err != nil {
		return in, false, userInputFailed(config, err)
	}
	// Password Secrets are watched (by index), so a missing one is a wait.
	var missing string
	if in.UserPasswords, missing, err = userPasswords(ctx, secrets, config); err != nil || missing != "" {
		if missing != "" {
			waiting(config, bootstrapv1.WaitingForUserPasswordSecretReason, missing)
		}
		return in, false, err
	}
	return in, true, nil
}

// userInputFailed reports on the config what the user can fix (a referenced Secret or
// key that does not exist) and returns err for a retry either way. A read that failed
// for another reason says nothing about the user's input and leaves the status alone.
func userInputFailed(config *bootstrapv1.KThreesConfig, err error) error {
	if isUserInputError(err) || apierrors.IsNotFound(err) {
		setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse, bootstrapv1.DataSecretGenerationFailedReason, err.Error())
	}
	return err
}

// role decides between initializing, joining as a server and joining as an agent.
// Only the holder of the init lock initializes; everyone else waits for the Cluster to
// report its control plane initialized (the Cluster watch wakes them). The one
// exception is the server a restore of a running cluster creates (restore.go).
func (r *Reconciler) role(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, owner *configOwner) (cloudinit.Role, bool, error) {
	initialized := ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false)
	if initialized && restoreMarked(config, owner) {
		// Never a join or an init instead: either would give the server a role nobody
		// asked for, and hide the mistake.
		ok, why, err := r.restoreInProgress(ctx, cluster, config, owner)
		if err != nil || !ok {
			if why != "" {
				waiting(config, bootstrapv1.EtcdRestoreNotInProgressReason, why)
			}
			return "", false, err
		}
		return cloudinit.ServerInit, true, nil
	}
	switch {
	case initialized:
		if err := r.releaseInitLockOnce(ctx, cluster); err != nil {
			return "", false, err
		}
		if owner.server {
			return cloudinit.ServerJoin, true, nil
		}
		return cloudinit.Agent, true, nil
	case !owner.server:
		waiting(config, bootstrapv1.WaitingForControlPlaneInitializationReason, "Waiting for the control plane to be initialized")
		return "", false, nil
	}
	held, err := acquireInitLock(ctx, r.Client, cluster, owner.name)
	if err != nil {
		return "", false, err
	}
	if !held {
		waiting(config, bootstrapv1.WaitingForInitLockReason, "Another server is initializing the cluster; this one joins once it is initialized")
		return "", false, nil
	}
	return cloudinit.ServerInit, true, nil
}

// certificates gives servers the CA files and returns the server CA certificate that
// the join token pins.
func (r *Reconciler) certificates(ctx context.Context, cluster *clusterv1.Cluster, config *bootstrapv1.KThreesConfig, in *cloudinit.Input) (caPEM []byte, ready bool, err error) {
	missing := func(err error) ([]byte, bool, error) {
		if errors.Is(err, errCertificatesMissing) {
			setCondition(config, bootstrapv1.CertificatesAvailableCondition, metav1.ConditionFalse, bootstrapv1.CertificatesMissingReason,
				"The cluster's CA Secrets do not exist; the control plane creates them")
			waiting(config, bootstrapv1.CertificatesMissingReason, "Waiting for the cluster's CA Secrets")
			return nil, false, nil
		}
		return nil, false, err
	}
	if in.Role == cloudinit.Agent {
		caPEM, err := serverCACert(ctx, r.clusterSecrets(), cluster)
		if err != nil {
			return missing(err)
		}
		return caPEM, true, nil
	}
	files, err := serverCertificates(ctx, readThroughClient{Client: r.Client, reader: r.clusterSecrets()}, cluster, in.Role == cloudinit.ServerInit)
	if err != nil {
		return missing(err)
	}
	in.Certificates = files
	setCondition(config, bootstrapv1.CertificatesAvailableCondition, metav1.ConditionTrue, bootstrapv1.CertificatesAvailableReason, "")
	for _, f := range files {
		if f.Path == k3s.ServerCACertPath {
			return []byte(f.Content), true, nil
		}
	}
	return nil, false, fmt.Errorf("no %s among the server certificates", k3s.ServerCACertPath)
}

// renderBootstrapData is the only place the reconciler meets the renderer.
func renderBootstrapData(in cloudinit.Input) ([]byte, error) {
	return cloudinit.Render(in)
}
