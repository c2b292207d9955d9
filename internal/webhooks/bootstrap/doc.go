// Package bootstrap holds the admission webhooks of the bootstrap provider's kinds,
// KThreesConfig and KThreesConfigTemplate.
//
// The CRD schema already rejects what OpenAPI and CEL can express on one field
// (encoding enum, permissions and version patterns, content with contentFrom,
// privateRegistry with registries). These webhooks add the rules that need parsing or
// a look at several list items at once: semantic versions, clean absolute file paths
// that do not collide, decodable base64, port ranges, mirror endpoint URLs, unique
// registry hosts, contentFrom naming a Secret or ConfigMap that can exist,
// additionalUserData that parses and sets nothing capk3s writes (filesource.go, and
// cloudinit.AdditionalUserDataErrors), and the immutability of a template's spec. They catch at admission
// what would otherwise surface as a machine that never joins.
//
// Defaulting is deliberately minimal (see defaults.go): it only normalizes the
// version, so that what a user wrote is what the renderer sees.
//
// cluster-api-k3s's serverConfig.etcdProxyImage is kept by the schema but ignored;
// validation returns an admission warning that says so (warnings.go), rather than a
// strict client failing on an unknown field or another client losing it silently.
//
// ValidateSpec and DefaultSpec are exported so the control-plane webhooks can apply
// the same rules to the KThreesConfigSpec that KThreesControlPlane embeds.
package bootstrap
