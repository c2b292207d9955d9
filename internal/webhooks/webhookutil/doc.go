// Package webhookutil holds what the bootstrap and control-plane webhooks share
// about templates whose spec.template.spec is immutable (KThreesConfigTemplate,
// KThreesControlPlaneTemplate): telling the user which fields an update touched,
// letting Cluster API's topology dry runs through as the provider contracts require,
// and building the Invalid error the apiserver returns.
package webhookutil
