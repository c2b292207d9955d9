package runtimehooks

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// maxHandlerTimeoutSeconds is the longest a handler may ask to be waited for; the
// Runtime SDK's discovery contract allows 0 to 30 seconds.
const maxHandlerTimeoutSeconds = 30

// Discover asks the extension which handlers it serves and returns a copy of ext with
// them in its status, named "<handler>.<ExtensionConfig>". A response that is not a
// Success, or names a hook the catalog does not know, is an error.
func (c *hookClient) Discover(ctx context.Context, ext *runtimev1.ExtensionConfig) (*runtimev1.ExtensionConfig, error) {
	gvh, err := c.catalog.GroupVersionHook(runtimehooksv1.Discovery)
	if err != nil {
		return nil, err
	}
	u, err := endpoint(ext.Spec.ClientConfig, gvh, "")
	if err != nil {
		return nil, fmt.Errorf("discovering extension %s: %w", ext.Name, err)
	}
	request := &runtimehooksv1.DiscoveryRequest{}
	if err := c.setKind(gvh, request); err != nil {
		return nil, err
	}
	response := &runtimehooksv1.DiscoveryResponse{}
	if err := c.post(ctx, u, ext.Spec.ClientConfig.CABundle, discoveryTimeout, request, response); err != nil {
		return nil, fmt.Errorf("discovering extension %s: %w", ext.Name, err)
	}
	if err := succeeded(response, "extension "+ext.Name+" (discovery)"); err != nil {
		return nil, err
	}
	handlers, err := c.discoveredHandlers(ext.Name, response.Handlers)
	if err != nil {
		return nil, fmt.Errorf("discovering extension %s: %w", ext.Name, err)
	}
	out := ext.DeepCopy()
	out.Status.Handlers = handlers
	return out, nil
}

// discoveredHandlers checks what discovery returned, fills in the defaults (fail
// when unreachable; the Runtime SDK's default timeout) and names the handlers.
func (c *hookClient) discoveredHandlers(extension string, in []runtimehooksv1.ExtensionHandler) ([]runtimev1.ExtensionHandler, error) {
	out := make([]runtimev1.ExtensionHandler, 0, len(in))
	seen := map[string]bool{}
	var errs []error
	for _, h := range in {
		if seen[h.Name] {
			errs = append(errs, fmt.Errorf("handler %s is listed twice", h.Name))
		}
		seen[h.Name] = true
		for _, msg := range validation.IsDNS1123Label(h.Name) {
			errs = append(errs, fmt.Errorf("handler name %q: %s", h.Name, msg))
		}
		timeout := int32(runtimehooksv1.DefaultHandlersTimeoutSeconds)
		if h.TimeoutSeconds != nil {
			timeout = *h.TimeoutSeconds
		}
		if timeout < 0 || timeout > maxHandlerTimeoutSeconds {
			errs = append(errs, fmt.Errorf("handler %s: timeoutSeconds %d is not between 0 and %d", h.Name, timeout, maxHandlerTimeoutSeconds))
		}
		policy := runtimehooksv1.FailurePolicyFail
		if h.FailurePolicy != nil {
			policy = *h.FailurePolicy
		}
		if policy != runtimehooksv1.FailurePolicyFail && policy != runtimehooksv1.FailurePolicyIgnore {
			errs = append(errs, fmt.Errorf("handler %s: failurePolicy %q is neither Fail nor Ignore", h.Name, policy))
		}
		gv, err := schema.ParseGroupVersion(h.RequestHook.APIVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("handler %s: requestHook.apiVersion: %w", h.Name, err))
		} else if !c.catalog.IsHookRegistered(runtimecatalog.GroupVersionHook{Group: gv.Group, Version: gv.Version, Hook: h.RequestHook.Hook}) {
			errs = append(errs, fmt.Errorf("handler %s: hook %s %s is not one this client knows", h.Name, h.RequestHook.APIVersion, h.RequestHook.Hook))
		}
		out = append(out, runtimev1.ExtensionHandler{
			Name:           registeredName(h.Name, extension),
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: h.RequestHook.APIVersion, Hook: h.RequestHook.Hook},
			TimeoutSeconds: timeout,
			FailurePolicy:  runtimev1.FailurePolicy(policy),
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// succeeded turns a response that is not a Success into an error naming who answered.
func succeeded(response runtimehooksv1.ResponseObject, who string) error {
	switch response.GetStatus() {
	case runtimehooksv1.ResponseStatusSuccess:
		return nil
	case runtimehooksv1.ResponseStatusFailure:
		return fmt.Errorf("%s answered Failure: %s", who, response.GetMessage())
	default:
		return fmt.Errorf("%s answered status %q: %s", who, response.GetStatus(), response.GetMessage())
	}
}
