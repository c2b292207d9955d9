package k3s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// UnsupportedOptions are k3s options capk3s cannot honour, each to why: setting one
// would leave k3s running where capk3s does not look for it. Unlike ManagedOptions no
// field sets them; the webhooks refuse them and the renderer will not write them.
var UnsupportedOptions = map[string]string{
	// Hidden in k3s (pkg/cli/cmds/server.go, v1.34-v1.36); pkg/cli/server/server.go
	// falls back to https-listen-port only when it is unset.
	"supervisor-port": "capk3s does not support k3s's supervisor-port: it reaches k3s's supervisor (joins, the registration check, " +
		"etcd snapshots and restores) on the control plane endpoint's port, which is the https port (serverConfig.httpsListenPort); " +
		"a supervisor on another port would be unreachable to all of them",
}

// OptionName is the option a config key sets: a trailing "+" (k3s's syntax for
// appending to a list from another config file) is part of no option's name.
func OptionName(key string) string {
	return strings.TrimSuffix(key, "+")
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
