package manager

// The diagnostics endpoint (--diagnostics-address, served with authentication and
// authorization unless --insecure-diagnostics) asks the API server who a caller is
// and whether it may read metrics. Both managers' generated roles include these
// rules because `make generate` reads this package for each of them.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
