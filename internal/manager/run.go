package manager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/util/apiwarnings"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/capk3s/capk3s/internal/version"
)

// SetupFunc registers reconcilers and webhooks on a manager before it starts.
type SetupFunc func(ctx context.Context, mgr ctrl.Manager) error

// Run builds a manager named name from o, lets setup register its
// controllers, and blocks until the process receives SIGTERM or SIGINT.
func Run(name string, scheme *runtime.Scheme, o Options, setup SetupFunc) error {
	if setup == nil {
		return errors.New("no setup function given")
	}
	// Validated again here so Run is safe without the caller having done it.
	if err := o.Validate(); err != nil {
		return fmt.Errorf("invalid options: %w", err)
	}
	if err := applyLogging(o.Logs); err != nil {
		return err
	}
	log := ctrl.Log.WithName(name)
	log.Info("Starting", "version", version.Version, "revision", version.Revision)

	mgrOpts, err := o.ManagerOptions(scheme)
	if err != nil {
		return err
	}

	base, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg := RestConfig(base, o)
	// The user agent lets API server audit logs attribute requests to this binary.
	cfg.UserAgent = remote.DefaultClusterAPIUserAgent(name)
	cfg.WarningHandler = apiwarnings.DefaultHandler(log.WithName("API Server Warning"))

	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := addChecks(mgr); err != nil {
		return err
	}

	ctx := ctrl.SetupSignalHandler()
	if err := setup(ctx, mgr); err != nil {
		return fmt.Errorf("setting up controllers: %w", err)
	}

	log.Info("Starting manager")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
