package sim

import "strings"

// k3s's options, by the subcommand that takes them: what its config file may hold
// (k3s reads each key as the flag of the same name). Agents take agentOptions;
// servers take both. Kept to the options of current k3s releases; a key outside
// them is a typo or an option for the other role, which k3s would refuse.
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
		default-local-storage-path disable disable-scheduler disable-cloud-controller
		disable-kube-proxy disable-network-policy disable-helm-controller
		disable-etcd disable-apiserver disable-controller-manager embedded-registry
		supervisor-metrics secrets-encryption secrets-encryption-provider
		kube-apiserver-extra-mount kube-scheduler-extra-mount`)
)

func optionSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// knownOption says whether role's k3s takes key. A trailing "+" (k3s's syntax for
// appending to a list from another config file) is part of no option's name.
func knownOption(role, key string) bool {
	key = strings.TrimSuffix(key, "+")
	if agentOptions[key] {
		return true
	}
	return role == roleServer && serverOnlyOptions[key]
}
