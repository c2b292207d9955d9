// Package k3smodel is the simulator's picture of k3s, written from k3s's own source and
// kept apart from the product: it never imports internal/ (internal/k3s or any other
// product table), so that a wrong belief in the product shows as a machine the
// simulator refuses, not as a blind spot both share.
//
// Every rule cites the k3s file it was read from and the minor (and, where behaviour
// changed inside a minor, the patch release) it holds for. The k3s commits read are
// listed in Minors; how to add a minor is in docs/design.md ("The simulator's k3s
// model").
package k3smodel
