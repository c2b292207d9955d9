package runtimehooks

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// errNotReady is returned by lookups before WarmUp: an empty registry then means
// "not read yet", not "no extension", and a caller must not act on it.
var errNotReady = errors.New("the Runtime SDK client has not read the ExtensionConfigs yet")

// registration is one handler of one ExtensionConfig, with what a call needs.
type registration struct {
	// name is the handler's registered name, "<handler>.<ExtensionConfig>".
	name string
	// handler is the handler's own name, the last element of its URL path.
	handler       string
	extension     string
	hook          runtimecatalog.GroupVersionHook
	clientConfig  runtimev1.ClientConfig
	namespaces    labels.Selector
	timeout       int32
	failurePolicy runtimev1.FailurePolicy
	settings      map[string]string
	// resourceVersion is the ExtensionConfig's, for callers' response caches.
	resourceVersion string
}

// registry holds the registrations of every known ExtensionConfig.
type registry struct {
	mu    sync.RWMutex
	ready bool
	// byExtension maps an ExtensionConfig's name to its handlers.
	byExtension map[string][]registration
}

func newRegistry() *registry { return &registry{byExtension: map[string][]registration{}} }

func (r *registry) warmUp(list *runtimev1.ExtensionConfigList) error {
	all := map[string][]registration{}
	var errs []error
	for i := range list.Items {
		regs, err := registrationsOf(&list.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all[list.Items[i].Name] = regs
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byExtension = all
	r.ready = true
	return nil
}

func (r *registry) isReady() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ready
}

func (r *registry) add(ext *runtimev1.ExtensionConfig) error {
	regs, err := registrationsOf(ext)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byExtension[ext.Name] = regs
	return nil
}

func (r *registry) remove(extension string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byExtension, extension)
}

// forHook lists the handlers registered for a hook of any version, by name, so that
// callers see extensions in the same order on every call.
func (r *registry) forHook(hook runtimecatalog.GroupHook) ([]registration, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.ready {
		return nil, errNotReady
	}
	var out []registration
	for _, regs := range r.byExtension {
		for _, reg := range regs {
			if reg.hook.GroupHook() == hook {
				out = append(out, reg)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func (r *registry) get(name string) (registration, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.ready {
		return registration{}, errNotReady
	}
	for _, regs := range r.byExtension {
		for _, reg := range regs {
			if reg.name == name {
				return reg, nil
			}
		}
	}
	return registration{}, fmt.Errorf("no extension handler %q is registered", name)
}

// registrationsOf turns the handlers an ExtensionConfig's status lists (written by
// discovery) into registrations.
func registrationsOf(ext *runtimev1.ExtensionConfig) ([]registration, error) {
	selector := labels.Everything()
	if ext.Spec.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(ext.Spec.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("ExtensionConfig %s: spec.namespaceSelector: %w", ext.Name, err)
		}
		selector = s
	}
	regs := make([]registration, 0, len(ext.Status.Handlers))
	for _, h := range ext.Status.Handlers {
		gv, err := schema.ParseGroupVersion(h.RequestHook.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("ExtensionConfig %s: handler %s: %w", ext.Name, h.Name, err)
		}
		short, err := handlerName(h.Name, ext.Name)
		if err != nil {
			return nil, err
		}
		regs = append(regs, registration{
			name:            h.Name,
			handler:         short,
			extension:       ext.Name,
			hook:            runtimecatalog.GroupVersionHook{Group: gv.Group, Version: gv.Version, Hook: h.RequestHook.Hook},
			clientConfig:    ext.Spec.ClientConfig,
			namespaces:      selector,
			timeout:         h.TimeoutSeconds,
			failurePolicy:   h.FailurePolicy,
			settings:        ext.Spec.Settings,
			resourceVersion: ext.ResourceVersion,
		})
	}
	return regs, nil
}

// handlerName is a registered name without its ExtensionConfig suffix: discovery
// names each handler "<handler>.<ExtensionConfig>" (registeredName), and the
// extension serves it under the first part.
func handlerName(registered, extension string) (string, error) {
	suffix := "." + extension
	if len(registered) <= len(suffix) || registered[len(registered)-len(suffix):] != suffix {
		return "", fmt.Errorf("ExtensionConfig %s: handler %q is not named <handler>%s", extension, registered, suffix)
	}
	return registered[:len(registered)-len(suffix)], nil
}

// registeredName is the name discovery gives a handler of an ExtensionConfig.
func registeredName(handler, extension string) string { return handler + "." + extension }
