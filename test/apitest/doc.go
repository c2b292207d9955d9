// Package apitest checks capk3s's CRDs as a real kube-apiserver serves them: objects
// are accepted and kept whole, the scale subresource works, and invalid objects are
// rejected with a message that names the field.
package apitest
