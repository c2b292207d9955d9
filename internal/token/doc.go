// Package token owns the k3s join token of a cluster: the Secret "<cluster>-token"
// (type cluster.x-k8s.io/secret, label cluster.x-k8s.io/cluster-name) whose key "value"
// holds the server passphrase and, for clusters that capk3s created, whose key
// "agent-value" holds the agent passphrase (k3s's agent-token).
//
// Two sides use it:
//   - the control plane calls Reconcile on every pass. It creates the Secret before the
//     cluster is initialized, makes the KThreesControlPlane its controller (taking over
//     Secrets that older software gave to a KThreesConfig, whose rollout then made the
//     garbage collector delete the token), and writes nothing when all is right. A Secret
//     lost after initialization is never replaced by a new random value — the servers
//     still hold the old one — but recovered from a server's bootstrap data, or reported
//     as lost;
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
// joining node downloads the CA bundle from the server's /cacerts endpoint and compares
// its SHA-256 with <ca-hash>; for a self-signed CA that is the SHA-256 of the PEM
// certificate file as stored on disk (server/tls/server-ca.crt), and newer k3s also
// accepts the SHA-256 of the DER encoding of the bundle's root certificate. Older k3s
// releases only accept the first form, so capk3s hashes the exact PEM bytes that the
// servers receive as server-ca.crt; the bootstrap data must write those bytes
// unchanged. A node joining a server with any other CA then refuses to send its
// credentials.
//
// The token never appears in a log line, an event or a condition message.
package token
