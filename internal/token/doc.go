// Package token owns the k3s join token of a cluster: the Secret "<cluster>-token"
// (type cluster.x-k8s.io/secret, label cluster.x-k8s.io/cluster-name) whose key "value"
// holds the server passphrase and, for clusters that capk3s created, whose key
// "agent-value" holds the agent passphrase (k3s's agent-token).
//
// Two sides use it:
//   - the control plane calls Reconcile on every pass. It creates the Secret before any
//     server can hold a token, makes the KThreesControlPlane its controller (taking over
//     Secrets that older software gave to a KThreesConfig, whose rollout then made the
//     garbage collector delete the token), and writes nothing when all is right. A
//     Secret that other software controls (SealedSecrets, External Secrets: see
//     ownerref.ExternalController) is used as it is and never written. A Secret lost
//     once servers may hold the token (initguard.Started) is never replaced by a new
//     random value but recovered from a server's bootstrap data — cloud-config or
//     Ignition, named by a Machine or written by one of the control plane's
//     KThreesConfigs — or reported as lost;
//   - the bootstrap side calls Lookup, which only reads.
//
// Agent token placement: the agent passphrase lives in the same Secret under
// "agent-value", so one object is owned, taken over and recovered as a whole. A Secret
// taken over without that key keeps serving the server passphrase to agents, because
// the servers of such a cluster were started without an agent-token and would refuse
// a new one.
//
// Secure join tokens: what k3s receives is "K10<ca-hash>::server:<passphrase>" (agents
// "K10<ca-hash>::node:<agent passphrase>"). k3s's documentation (cli/token) says the
// joining node downloads the CA bundle from the server's /cacerts endpoint, hashes it
// and compares the hash with <ca-hash> before sending credentials: for a self-signed
// CA the SHA-256 of the PEM certificate as stored on disk (server/tls/server-ca.crt),
// for a custom CA bundle the SHA-256 of the DER encoding of its root certificate.
// k3s's code (pkg/clientaccess) decides by the number of certificates in the bundle:
// one certificate, the literal file bytes; more, the root's DER. capk3s gives servers
// one CA certificate, so the hash is over the exact PEM bytes that the servers receive
// as server-ca.crt, which the bootstrap data must write unchanged; CAHash follows
// k3s's rule for bundles too. A node joining a server with any other CA then refuses
// to send its credentials.
//
// The token never appears in a log line, an event or a condition message.
package token
