package runtimehooks

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewCatalog returns a catalog of the Runtime SDK's hooks (v1alpha1), which both the
// client and an extension's server need.
func NewCatalog() (*runtimecatalog.Catalog, error) {
	catalog := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(catalog); err != nil {
		return nil, fmt.Errorf("registering the runtime hooks: %w", err)
	}
	return catalog, nil
}

// Options configure a client.
type Options struct {
	// Reader reads Namespaces, for ExtensionConfigs with a namespace selector; its
	// scheme also names the kinds the hooks are called for (logs only).
	Reader client.Reader
	// Catalog knows the hooks and their request and response types.
	Catalog *runtimecatalog.Catalog
	// CertFile and KeyFile, both or neither, are a client certificate presented to
	// extensions that ask for one (mutual TLS).
	CertFile, KeyFile string
}

// New returns a Runtime SDK client. It is not ready (IsReady) until WarmUp has been
// given every ExtensionConfig: CAPI's ExtensionConfig reconciler does that once at
// start, then Registers and Unregisters each ExtensionConfig as it changes.
func New(o Options) (runtimeclient.Client, error) {
	if o.Reader == nil || o.Catalog == nil {
		return nil, errors.New("runtime hooks client: Reader and Catalog are required")
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("runtime hooks client: give both a client certificate and its key, or neither")
	}
	return &hookClient{
		reader:   o.Reader,
		catalog:  o.Catalog,
		certFile: o.CertFile,
		keyFile:  o.KeyFile,
		registry: newRegistry(),
		http:     map[string]*http.Client{},
	}, nil
}

// hookClient implements runtimeclient.Client.
type hookClient struct {
	reader            client.Reader
	catalog           *runtimecatalog.Catalog
	certFile, keyFile string
	registry          *registry

	// http holds one HTTP client per extension host and CA bundle, so that calls reuse
	// their connections.
	httpMu sync.Mutex
	http   map[string]*http.Client
}

var _ runtimeclient.Client = &hookClient{}

// WarmUp registers every ExtensionConfig in list and marks the client ready.
func (c *hookClient) WarmUp(list *runtimev1.ExtensionConfigList) error {
	return c.registry.warmUp(list)
}

// IsReady reports whether WarmUp has run.
func (c *hookClient) IsReady() bool { return c.registry.isReady() }

// Register records the handlers an ExtensionConfig's status lists, replacing those it
// had before.
func (c *hookClient) Register(ext *runtimev1.ExtensionConfig) error {
	if err := c.registry.add(ext); err != nil {
		return fmt.Errorf("registering ExtensionConfig %s: %w", ext.Name, err)
	}
	return nil
}

// Unregister forgets an ExtensionConfig's handlers.
func (c *hookClient) Unregister(ext *runtimev1.ExtensionConfig) error {
	c.registry.remove(ext.Name)
	return nil
}
