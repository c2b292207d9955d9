package k3smodel

import "crypto/x509/pkix"

// The certificate files a k3s node holds, as its certificate monitor sees them. Read
// from v1.34.9, v1.35.4 and v1.36.2 (the same in all three):
//   - pkg/util/services/services.go: the services and their files (FilesForServices);
//     servers check services.All (server and agent services), agents services.Agent
//     (kube-proxy, kubelet, k3s-controller), and only servers check the CAs;
//   - pkg/daemons/control/deps/deps.go: the paths (CreateRuntimeCertFiles), each
//     certificate's subject and signing CA (genClientCerts, genServerCerts,
//     genETCDCerts, genRequestHeaderCerts); every server generates the etcd
//     certificates, also on a datastore cluster (genCerts calls genETCDCerts always);
//   - pkg/server/handlers/handlers.go: the subjects of the certificates the server
//     signs for a node's agent (ServingKubeletCert, ClientKubeletCert,
//     ClientKubeProxyCert, ClientControllerCert).
//
// Files the monitor lists that hold no certificate on a node (private keys, the
// server-side client-kube-proxy.crt that k3s never writes) are left out: the monitor
// reads nothing from them. The supervisor's own serving certificate (service
// "k3s-server", dynamiclistener's cache) is not checked by k3s and not modelled.

// CAName names one of the cluster's certificate authorities.
type CAName string

// The CAs of a k3s cluster.
const (
	ServerCA        CAName = "server-ca"
	ClientCA        CAName = "client-ca"
	RequestHeaderCA CAName = "request-header-ca"
	ETCDServerCA    CAName = "etcd-server-ca"
	ETCDPeerCA      CAName = "etcd-peer-ca"
)

// CAFiles are the CA certificate files a server's monitor checks (service
// "certificate-authority"), in services.go's order, under the data directory.
var CAFiles = []struct {
	CA   CAName
	Path string
}{
	{ServerCA, "server/tls/server-ca.crt"},
	{ClientCA, "server/tls/client-ca.crt"},
	{RequestHeaderCA, "server/tls/request-header-ca.crt"},
	{ETCDPeerCA, "server/tls/etcd/peer-ca.crt"},
	{ETCDServerCA, "server/tls/etcd/server-ca.crt"},
}

// GeneratedCAPrefix is the prefix of the common name k3s gives a CA it generates
// itself, "<prefix>-ca@<unix seconds>" (deps.go, createSigningCertKey): the CAs
// capk3s does not write into the bootstrap data.
var GeneratedCAPrefix = map[CAName]string{
	ServerCA:        "k3s-server",
	ClientCA:        "k3s-client",
	RequestHeaderCA: "k3s-request-header",
	ETCDServerCA:    "etcd-server",
	ETCDPeerCA:      "etcd-peer",
}

// LeafFile is one leaf certificate file of a node.
type LeafFile struct {
	// Service is the certificate monitor's service the file belongs to.
	Service string
	// Path is the file under k3s's data directory (/var/lib/rancher/k3s).
	Path string
	// Subject is the certificate's subject.
	Subject pkix.Name
	// CA signs it; the file holds the certificate followed by that CA's certificate
	// (util.EncodeCertsPEM), and the monitor checks both.
	CA CAName
	// FromServer marks the agent's certificates, which the node asks a server to sign
	// at every k3s start (pkg/agent/config/config.go, get: getKubeletServingCert,
	// getKubeletClientCert, getClientCert), whatever their remaining lifetime. The
	// others are a server's own, regenerated at start only inside the renewal window.
	FromServer bool
}

// KubeletClientPath is the kubelet's client certificate: the one whose expiry stops
// the Node's status from being posted.
const KubeletClientPath = "agent/client-kubelet.crt"

// serverLeafFiles are a server's own leaf certificates, by service in services.go's
// order.
var serverLeafFiles = []LeafFile{
	{Service: "api-server", Path: "server/tls/client-kube-apiserver.crt", Subject: subject("system:apiserver", "system:masters"), CA: ClientCA},
	{Service: "api-server", Path: "server/tls/serving-kube-apiserver.crt", Subject: subject("kube-apiserver"), CA: ServerCA},
	{Service: "admin", Path: "server/tls/client-admin.crt", Subject: subject("system:admin", "system:masters"), CA: ClientCA},
	{Service: "auth-proxy", Path: "server/tls/client-auth-proxy.crt", Subject: subject("system:auth-proxy"), CA: RequestHeaderCA},
	{Service: "cloud-controller", Path: "server/tls/client-k3s-cloud-controller.crt", Subject: subject("k3s-cloud-controller-manager"), CA: ClientCA},
	{Service: "controller-manager", Path: "server/tls/client-controller.crt", Subject: subject("system:kube-controller-manager"), CA: ClientCA},
	{Service: "controller-manager", Path: "server/tls/kube-controller-manager/kube-controller-manager.crt", Subject: subject("kube-controller-manager"), CA: ServerCA},
	{Service: "etcd", Path: "server/tls/etcd/client.crt", Subject: subject("etcd-client"), CA: ETCDServerCA},
	{Service: "etcd", Path: "server/tls/etcd/server-client.crt", Subject: subject("etcd-server"), CA: ETCDServerCA},
	{Service: "etcd", Path: "server/tls/etcd/peer-server-client.crt", Subject: subject("etcd-peer"), CA: ETCDPeerCA},
	{Service: "scheduler", Path: "server/tls/client-scheduler.crt", Subject: subject("system:kube-scheduler"), CA: ClientCA},
	{Service: "scheduler", Path: "server/tls/kube-scheduler/kube-scheduler.crt", Subject: subject("kube-scheduler"), CA: ServerCA},
	{Service: "supervisor", Path: "server/tls/client-supervisor.crt", Subject: subject("system:k3s-supervisor", "system:masters"), CA: ClientCA},
}

// agentLeafFiles are the agent's certificates of a node with the given name, which
// servers hold too (a server runs an agent).
func agentLeafFiles(node string) []LeafFile {
	return []LeafFile{
		{Service: "kube-proxy", Path: "agent/client-kube-proxy.crt", Subject: subject("system:kube-proxy"), CA: ClientCA, FromServer: true},
		{Service: "kubelet", Path: KubeletClientPath, Subject: subject("system:node:"+node, "system:nodes"), CA: ClientCA, FromServer: true},
		{Service: "kubelet", Path: "agent/serving-kubelet.crt", Subject: subject(node), CA: ServerCA, FromServer: true},
		{Service: "k3s-controller", Path: "agent/client-k3s-controller.crt", Subject: subject("system:k3s-controller"), CA: ClientCA, FromServer: true},
	}
}

// LeafFiles are the leaf certificate files of a node: a server's own and its agent's,
// or an agent's.
func LeafFiles(server bool, node string) []LeafFile {
	if !server {
		return agentLeafFiles(node)
	}
	return append(append([]LeafFile{}, serverLeafFiles...), agentLeafFiles(node)...)
}

func subject(cn string, orgs ...string) pkix.Name {
	return pkix.Name{CommonName: cn, Organization: orgs}
}
