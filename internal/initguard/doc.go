// Package initguard answers one question for the control plane before it
// generates a cluster secret that is missing (the join token, a CA): may a server
// already hold the old one? If so, a new value would be refused by the servers
// that run, or break the one that boots, so the secret must be recovered or
// reported, never generated anew.
//
// The answer is yes when the control plane's or the Cluster's status says the
// control plane is initialized — in the cached copies the controller has, and,
// when they say no, as the apiserver has them now — or when any server has been
// given bootstrap data: its Machine names a data Secret, or a KThreesConfig the
// control plane owns has written one (which happens before CAPI copies the name
// onto the Machine). Bootstrap data embeds the token and the CAs, so a server
// that booted from it holds them even while the status does not say so, e.g.
// when the status was lost.
//
// The same list of server data Secrets serves token recovery, which reads the
// token back from them.
package initguard
