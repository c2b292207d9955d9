package inplace

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"k8s.io/utils/ptr"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// Handler names, as the ExtensionConfig capk3s-inplace registers them
// (<handler>.capk3s-inplace in CAPI's registry).
const (
	ExtensionConfigName        = "capk3s-inplace"
	CanUpdateMachineHandler    = "can-update-machine"
	CanUpdateMachineSetHandler = "can-update-machineset"
	UpdateMachineHandler       = "update-machine"
)

// ExtensionOptions configure the extension's server and its Plans.
type ExtensionOptions struct {
	// Port the server listens on (required, > 0); Host "" is every address.
	Port int
	Host string
	// CertDir holds CertName and KeyName (defaults tls.crt, tls.key): the serving
	// certificate whose CA the ExtensionConfig carries.
	CertDir, CertName, KeyName string
	// TLSOpts are the manager's TLS settings (minimum version, ciphers).
	TLSOpts []func(*tls.Config)
	// Workload reaches the workload clusters: the manager's ClusterCache.
	Workload WorkloadClients
	// ServiceAccount, Image and RetryAfterSeconds: see Extension.
	ServiceAccount    string
	Image             string
	RetryAfterSeconds int32
}

// SetupExtension adds the in-place update extension's server to mgr. It runs on
// every replica (not only the leader): CAPI may call any of them.
func SetupExtension(_ context.Context, mgr ctrl.Manager, o ExtensionOptions) error {
	if o.Port <= 0 {
		return errors.New("the runtime extension needs a port")
	}
	if o.Workload == nil {
		return errors.New("the runtime extension needs a way to reach workload clusters")
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Catalog: catalog, Port: o.Port, Host: o.Host,
		CertDir: o.CertDir, CertName: o.CertName, KeyName: o.KeyName, TLSOpts: o.TLSOpts,
	})
	if err != nil {
		return fmt.Errorf("runtime extension server: %w", err)
	}
	e := &Extension{
		Client: mgr.GetClient(), Workload: o.Workload,
		ServiceAccount: o.ServiceAccount, Image: o.Image, RetryAfterSeconds: o.RetryAfterSeconds,
	}
	// A CanUpdate… call that fails counts as covering nothing (a rollout); an
	// UpdateMachine call that fails must not be taken for "done".
	ignore, fail := ptr.To(runtimehooksv1.FailurePolicyIgnore), ptr.To(runtimehooksv1.FailurePolicyFail)
	for _, h := range []server.ExtensionHandler{
		{Hook: runtimehooksv1.CanUpdateMachine, Name: CanUpdateMachineHandler, HandlerFunc: e.CanUpdateMachine, FailurePolicy: ignore},
		{Hook: runtimehooksv1.CanUpdateMachineSet, Name: CanUpdateMachineSetHandler, HandlerFunc: e.CanUpdateMachineSet, FailurePolicy: ignore},
		{Hook: runtimehooksv1.UpdateMachine, Name: UpdateMachineHandler, HandlerFunc: e.UpdateMachine, FailurePolicy: fail},
	} {
		if err := srv.AddExtensionHandler(h); err != nil {
			return fmt.Errorf("runtime extension handler %s: %w", h.Name, err)
		}
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the runtime extension server: %w", err)
	}
	return mgr.AddReadyzCheck("runtime-extension", srv.StartedChecker())
}
