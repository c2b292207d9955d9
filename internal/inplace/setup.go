package inplace

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"

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
	// ClientCAFiles are PEM bundles of the CAs whose client certificates callers must
	// present (required): only the Runtime SDK's callers may reach the extension.
	ClientCAFiles []string
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
	authority, err := newClientAuthority(o.ClientCAFiles)
	if err != nil {
		return fmt.Errorf("the runtime extension authenticates its callers: %w", err)
	}
	catalog, err := runtimehooks.NewCatalog()
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Catalog: catalog, Port: o.Port, Host: o.Host,
		CertDir: o.CertDir, CertName: o.CertName, KeyName: o.KeyName,
		TLSOpts: append(slices.Clone(o.TLSOpts), authority.tlsOption),
	})
	if err != nil {
		return fmt.Errorf("runtime extension server: %w", err)
	}
	// Live reads: the Machine's marks are checked on every UpdateMachine call, and a
	// cache that lags behind the control plane's mark would refuse a real update.
	e := &Extension{
		Client: mgr.GetAPIReader(), Workload: o.Workload,
		ServiceAccount: o.ServiceAccount, Image: o.Image, RetryAfterSeconds: o.RetryAfterSeconds,
	}
	// A call that fails is no answer, for every handler: taken for "covers nothing", a
	// timeout would turn an in-place update into a replacement (with maxSurge 0, the
	// deletion of a server first); taken for "done", an unfinished update would end.
	// The callers ask again.
	fail := ptr.To(runtimehooksv1.FailurePolicyFail)
	for _, h := range []server.ExtensionHandler{
		{Hook: runtimehooksv1.CanUpdateMachine, Name: CanUpdateMachineHandler, HandlerFunc: e.CanUpdateMachine, FailurePolicy: fail},
		{Hook: runtimehooksv1.CanUpdateMachineSet, Name: CanUpdateMachineSetHandler, HandlerFunc: e.CanUpdateMachineSet, FailurePolicy: fail},
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
