// Package webhooktest holds the test helpers that the bootstrap and control-plane
// webhook tests share: building the admission context that webhook methods called
// directly expect, and checking rejections, whether they come from a webhook method
// or from a real apiserver.
//
// It imports "testing" and serves only tests, so it lives under test/, never in the
// product tree: only _test.go files import it, and nothing in internal/ may.
package webhooktest
