package runtimehooks

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GetAllExtensions names the handlers registered for hook whose ExtensionConfig
// selects forObject's namespace, in name order.
func (c *hookClient) GetAllExtensions(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object) ([]string, error) {
	gvh, err := c.catalog.GroupVersionHook(hook)
	if err != nil {
		return nil, err
	}
	regs, err := c.registry.forHook(gvh.GroupHook())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, reg := range regs {
		ok, err := c.selects(ctx, reg.namespaces, forObject.GetNamespace())
		if err != nil {
			return nil, fmt.Errorf("extension handler %s: %w", reg.name, err)
		}
		if ok {
			names = append(names, reg.name)
		}
	}
	return names, nil
}

// CallAllExtensions calls every handler GetAllExtensions names, one after the other,
// and stops at the first error: an unreachable extension is not waited for again by
// the next. The answers are merged into response: Success, the shortest non-zero
// retry, the messages joined.
func (c *hookClient) CallAllExtensions(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object, request runtimehooksv1.RequestObject, response runtimehooksv1.ResponseObject) error {
	gvh, err := c.catalog.GroupVersionHook(hook)
	if err != nil {
		return err
	}
	names, err := c.GetAllExtensions(ctx, hook, forObject)
	if err != nil {
		return err
	}
	var messages []string
	var retry int32
	for _, name := range names {
		obj, err := c.catalog.NewResponse(gvh)
		if err != nil {
			return err
		}
		one, ok := obj.(runtimehooksv1.ResponseObject)
		if !ok {
			return fmt.Errorf("hook %s: the catalog's response type %T is not a response", gvh, obj)
		}
		if err := c.CallExtension(ctx, hook, forObject, name, request, one); err != nil {
			return err
		}
		if r, ok := one.(runtimehooksv1.RetryResponseObject); ok {
			retry = lowestNonZero(retry, r.GetRetryAfterSeconds())
		}
		if m := one.GetMessage(); m != "" {
			messages = append(messages, m)
		}
	}
	response.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	response.SetMessage(strings.Join(messages, ", "))
	if r, ok := response.(runtimehooksv1.RetryResponseObject); ok {
		r.SetRetryAfterSeconds(retry)
	}
	return nil
}

// CallExtension calls one registered handler. An answer other than Success is an
// error (response still holds it); so is an unreachable extension, unless the
// handler's failurePolicy is Ignore, which turns that into an empty Success.
func (c *hookClient) CallExtension(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object, name string, request runtimehooksv1.RequestObject, response runtimehooksv1.ResponseObject, opts ...runtimeclient.CallExtensionOption) error {
	options := &runtimeclient.CallExtensionOptions{}
	for _, o := range opts {
		o.ApplyToOptions(options)
	}
	gvh, err := c.catalog.GroupVersionHook(hook)
	if err != nil {
		return err
	}
	if err := c.catalog.ValidateRequest(gvh, request); err != nil {
		return fmt.Errorf("calling %s: %w", name, err)
	}
	if err := c.catalog.ValidateResponse(gvh, response); err != nil {
		return fmt.Errorf("calling %s: %w", name, err)
	}
	reg, err := c.registry.get(name)
	if err != nil {
		return err
	}
	if reg.hook.GroupHook() != gvh.GroupHook() {
		return fmt.Errorf("extension handler %s serves %s, not %s", name, reg.hook.GroupHook(), gvh.GroupHook())
	}
	// Only one version of each hook exists (v1alpha1); a handler registered for
	// another would need conversions this client does not have.
	if reg.hook.Version != gvh.Version {
		return fmt.Errorf("extension handler %s serves %s at version %s; this client speaks %s", name, gvh.Hook, reg.hook.Version, gvh.Version)
	}
	ok, err := c.selects(ctx, reg.namespaces, forObject.GetNamespace())
	if err != nil {
		return fmt.Errorf("extension handler %s: %w", name, err)
	}
	if !ok {
		return fmt.Errorf("extension handler %s does not select namespace %s", name, forObject.GetNamespace())
	}

	request = withSettings(request, reg.settings)
	if err := c.setKind(gvh, request); err != nil {
		return err
	}
	var cacheKey string
	if options.WithCaching {
		cacheKey = options.CacheKeyFunc(reg.name, reg.resourceVersion, request)
		if entry, hit := options.Cache.Has(cacheKey); hit {
			return copyResponse(entry.Response, response)
		}
	}
	u, err := endpoint(reg.clientConfig, reg.hook, reg.handler)
	if err != nil {
		return fmt.Errorf("extension handler %s: %w", name, err)
	}
	timeout := time.Duration(runtimehooksv1.DefaultHandlersTimeoutSeconds) * time.Second
	if reg.timeout > 0 {
		timeout = time.Duration(reg.timeout) * time.Second
	}
	if err := c.post(ctx, u, reg.clientConfig.CABundle, timeout, request, response); err != nil {
		var unreachable unreachableError
		if errors.As(err, &unreachable) && reg.failurePolicy == runtimev1.FailurePolicyIgnore {
			ctrl.LoggerFrom(ctx).Info("Extension handler unreachable; going on as its failurePolicy is Ignore", "handler", name, "error", err.Error())
			response.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			response.SetMessage("")
			return nil
		}
		return fmt.Errorf("extension handler %s: %w", name, err)
	}
	if err := succeeded(response, "extension handler "+name); err != nil {
		return err
	}
	if options.WithCaching {
		options.Cache.Add(runtimeclient.CallExtensionCacheEntry{CacheKey: cacheKey, Response: response})
	}
	return nil
}

// setKind stamps a request with the kind the catalog gives its hook, which the
// extension's server checks.
func (c *hookClient) setKind(gvh runtimecatalog.GroupVersionHook, request runtime.Object) error {
	gvk, err := c.catalog.Request(gvh)
	if err != nil {
		return err
	}
	request.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// selects reports whether a namespace's labels match an ExtensionConfig's selector;
// an empty selector selects every namespace without reading it.
func (c *hookClient) selects(ctx context.Context, selector labels.Selector, namespace string) (bool, error) {
	if selector.Empty() {
		return true, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Namespace"))
	ns.APIVersion = "v1"
	if err := c.reader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return false, fmt.Errorf("reading namespace %s for the namespace selector: %w", namespace, err)
	}
	return selector.Matches(labels.Set(ns.GetLabels())), nil
}

// withSettings returns a copy of request whose settings are the ExtensionConfig's
// with the request's own on top; the caller's object is left as it was.
func withSettings(request runtimehooksv1.RequestObject, settings map[string]string) runtimehooksv1.RequestObject {
	out, _ := request.DeepCopyObject().(runtimehooksv1.RequestObject)
	merged := make(map[string]string, len(settings)+len(request.GetSettings()))
	for k, v := range settings {
		merged[k] = v
	}
	for k, v := range request.GetSettings() {
		merged[k] = v
	}
	out.SetSettings(merged)
	return out
}

// copyResponse writes a cached response into the caller's, which must be of the same
// type.
func copyResponse(cached, into runtimehooksv1.ResponseObject) error {
	from, to := reflect.ValueOf(cached), reflect.ValueOf(into)
	if from.Type() != to.Type() {
		return fmt.Errorf("cached response is a %s, not a %s", from.Type(), to.Type())
	}
	to.Elem().Set(from.Elem())
	return nil
}

func lowestNonZero(a, b int32) int32 {
	switch {
	case a == 0:
		return b
	case b == 0 || a < b:
		return a
	default:
		return b
	}
}
