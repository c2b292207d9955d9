// Package conversion converts capk3s's deprecated v1beta1 kinds (cluster-api-k3s's
// v1beta1 API) to and from the v1beta2 hub, for the CRDs' conversion webhooks. The
// converters are registered with controller-runtime's hub-and-spoke webhook builder
// (WithConverter), as Cluster API's own providers do, so that api/ holds types only.
// What conversion reads besides the object (a template CRD's versions, the stored
// object) comes through the Lookups each manager builds its converters with; the
// package holds no state of its own.
//
// Conversion is lossless both ways. What the other version cannot express, and only
// that, is kept in an annotation as a JSON merge patch over the plain conversion (see
// preserve.go and patch.go), together with a digest of what this version said at the
// time; it is applied whole while this version is unchanged, and otherwise only the
// fields without a home on this side are taken over, so an edit made through one
// version is never undone by stale data kept for the other. Fields that may carry
// credentials are never kept (withheld.go): those both versions have need not be,
// and v1beta2's extraConfig and bootCommands come back from the stored object.
package conversion
