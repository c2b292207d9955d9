package k3s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The roles whose options KnownOption knows: k3s's two subcommands that read
// config.yaml.
const (
	RoleServer = "server"
	RoleAgent  = "agent"
)

// k3s's options, by the subcommand that takes them: what its config file may hold
// (k3s reads each key as the flag of the same name). Agents take agentOptions;
// servers take both. Checked against k3s v1.32's `k3s server --help` and
// `k3s agent --help` as the k3s docs list them; the lists were carried over from the
// simulator (test/sim), which checks every key capk3s renders against them. A key
// outside them is a typo or an option for the other role, which k3s would refuse.
var (
	agentOptions = optionSet(`
		token token-file server data-dir node-name with-node-id node-label node-taint
		image-credential-provider-bin-dir image-credential-provider-config docker
		container-runtime-endpoint default-runtime image-service-endpoint
		disable-default-registry-endpoint nonroot-devices pause-image snapshotter
		private-registry system-default-registry node-ip node-external-ip
		node-internal-dns node-external-dns resolv-conf flannel-iface flannel-conf
		flannel-cni-conf-dir kubelet-arg kube-proxy-arg protect-kernel-defaults selinux
		lb-server-port rootless prefer-bundled-bin vpn-auth vpn-auth-file debug v
		vmodule log alsologtostderr airgap-extra-registry enable-pprof
		disable-apiserver-lb bind-address`)

	serverOnlyOptions = optionSet(`
		cluster-init cluster-reset cluster-reset-restore-path agent-token
		agent-token-file advertise-address advertise-port tls-san tls-san-security
		https-listen-port supervisor-port apiserver-port apiserver-bind-address
		cluster-cidr service-cidr service-node-port-range cluster-dns cluster-domain
		flannel-backend flannel-ipv6-masq flannel-external-ip egress-selector-mode
		servicelb-namespace write-kubeconfig write-kubeconfig-mode
		write-kubeconfig-group helm-job-image etcd-arg kube-apiserver-arg
		kube-scheduler-arg kube-controller-manager-arg
		kube-cloud-controller-manager-arg kine-tls datastore-endpoint datastore-cafile
		datastore-certfile datastore-keyfile etcd-expose-metrics
		etcd-disable-snapshots etcd-snapshot-name etcd-snapshot-schedule-cron
		etcd-snapshot-retention etcd-snapshot-dir etcd-snapshot-compress etcd-s3
		etcd-s3-endpoint etcd-s3-endpoint-ca etcd-s3-skip-ssl-verify
		etcd-s3-access-key etcd-s3-secret-key etcd-s3-bucket etcd-s3-region
		etcd-s3-folder etcd-s3-insecure etcd-s3-timeout etcd-s3-config-secret
		etcd-s3-proxy
		default-local-storage-path disable disable-scheduler disable-cloud-controller
		disable-kube-proxy disable-network-policy disable-helm-controller
		disable-etcd disable-apiserver disable-controller-manager embedded-registry
		supervisor-metrics secrets-encryption secrets-encryption-provider
		kube-apiserver-extra-mount kube-scheduler-extra-mount`)
)

// ManagedOptions are the options capk3s sets itself, each to the field that sets it
// (or to why none does). They are the keys the bootstrap renderer writes from typed
// fields (internal/cloudinit/k3sconfig.go, datastore.go) plus the ones capk3s decides
// alone: the token and how the server joins, the data directory the files it writes
// live in, and etcd resets, which the control plane's own bookkeeping would not see.
// A user setting one beside capk3s would change what capk3s believes about the
// machine, so extraConfig may not hold them.
var ManagedOptions = map[string]string{
	"token":                       "the cluster's join token Secret",
	"token-file":                  "the cluster's join token Secret",
	"agent-token":                 "the cluster's join token Secret",
	"agent-token-file":            "the cluster's join token Secret",
	"server":                      "the control plane endpoint",
	"cluster-init":                "the control plane (it starts etcd on the first server)",
	"cluster-reset":               "serverConfig.etcd.restoreFrom (the control plane resets etcd membership itself)",
	"cluster-reset-restore-path":  "serverConfig.etcd.restoreFrom",
	"data-dir":                    "the default data directory (capk3s writes files under it)",
	"datastore-endpoint":          "serverConfig.datastore",
	"datastore-cafile":            "serverConfig.datastore",
	"datastore-certfile":          "serverConfig.datastore",
	"datastore-keyfile":           "serverConfig.datastore",
	"tls-san":                     "serverConfig.tlsSan",
	"bind-address":                "serverConfig.bindAddress",
	"https-listen-port":           "serverConfig.httpsListenPort",
	"advertise-address":           "serverConfig.advertiseAddress",
	"advertise-port":              "serverConfig.advertisePort",
	"cluster-cidr":                "serverConfig.clusterCidr",
	"service-cidr":                "serverConfig.serviceCidr",
	"cluster-dns":                 "serverConfig.clusterDNS",
	"cluster-domain":              "serverConfig.clusterDomain",
	"disable":                     "serverConfig.disableComponents",
	"disable-cloud-controller":    "serverConfig.disableCloudController",
	"system-default-registry":     "serverConfig.systemDefaultRegistry",
	"kube-apiserver-arg":          "serverConfig.kubeAPIServerArg",
	"kube-controller-manager-arg": "serverConfig.kubeControllerManagerArgs",
	"kube-scheduler-arg":          "serverConfig.kubeSchedulerArgs",
	"node-label":                  "agentConfig.nodeLabels",
	"node-taint":                  "agentConfig.nodeTaints",
	"node-name":                   "agentConfig.nodeName",
	"kubelet-arg":                 "agentConfig.kubeletArgs",
	"kube-proxy-arg":              "agentConfig.kubeProxyArgs",
	"private-registry":            "agentConfig.privateRegistry or agentConfig.registries",
	"etcd-snapshot-schedule-cron": "serverConfig.etcd.snapshots.schedule",
	"etcd-snapshot-retention":     "serverConfig.etcd.snapshots.retention",
	"etcd-snapshot-dir":           "serverConfig.etcd.snapshots.directory",
	"etcd-snapshot-compress":      "serverConfig.etcd.snapshots.compress",
	"etcd-s3":                     "serverConfig.etcd.snapshots.s3",
	"etcd-s3-bucket":              "serverConfig.etcd.snapshots.s3.bucket",
	"etcd-s3-endpoint":            "serverConfig.etcd.snapshots.s3.endpoint",
	"etcd-s3-region":              "serverConfig.etcd.snapshots.s3.region",
	"etcd-s3-folder":              "serverConfig.etcd.snapshots.s3.folder",
	"etcd-s3-insecure":            "serverConfig.etcd.snapshots.s3.insecure",
	"etcd-s3-skip-ssl-verify":     "serverConfig.etcd.snapshots.s3.skipSSLVerify",
	"etcd-s3-endpoint-ca":         "serverConfig.etcd.snapshots.s3.endpointCASecret",
	// Never inline: a secret in extraConfig would sit in the object and in config.yaml.
	"etcd-s3-access-key":    "serverConfig.etcd.snapshots.s3.credentialsSecret (a Secret, never an inline S3 secret)",
	"etcd-s3-secret-key":    "serverConfig.etcd.snapshots.s3.credentialsSecret (a Secret, never an inline S3 secret)",
	"etcd-s3-config-secret": "serverConfig.etcd.snapshots.s3.credentialsSecret",
}

func optionSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// OptionName is the option a config key sets: a trailing "+" (k3s's syntax for
// appending to a list from another config file) is part of no option's name.
func OptionName(key string) string {
	return strings.TrimSuffix(key, "+")
}

// KnownOption says whether role's k3s takes key. Any role other than RoleServer
// gets the options every k3s subcommand takes, and no more.
func KnownOption(role, key string) bool {
	key = OptionName(key)
	if agentOptions[key] {
		return true
	}
	return role == RoleServer && serverOnlyOptions[key]
}

// ServerOnlyOption says whether key is an option servers take and agents do not.
func ServerOnlyOption(key string) bool {
	return serverOnlyOptions[OptionName(key)]
}

// OptionValue decodes a config value given as JSON, accepting only what a k3s flag
// can take: a string, a bool, a number or a list of strings. Numbers stay
// json.Numbers so that they are written back exactly as given.
func OptionValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s, and is not valid JSON: %w", valueKinds, err)
	}
	if dec.More() {
		return nil, errors.New(valueKinds + ", not several JSON values")
	}
	switch v := v.(type) {
	case string, bool, json.Number:
		return v, nil
	case []any:
		for _, e := range v {
			if _, ok := e.(string); !ok {
				return nil, fmt.Errorf("%s, not a list holding %s", valueKinds, jsonKind(e))
			}
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s, not %s", valueKinds, jsonKind(v))
}

const valueKinds = "must be a string, a bool, a number or a list of strings"

// jsonKind names a decoded JSON value's kind for an error message, without the
// value itself: options such as vpn-auth hold secrets.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	default:
		return "an object"
	}
}
