// Package cloudinit renders the bootstrap data that installs k3s on a Cluster API
// machine: a cloud-config, or with spec.format "ignition" an Ignition config. Both
// encode one plan (plan.go): the files and commands below. It is a pure function of its Input: the caller resolves Secrets, tokens
// and CA material first, so that rendering can be tested without a cluster and
// cannot fail half-way through talking to the API server.
//
// The document has no "## template: jinja" header, so "{{ }}" in user files and
// commands reaches the machine verbatim. Every YAML document, including the k3s
// config and registries.yaml carried inside it, is produced by sigs.k8s.io/yaml:
// string concatenation cannot be trusted to quote user content correctly.
//
// write_files, in this order (a path may appear only once):
//
//	certificates                       servers only, *.key forced to 0600
//	/etc/rancher/k3s/config.yaml       0600, holds the token
//	/etc/rancher/k3s/registries.yaml   0600, when spec.agentConfig.registries is set
//	/etc/rancher/k3s/registries.d/<host>/ca.crt   0600, one per registry caSecret
//	user files                         in spec order
//
// In cloud-config a file owned by an account that spec.users creates is written
// with defer: true (after users_groups), and one with a numeric owner root:root,
// then chowned by the first runcmd lines (cloudconfig_owner.go): write_files
// resolves owners by name, before users exist.
//
// Content that YAML cannot carry byte for byte (invalid UTF-8, NUL and other
// controls, "\r", a lone "=" that cloud-init's YAML 1.1 parser would take for a
// typed value, ...) is written base64 encoded instead, and raw gzip content as
// gz+b64; cloud-init decodes it, so the file on disk is unchanged. Commands,
// paths and owners cannot be re-encoded, so the few such strings are errors.
//
// runcmd: (cloud-config only) the chowns of numeric owners, the chmods of setuid/setgid
// files, the check that cloud-init wrote every file and created every user
// (cloudconfig_check.go; on a mismatch the script stops), preK3sCommands, on servers
// the creation of serverConfig.etcd.snapshots.directory (k3s creates only its default
// folder), the k3s install, postK3sCommands, then the sentinel
// /run/cluster-api/bootstrap-success.complete, written only if the k3s (or
// k3s-agent) unit is active.
//
// OS setup (ossetup*.go): bootCommands as bootcmd, ntp, users (passwd from
// Input.UserPasswords, crypt hashes only), diskSetup as disk_setup and fs_setup
// (a partition number in the device name, with a device_aliases entry:
// ossetup_cloudconfig_disk.go), and mounts; in Ignition as a boot-commands unit,
// a timesyncd drop-in, passwd.users, storage.disks/filesystems and mount units.
// IgnitionOSSetupErrors lists what Ignition cannot carry; Render refuses it, as
// the webhook does.
//
// The user's own additional user data (userdata.go) is merged last: cloud-config
// keys are appended after capk3s's document (keys capk3s writes are refused), an
// Ignition fragment is merged by Ignition's rules (paths, units and users capk3s
// writes are refused). AdditionalUserDataErrors is shared with the webhook.
//
// # k3s config.yaml
//
// Empty values are omitted, and so k3s keeps its own default.
//
//	API field / Input                            k3s key                      roles
//	-------------------------------------------  ---------------------------  ---------------
//	Input.Token                                  token                        all
//	Input.ServerURL                              server                       join, agent
//	(role ServerInit)                            cluster-init: true           init
//	Input.AgentToken                             agent-token                  init, join
//	agentConfig.nodeLabels                       node-label                   all
//	agentConfig.nodeTaints                       node-taint                   all
//	(role Agent) (8)                             node-taint                   agent
//	serverConfig.cloudProviderName (1)           kubelet-arg cloud-provider=  all
//	agentConfig.kubeletArgs                      kubelet-arg                  all
//	agentConfig.kubeProxyArgs                    kube-proxy-arg               all
//	agentConfig.nodeName                         node-name                    all
//	agentConfig.privateRegistry (2)              private-registry             all
//	serverConfig.kubeAPIServerArg                kube-apiserver-arg           init, join
//	serverConfig.kubeControllerManagerArgs       kube-controller-manager-arg  init, join
//	serverConfig.kubeSchedulerArgs               kube-scheduler-arg           init, join
//	Input.TLSSANs + serverConfig.tlsSan (3)      tls-san                      init, join
//	serverConfig.bindAddress                     bind-address                 init, join
//	serverConfig.httpsListenPort (4)             https-listen-port            init, join
//	serverConfig.advertiseAddress                advertise-address            init, join
//	serverConfig.advertisePort (4)               advertise-port               init, join
//	serverConfig.clusterCidr                     cluster-cidr                 init, join
//	serverConfig.serviceCidr                     service-cidr                 init, join
//	serverConfig.clusterDNS                      cluster-dns                  init, join
//	serverConfig.clusterDomain                   cluster-domain               init, join
//	serverConfig.disableComponents               disable                      init, join
//	serverConfig.disableCloudController (5)      disable-cloud-controller     init, join
//	serverConfig.systemDefaultRegistry           system-default-registry      init, join
//	serverConfig.etcd.snapshots.* (7)            etcd-snapshot-*, etcd-s3-*   init, join
//	agentConfig.registries                       (registries.yaml, see above) all
//	agentConfig.airGapped, airGappedInstallScriptPath   (install command)     all
//	agentConfig.extraConfig (6)                  as given                     all
//	serverConfig.extraConfig (6)                 as given                     init, join
//
// (1) nil means "external"; "" sets nothing; the deprecated
// serverConfig.disableExternalCloudProvider=true also sets nothing. It comes before
// kubeletArgs, so a cloud-provider flag there wins. Agents read it from their own
// spec's serverConfig: this is the one serverConfig setting that agents use.
// (2) With registries, capk3s writes registries.yaml at k3s's default path, so no
// private-registry key is needed; setting both is an error.
// (3) Caller's SANs first, then the spec's, duplicates dropped.
// (4) Written as integers; anything but 1-65535 is an error.
// (5) nil means true, since Cluster API clusters bring their own cloud controller.
// (6) After the typed fields, which win: a key they wrote, or one capk3s manages
// (internal/k3s.ManagedOptions), is skipped. On servers serverConfig.extraConfig
// wins over agentConfig.extraConfig. A key k3s does not take for the role, or a
// value other than a string, bool, number or list of strings, is an error.
// (7) Not with a datastore. The S3 credentials go to /etc/default/k3s (0600) as
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the endpoint CA to a 0600 file named by
// etcd-s3-endpoint-ca. serverConfig.etcd.restoreFrom is no option: on the init server
// only, the install skips starting k3s and a command restores before starting it.
// (8) Agents add Cluster API's node.cluster.x-k8s.io/uninitialized:NoSchedule after
// the user's taints (once); CAPI removes it when the Node matches its Machine.
//
// # registries.yaml
//
//	registries.mirrors[].registry/endpoints   mirrors.<registry>.endpoint
//	registries.configs[].authSecret           configs.<registry>.auth.{username,password,auth,identity_token}
//	registries.configs[].caSecret             configs.<registry>.tls.ca_file
//	registries.configs[].insecureSkipVerify   configs.<registry>.tls.insecure_skip_verify
package cloudinit
