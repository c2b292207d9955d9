package cloudinit

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	testToken      = "K10deadbeef::server:s3cr3t"
	testAgentToken = "K10deadbeef::node:ag3nt"
	testServerURL  = "https://cp.example.com:6443"
	wantInstall    = "curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server"
	serverSentinel = "systemctl is-active --quiet k3s && mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete"
	agentSentinel  = "systemctl is-active --quiet k3s-agent && mkdir -p /run/cluster-api && echo success > /run/cluster-api/bootstrap-success.complete"
)

func serverSpec() bootstrapv1.KThreesConfigSpec {
	return bootstrapv1.KThreesConfigSpec{
		PreK3sCommands:  []string{"echo pre-1", "echo 'pre 2' > /tmp/pre"},
		PostK3sCommands: []string{"echo post-1"},
		AgentConfig: bootstrapv1.KThreesAgentConfig{
			NodeLabels:    []string{"tier=control"},
			NodeTaints:    []string{"dedicated=cp:NoSchedule"},
			KubeletArgs:   []string{"max-pods=200"},
			KubeProxyArgs: []string{"metrics-bind-address=0.0.0.0"},
			NodeName:      "cp-0",
		},
		ServerConfig: bootstrapv1.KThreesServerConfig{
			KubeAPIServerArgs:         []string{"anonymous-auth=false"},
			KubeControllerManagerArgs: []string{"bind-address=0.0.0.0"},
			KubeSchedulerArgs:         []string{"bind-address=0.0.0.0"},
			TLSSan:                    []string{"cp.example.com", "10.0.0.10"},
			BindAddress:               "0.0.0.0",
			HTTPSListenPort:           "6443",
			AdvertiseAddress:          "10.0.0.10",
			AdvertisePort:             "6443",
			ClusterCidr:               "10.42.0.0/16",
			ServiceCidr:               "10.43.0.0/16",
			ClusterDNS:                "10.43.0.10",
			ClusterDomain:             "cluster.local",
			DisableComponents:         []string{"traefik", "servicelb"},
			SystemDefaultRegistry:     "registry.example.com",
		},
	}
}

func testDatastore() *Datastore {
	return &Datastore{
		Endpoint:   "postgres://k3s:pa55@db.example.com:5432/k3s?sslmode=verify-full",
		CACert:     "-----BEGIN CERTIFICATE-----\nREJDQQ==\n-----END CERTIFICATE-----\n",
		ClientCert: "-----BEGIN CERTIFICATE-----\nREJDTEk=\n-----END CERTIFICATE-----\n",
		ClientKey:  "-----BEGIN EC PRIVATE KEY-----\nREJLRVk=\n-----END EC PRIVATE KEY-----\n",
	}
}

func testEtcd() *bootstrapv1.Etcd {
	return &bootstrapv1.Etcd{
		Snapshots: &bootstrapv1.EtcdSnapshots{
			Schedule: "0 */6 * * *", Retention: ptr.To[int32](10), Directory: "/var/lib/etcd-snapshots", Compress: true,
			S3: &bootstrapv1.EtcdSnapshotsS3{
				Bucket: "backups", Endpoint: "minio.example.com:9000", Region: "eu-west-1", Folder: "cluster-a", SkipSSLVerify: true,
				EndpointCASecret:  &bootstrapv1.SecretKeyReference{Name: "s3-ca", Key: "ca.crt"},
				CredentialsSecret: &bootstrapv1.SecretReference{Name: "s3-creds"},
			},
		},
		RestoreFrom: "etcd-snapshot-cp-0-1700000000",
	}
}

const (
	testS3AccessKey = "AKIAEXAMPLE"
	testS3SecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
)

func testEtcdS3() *EtcdS3 {
	return &EtcdS3{
		AccessKeyID: testS3AccessKey, SecretAccessKey: testS3SecretKey,
		EndpointCA: "-----BEGIN CERTIFICATE-----\nUzNDQQ==\n-----END CERTIFICATE-----\n",
	}
}

func serverCerts() []File {
	return []File{
		{Path: "/var/lib/rancher/k3s/server/tls/server-ca.crt", Permissions: "0644", Content: "-----BEGIN CERTIFICATE-----\nU0VSVkVS\n-----END CERTIFICATE-----\n"},
		// A caller mistake that Render must correct.
		{Path: "/var/lib/rancher/k3s/server/tls/server-ca.key", Permissions: "0644", Content: "-----BEGIN EC PRIVATE KEY-----\nS0VZ\n-----END EC PRIVATE KEY-----\n"},
		{Path: "/var/lib/rancher/k3s/server/tls/client-ca.crt", Content: "-----BEGIN CERTIFICATE-----\nQ0xJRU5U\n-----END CERTIFICATE-----\n"},
		{Path: "/var/lib/rancher/k3s/server/tls/client-ca.key", Permissions: "0600", Content: "-----BEGIN EC PRIVATE KEY-----\nS0VZMg==\n-----END EC PRIVATE KEY-----\n"},
	}
}

func userFiles() []File {
	return []File{
		{Path: "/etc/motd", Content: "hello {{ ds.meta_data.hostname }}\n"},
		{Path: "/opt/data.bin", Owner: "nobody:nogroup", Permissions: "0640", Encoding: bootstrapv1.Base64, Content: "AAEC"},
	}
}

type goldenCase struct {
	name       string
	in         Input
	wantConfig map[string]any
	absent     []string // keys that must not be in config.yaml
	wantRunCmd []string
	wantPaths  []string // write_files paths, in order
}

func goldenCases() []goldenCase {
	serverKeys := func(extra map[string]any) map[string]any {
		m := map[string]any{
			"token":                       testToken,
			"agent-token":                 testAgentToken,
			"node-label":                  anyList("tier=control"),
			"node-taint":                  anyList("dedicated=cp:NoSchedule"),
			"kubelet-arg":                 anyList("cloud-provider=external", "max-pods=200"),
			"kube-proxy-arg":              anyList("metrics-bind-address=0.0.0.0"),
			"node-name":                   "cp-0",
			"kube-apiserver-arg":          anyList("anonymous-auth=false"),
			"kube-controller-manager-arg": anyList("bind-address=0.0.0.0"),
			"kube-scheduler-arg":          anyList("bind-address=0.0.0.0"),
			"tls-san":                     anyList("cp.example.com", "cp-lb.example.com", "10.0.0.10"),
			"bind-address":                "0.0.0.0",
			"https-listen-port":           float64(6443),
			"advertise-address":           "10.0.0.10",
			"advertise-port":              float64(6443),
			"cluster-cidr":                "10.42.0.0/16",
			"service-cidr":                "10.43.0.0/16",
			"cluster-dns":                 "10.43.0.10",
			"cluster-domain":              "cluster.local",
			"disable":                     anyList("traefik", "servicelb"),
			"disable-cloud-controller":    true,
			"system-default-registry":     "registry.example.com",
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	serverPaths := []string{
		"/var/lib/rancher/k3s/server/tls/server-ca.crt",
		"/var/lib/rancher/k3s/server/tls/server-ca.key",
		"/var/lib/rancher/k3s/server/tls/client-ca.crt",
		"/var/lib/rancher/k3s/server/tls/client-ca.key",
		k3sConfigPath,
		"/etc/motd",
		"/opt/data.bin",
	}
	agentSpec := bootstrapv1.KThreesConfigSpec{
		PreK3sCommands:  []string{"echo agent-pre"},
		PostK3sCommands: []string{"echo agent-post-1", "echo agent-post-2"},
		AgentConfig: bootstrapv1.KThreesAgentConfig{
			NodeLabels:  []string{"tier=worker"},
			KubeletArgs: []string{"max-pods=110"},
		},
		// Only the cloud provider is read from serverConfig on an agent.
		ServerConfig: bootstrapv1.KThreesServerConfig{
			CloudProviderName: ptr.To("aws"),
			KubeAPIServerArgs: []string{"ignored=true"},
			TLSSan:            []string{"ignored.example.com"},
			HTTPSListenPort:   "not-a-port-but-ignored",
		},
	}
	airGapped := agentSpec
	airGapped.AgentConfig.AirGapped = true
	airGapped.AgentConfig.AirGappedInstallScriptPath = "/opt/k3s/install it.sh"
	airGapped.ServerConfig = bootstrapv1.KThreesServerConfig{CloudProviderName: ptr.To("")}

	regSpec := bootstrapv1.KThreesConfigSpec{
		AgentConfig: bootstrapv1.KThreesAgentConfig{
			Registries: &bootstrapv1.Registries{
				Mirrors: []bootstrapv1.RegistryMirror{
					{Registry: "docker.io", Endpoints: []string{"https://mirror.example.com", "https://mirror2.example.com"}},
					{Registry: "*", Endpoints: []string{"https://any.example.com"}},
				},
				Configs: []bootstrapv1.RegistryConfig{
					{Registry: "registry.example.com:5000", AuthSecret: &bootstrapv1.SecretReference{Name: "reg-auth"}, CASecret: &bootstrapv1.SecretReference{Name: "reg-ca"}},
					{Registry: "mirror.example.com", AuthSecret: &bootstrapv1.SecretReference{Name: "mirror-auth"}, InsecureSkipVerify: true},
				},
			},
		},
		ServerConfig: bootstrapv1.KThreesServerConfig{
			DeprecatedDisableExternalCloudProvider: true,
			DisableCloudController:                 ptr.To(false),
		},
	}

	dsSpec := serverSpec()
	dsSpec.ServerConfig.Datastore = &bootstrapv1.Datastore{
		EndpointSecret: bootstrapv1.SecretKeyReference{Name: "pg", Key: "endpoint"},
		CASecret:       &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "ca.crt"},
		CertSecret:     &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.crt"},
		KeySecret:      &bootstrapv1.SecretKeyReference{Name: "pg-tls", Key: "tls.key"},
	}
	dsKeys := map[string]any{
		"datastore-endpoint": testDatastore().Endpoint,
		"datastore-cafile":   datastoreCAPath,
		"datastore-certfile": datastoreCertPath,
		"datastore-keyfile":  datastoreKeyPath,
	}
	dsPaths := append([]string{datastoreCAPath, datastoreCertPath, datastoreKeyPath}, serverPaths[4:]...)
	dsPaths = append(append([]string{}, serverPaths[:4]...), dsPaths...)

	etcdSpec := serverSpec()
	etcdSpec.ServerConfig.Etcd = testEtcd()
	etcdKeys := map[string]any{
		"etcd-snapshot-schedule-cron": "0 */6 * * *",
		"etcd-snapshot-retention":     float64(10),
		"etcd-snapshot-dir":           "/var/lib/etcd-snapshots",
		"etcd-snapshot-compress":      true,
		"etcd-s3":                     true,
		"etcd-s3-bucket":              "backups",
		"etcd-s3-endpoint":            "minio.example.com:9000",
		"etcd-s3-region":              "eu-west-1",
		"etcd-s3-folder":              "cluster-a",
		"etcd-s3-skip-ssl-verify":     true,
		"etcd-s3-endpoint-ca":         etcdS3CAPath,
	}
	etcdPaths := append(append(append([]string{}, serverPaths[:4]...), etcdS3CAPath, k3sEnvPath), serverPaths[4:]...)
	withKeys := func(a, b map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = v
		}
		return m
	}

	// k3s makes no snapshot folder but its default one (etcd_dir_test.go).
	wantSnapshotDir := "mkdir -p -m 0700 '/var/lib/etcd-snapshots' || { echo 'capk3s: bootstrap failed: could not create the etcd snapshot folder /var/lib/etcd-snapshots (serverConfig.etcd.snapshots.directory); k3s is not installed' >&2; " +
		"mkdir -p /run/cluster-api && echo 'could not create the etcd snapshot folder /var/lib/etcd-snapshots (serverConfig.etcd.snapshots.directory)' > /run/cluster-api/bootstrap-failed; exit 1; }"
	return []goldenCase{
		{
			// The first server of a restored cluster: snapshots to S3, and a restore
			// before k3s starts.
			name: "server-init-etcd-snapshots",
			in: Input{
				Role: ServerInit, Spec: etcdSpec, Version: "v1.35.4+k3s1",
				Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(), EtcdS3: testEtcdS3(),
			},
			wantConfig: serverKeys(withKeys(etcdKeys, map[string]any{"cluster-init": true})),
			absent:     []string{"etcd-s3-access-key", "etcd-s3-secret-key", "cluster-reset", "cluster-reset-restore-path"},
			wantRunCmd: []string{
				"echo pre-1", "echo 'pre 2' > /tmp/pre", wantSnapshotDir,
				"curl -sfL 'https://get.k3s.io' | INSTALL_K3S_SKIP_START=true INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server",
				"(set -a; [ ! -f /etc/default/k3s ] || . /etc/default/k3s; set +a; k3s server --cluster-reset --cluster-reset-restore-path='etcd-snapshot-cp-0-1700000000') && systemctl start k3s",
				"echo post-1", serverSentinel,
			},
			wantPaths: etcdPaths,
		},
		{
			// Joining servers take snapshots too, and never restore.
			name: "server-join-etcd-snapshots",
			in: Input{
				Role: ServerJoin, Spec: etcdSpec, Version: "v1.35.4+k3s1",
				ServerURL: testServerURL, Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(), EtcdS3: testEtcdS3(),
			},
			wantConfig: serverKeys(withKeys(etcdKeys, map[string]any{"server": testServerURL})),
			absent:     []string{"etcd-s3-access-key", "etcd-s3-secret-key", "cluster-reset", "cluster-reset-restore-path", "cluster-init"},
			wantRunCmd: []string{"echo pre-1", "echo 'pre 2' > /tmp/pre", wantSnapshotDir, wantInstall, "echo post-1", serverSentinel},
			wantPaths:  etcdPaths,
		},
		{
			name: "server-init-datastore",
			in: Input{
				Role: ServerInit, Spec: dsSpec, Version: "v1.35.4+k3s1",
				Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(), Datastore: testDatastore(),
			},
			wantConfig: serverKeys(dsKeys),
			absent:     []string{"cluster-init", "server"},
			wantRunCmd: []string{"echo pre-1", "echo 'pre 2' > /tmp/pre", wantInstall, "echo post-1", serverSentinel},
			wantPaths:  dsPaths,
		},
		{
			// Joining servers find the cluster in the datastore: no server URL.
			name: "server-join-datastore",
			in: Input{
				Role: ServerJoin, Spec: dsSpec, Version: "v1.35.4+k3s1",
				Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(), Datastore: testDatastore(),
			},
			wantConfig: serverKeys(dsKeys),
			absent:     []string{"cluster-init", "server"},
			wantRunCmd: []string{"echo pre-1", "echo 'pre 2' > /tmp/pre", wantInstall, "echo post-1", serverSentinel},
			wantPaths:  dsPaths,
		},
		{
			name: "server-init",
			in: Input{
				Role: ServerInit, Spec: serverSpec(), Version: "v1.35.4+k3s1",
				Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(),
			},
			wantConfig: serverKeys(map[string]any{"cluster-init": true}),
			absent:     []string{"server", "private-registry"},
			wantRunCmd: []string{"echo pre-1", "echo 'pre 2' > /tmp/pre", wantInstall, "echo post-1", serverSentinel},
			wantPaths:  serverPaths,
		},
		{
			name: "server-join",
			in: Input{
				Role: ServerJoin, Spec: serverSpec(), Version: "1.35.4+k3s1", // "v" is added
				ServerURL: testServerURL, Token: testToken, AgentToken: testAgentToken,
				TLSSANs:      []string{"cp.example.com", "cp-lb.example.com"},
				Certificates: serverCerts(), Files: userFiles(),
			},
			wantConfig: serverKeys(map[string]any{"server": testServerURL}),
			absent:     []string{"cluster-init"},
			wantRunCmd: []string{"echo pre-1", "echo 'pre 2' > /tmp/pre", wantInstall, "echo post-1", serverSentinel},
			wantPaths:  serverPaths,
		},
		{
			name: "agent",
			in: Input{
				Role: Agent, Spec: agentSpec, Version: "v1.35.4+k3s1",
				ServerURL: testServerURL, Token: "K10deadbeef::node:ag3nt",
				TLSSANs: []string{"cp.example.com"},
				Files:   []File{{Path: "/etc/motd", Content: "worker\n"}},
			},
			wantConfig: map[string]any{
				"token":       "K10deadbeef::node:ag3nt",
				"server":      testServerURL,
				"node-label":  anyList("tier=worker"),
				"kubelet-arg": anyList("cloud-provider=aws", "max-pods=110"),
				"node-taint":  anyList(uninitializedTaint),
			},
			absent: []string{"agent-token", "kube-apiserver-arg", "cluster-init", "tls-san", "https-listen-port", "disable-cloud-controller"},
			wantRunCmd: []string{
				"echo agent-pre",
				"curl -sfL 'https://get.k3s.io' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - agent",
				"echo agent-post-1", "echo agent-post-2", agentSentinel,
			},
			wantPaths: []string{k3sConfigPath, "/etc/motd"},
		},
		{
			name: "air-gapped",
			in: Input{
				Role: Agent, Spec: airGapped, Version: "v1.34.0-rc1+k3s2",
				ServerURL: testServerURL, Token: "K10deadbeef::node:ag3nt",
			},
			wantConfig: map[string]any{
				"token":       "K10deadbeef::node:ag3nt",
				"server":      testServerURL,
				"node-label":  anyList("tier=worker"),
				"kubelet-arg": anyList("max-pods=110"),
				"node-taint":  anyList(uninitializedTaint),
			},
			absent: []string{"agent-token", "cluster-init"},
			wantRunCmd: []string{
				"echo agent-pre",
				"INSTALL_K3S_SKIP_DOWNLOAD=true INSTALL_K3S_VERSION='v1.34.0-rc1+k3s2' sh '/opt/k3s/install it.sh' agent",
				"echo agent-post-1", "echo agent-post-2", agentSentinel,
			},
			wantPaths: []string{k3sConfigPath},
		},
		{
			name: "registries",
			in: Input{
				Role: ServerInit, Spec: regSpec, Version: "v1.35.4+k3s1", Token: testToken,
				InstallScriptURL: "https://mirror.example.com/k3s/install.sh?x='1'",
				RegistryCredentials: map[string]RegistryCredentials{
					"registry.example.com:5000": {Username: "bob", Password: "p@ss: 'word'", CACert: "-----BEGIN CERTIFICATE-----\nUkVH\n-----END CERTIFICATE-----\n"},
					"mirror.example.com":        {IdentityToken: "idtok"},
				},
			},
			wantConfig: map[string]any{"token": testToken, "cluster-init": true},
			absent:     []string{"private-registry", "kubelet-arg", "disable-cloud-controller"},
			wantRunCmd: []string{
				`curl -sfL 'https://mirror.example.com/k3s/install.sh?x='\''1'\''' | INSTALL_K3S_VERSION='v1.35.4+k3s1' sh -s - server`,
				serverSentinel,
			},
			wantPaths: []string{k3sConfigPath, registriesPath, "/etc/rancher/k3s/registries.d/registry.example.com_3a5000/ca.crt"},
		},
		osSetupGoldenCase(),
	}
}

func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(tc.in)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			golden := filepath.Join("testdata", tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if string(out) != string(want) {
				t.Errorf("output differs from %s (run with -update if intended):\n%s", golden, out)
			}

			p := parse(t, out)
			var paths []string
			for _, f := range p.WriteFiles {
				paths = append(paths, f.Path)
				if f.Path == k3sConfigPath || strings.HasSuffix(f.Path, ".key") {
					if f.Permissions != "0600" {
						t.Errorf("%s permissions = %q, want 0600", f.Path, f.Permissions)
					}
				}
			}
			if !reflect.DeepEqual(paths, tc.wantPaths) {
				t.Errorf("write_files paths = %q, want %q", paths, tc.wantPaths)
			}
			if got := p.k3sConfig(t); !reflect.DeepEqual(got, tc.wantConfig) {
				t.Errorf("config.yaml = %#v\nwant %#v", got, tc.wantConfig)
			} else {
				for _, k := range tc.absent {
					if _, ok := got[k]; ok {
						t.Errorf("config.yaml has %q", k)
					}
				}
			}
			if !reflect.DeepEqual(p.RunCmd, tc.wantRunCmd) {
				t.Errorf("runcmd = %q\nwant %q", p.RunCmd, tc.wantRunCmd)
			}
		})
	}
}

// TestRenderGoldenFiles checks the details that the per-case loop above does not:
// user files, certificate modes and registries.yaml.
func TestRenderGoldenFiles(t *testing.T) {
	cases := map[string]Input{}
	for _, tc := range goldenCases() {
		cases[tc.name] = tc.in
	}
	render := func(name string) parsed {
		out, err := Render(cases[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return parse(t, out)
	}

	p := render("server-init")
	if f := p.file(t, "/var/lib/rancher/k3s/server/tls/server-ca.crt"); f.Permissions != "0644" || f.Owner != "root:root" {
		t.Errorf("server-ca.crt = %+v, want root:root 0644", f)
	}
	if f := p.file(t, "/opt/data.bin"); f != (writeFile{Path: "/opt/data.bin", Owner: "nobody:nogroup", Permissions: "0640", Encoding: "b64", Content: "AAEC"}) {
		t.Errorf("data.bin = %+v", f)
	}
	if f := p.file(t, "/etc/motd"); f.Content != "hello {{ ds.meta_data.hostname }}\n" || f.Encoding != "" || f.Permissions != "0644" {
		t.Errorf("motd = %+v", f)
	}

	p = render("server-join-datastore")
	for path, content := range map[string]string{
		datastoreCAPath: testDatastore().CACert, datastoreCertPath: testDatastore().ClientCert, datastoreKeyPath: testDatastore().ClientKey,
	} {
		if f := p.file(t, path); f.Permissions != "0600" || f.Owner != "root:root" || f.Content != content {
			t.Errorf("%s = %+v, want root:root 0600 with the Secret's PEM", path, f)
		}
	}

	p = render("registries")
	ca := p.file(t, "/etc/rancher/k3s/registries.d/registry.example.com_3a5000/ca.crt")
	if ca.Permissions != "0600" || ca.Content != "-----BEGIN CERTIFICATE-----\nUkVH\n-----END CERTIFICATE-----\n" {
		t.Errorf("registry CA = %+v", ca)
	}
	reg := p.file(t, registriesPath)
	if reg.Permissions != "0600" {
		t.Errorf("registries.yaml permissions = %q, want 0600", reg.Permissions)
	}
	var got map[string]any
	if err := yaml.Unmarshal([]byte(reg.Content), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"mirrors": map[string]any{
			"docker.io": map[string]any{"endpoint": anyList("https://mirror.example.com", "https://mirror2.example.com")},
			"*":         map[string]any{"endpoint": anyList("https://any.example.com")},
		},
		"configs": map[string]any{
			"registry.example.com:5000": map[string]any{
				"auth": map[string]any{"username": "bob", "password": "p@ss: 'word'"},
				"tls":  map[string]any{"ca_file": "/etc/rancher/k3s/registries.d/registry.example.com_3a5000/ca.crt"},
			},
			"mirror.example.com": map[string]any{
				"auth": map[string]any{"identity_token": "idtok"},
				"tls":  map[string]any{"insecure_skip_verify": true},
			},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registries.yaml = %#v\nwant %#v", got, want)
	}
}
