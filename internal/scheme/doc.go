// Package scheme builds the runtime schemes of the capk3s managers: the
// Kubernetes core kinds, CRDs, Cluster API core kinds and the capk3s API
// groups each binary works with. It lives apart from the mains so tests and
// future tools can build the exact same schemes.
package scheme
