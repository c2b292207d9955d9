package manager

// The diagnostics endpoint (--diagnostics-address, served with authentication and
// authorization unless --insecure-diagnostics) asks the API server who a caller is
// and whether it may read metrics. Both managers' generated roles include these
// rules because `make generate` reads this package for each of them.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Both managers serve their CRDs' conversion webhooks and give the converters a
// reader of CRDs (internal/webhooks, SetupWebhooks): converting a KThreesControlPlane
// down to v1beta1 may read an infrastructure template's CRD, metadata only, through
// the manager's cache, for the apiVersion to write. The bootstrap kinds need no such
// read today; their manager may make it anyway, so that a converter which comes to
// need it does not fail on RBAC alone.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
