// Package conversion converts capk3s's deprecated v1beta1 kinds (cluster-api-k3s's
// v1beta1 API) to and from the v1beta2 hub, for the CRDs' conversion webhooks. The
// converters are registered with controller-runtime's hub-and-spoke webhook builder
// (WithConverter), as Cluster API's own providers do, so that api/ holds types only.
//
// Conversion is lossless both ways. What the other version cannot express is kept in
// an annotation (see preserve.go) together with a digest of what this version said at
// the time; it is restored whole while this version is unchanged, and otherwise only
// the fields without a home on this side are taken over, so an edit made through one
// version is never undone by stale data kept for the other.
package conversion
