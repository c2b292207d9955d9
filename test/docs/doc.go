// Package docs keeps documentation tied to the code it describes. The CAPI contract
// checklist in docs/design.md names, for each rule capk3s meets, the tests that prove
// it; this package's test fails when a named test or helper no longer exists, when a
// row marked met names no test and does not say so, or when it still says "not
// implemented". It reads files only: no apiserver, no build of the tested packages.
package docs
