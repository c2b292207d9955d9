package controlplane

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// validSpec is a defaulted spec that uses every field the rules look at, correctly.
func validSpec() controlplanev1.KThreesControlPlaneSpec {
	return controlplanev1.KThreesControlPlaneSpec{
		Replicas: ptr.To[int32](3),
		Version:  "v1.31.4+k3s1",
		MachineTemplate: controlplanev1.KThreesControlPlaneMachineTemplate{
			ObjectMeta: clusterv1.ObjectMeta{Labels: map[string]string{"role": "server"}},
			Spec: controlplanev1.KThreesControlPlaneMachineTemplateSpec{
				InfrastructureRef: dockerRef,
				Deletion:          controlplanev1.MachineDeletionSpec{NodeDrainTimeoutSeconds: ptr.To[int32](60)},
				Taints: []clusterv1.MachineTaint{
					{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule", Propagation: clusterv1.MachineTaintPropagationAlways},
					{Key: "node.kubernetes.io/out-of-service", Value: "shutdown", Effect: "NoExecute", Propagation: clusterv1.MachineTaintPropagationOnInitialization},
				},
			},
		},
		MachineNaming: controlplanev1.MachineNamingSpec{Template: "{{ .cluster.name }}-server-{{ .random }}"},
		KThreesConfigSpec: bootstrapv1.KThreesConfigSpec{
			Files: []bootstrapv1.File{{Path: "/etc/motd", Content: "hello"}},
			ServerConfig: bootstrapv1.KThreesServerConfig{
				ClusterCidr: "10.42.0.0/16", ServiceCidr: "10.43.0.0/16", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
			},
		},
		RolloutStrategy: &controlplanev1.RolloutStrategy{
			Type:          controlplanev1.RollingUpdateStrategyType,
			RollingUpdate: &controlplanev1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(1))},
		},
		RemediationStrategy: &controlplanev1.RemediationStrategy{
			MaxRetry:         ptr.To[int32](3),
			RetryPeriod:      metav1.Duration{Duration: 5 * time.Minute},
			MinHealthyPeriod: &metav1.Duration{Duration: time.Hour},
		},
	}
}

type wantErr struct {
	path, message string
}

// checkErrors matches errors and expectations one to one, in order.
func checkErrors(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(want), errs.ToAggregate())
	}
	for i, w := range want {
		if errs[i].Field != w.path {
			t.Errorf("error %d: field %q, want %q (%v)", i, errs[i].Field, w.path, errs[i])
		}
		if !strings.Contains(errs[i].Error(), w.message) {
			t.Errorf("error %d: %q does not contain %q", i, errs[i].Error(), w.message)
		}
	}
}

func TestValidateSpec(t *testing.T) {
	type spec = controlplanev1.KThreesControlPlaneSpec
	maxSurge := func(v intstr.IntOrString) func(*spec) {
		return func(s *spec) { s.RolloutStrategy.RollingUpdate.MaxSurge = &v }
	}
	tests := []struct {
		name   string
		modify func(*spec)
		want   []wantErr
	}{
		{name: "valid spec", modify: func(*spec) {}},

		// replicas
		{name: "one replica", modify: func(s *spec) { s.Replicas = ptr.To[int32](1) }},
		{name: "five replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](5) }},
		{name: "replicas unset", modify: func(s *spec) { s.Replicas = nil }},
		{name: "zero replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](0) },
			want: []wantErr{{"spec.replicas", "spec.replicas: Invalid value: 0: must be at least 1"}}},
		{name: "negative replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](-1) },
			want: []wantErr{{"spec.replicas", "must be at least 1"}}},
		{name: "two replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](2) },
			want: []wantErr{{"spec.replicas",
				"spec.replicas: Invalid value: 2: must be odd: an embedded etcd cluster of 2 members loses quorum when one fails; use 1, 3 or 5"}}},
		{name: "four replicas", modify: func(s *spec) { s.Replicas = ptr.To[int32](4) },
			want: []wantErr{{"spec.replicas", "must be odd: an embedded etcd cluster of 4 members survives no more failures than one of 3, and needs more members to agree; use 3 or 5"}}},

		// inPlaceUpdates
		{name: "in-place updates never", modify: func(s *spec) { s.InPlaceUpdates = controlplanev1.InPlaceUpdateNever }},
		{name: "in-place updates if possible", modify: func(s *spec) { s.InPlaceUpdates = controlplanev1.InPlaceUpdateIfPossible }},
		{name: "in-place updates unknown", modify: func(s *spec) { s.InPlaceUpdates = "Always" },
			want: []wantErr{{"spec.inPlaceUpdates", `spec.inPlaceUpdates: Unsupported value: "Always": supported values: "IfPossible", "Never"`}}},

		// version
		{name: "version without v", modify: func(s *spec) { s.Version = "1.31.4+k3s1" }},
		{name: "release candidate", modify: func(s *spec) { s.Version = "v1.31.4-rc1+k3s1" }},
		{name: "version without build", modify: func(s *spec) { s.Version = "v1.31.4" }},
		{name: "no version", modify: func(s *spec) { s.Version = "" },
			want: []wantErr{{"spec.version", "Required value"}}},
		{name: "version with leading zero", modify: func(s *spec) { s.Version = "v1.031.4+k3s1" },
			want: []wantErr{{"spec.version", "must be a k3s version such as v1.31.4+k3s1"}}},
		{name: "version with foreign build", modify: func(s *spec) { s.Version = "v1.31.4+rke2r1" },
			want: []wantErr{{"spec.version", "must be a k3s version"}}},
		{name: "version not a version", modify: func(s *spec) { s.Version = "latest" },
			want: []wantErr{{"spec.version", "must be a k3s version"}}},

		// machine naming
		{name: "naming with the control plane's name", modify: func(s *spec) { s.MachineNaming.Template = "{{.kthreesControlPlane.name}}.{{.random}}" }},
		{name: "naming without random", modify: func(s *spec) { s.MachineNaming.Template = "{{ .kthreesControlPlane.name }}" },
			want: []wantErr{{"spec.machineNaming.template", "the name must depend on {{ .random }}"}}},
		{name: "naming that does not parse", modify: func(s *spec) { s.MachineNaming.Template = "{{ .random " },
			want: []wantErr{{"spec.machineNaming.template", "does not parse as a Go template"}}},
		{name: "naming with an unknown variable", modify: func(s *spec) { s.MachineNaming.Template = "{{ .namespace }}-{{ .random }}" },
			want: []wantErr{{"spec.machineNaming.template", "the variables are .cluster.name, .kthreesControlPlane.name and .random"}}},
		{name: "naming with KCP's variable", modify: func(s *spec) { s.MachineNaming.Template = "{{ .kubeadmControlPlane.name }}-{{ .random }}" },
			want: []wantErr{{"spec.machineNaming.template", "write {{ .kthreesControlPlane.name }}"}}},
		{name: "naming with a loop", modify: func(s *spec) { s.MachineNaming.Template = "{{ range 3 }}{{ $.random }}{{ end }}" },
			want: []wantErr{{"spec.machineNaming.template", "{{ range }} is not allowed"}}},
		{name: "naming with a function", modify: func(s *spec) { s.MachineNaming.Template = "{{ len .cluster.name }}-{{ .random }}" },
			want: []wantErr{{"spec.machineNaming.template", "{{ len .cluster.name }} is not allowed"}}},
		{name: "naming with upper case", modify: func(s *spec) { s.MachineNaming.Template = "Server-{{ .random }}" },
			want: []wantErr{{"spec.machineNaming.template", "renders names that are not valid object names"}}},

		// taints
		{name: "no taints", modify: func(s *spec) { s.MachineTemplate.Spec.Taints = nil }},
		{name: "taints of others", modify: func(s *spec) {
			s.MachineTemplate.Spec.Taints = []clusterv1.MachineTaint{
				{Key: "node.kubernetes.io/not-ready", Effect: "NoExecute", Propagation: "Always"},
				{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: "NoSchedule", Propagation: "Always"},
				{Key: clusterv1.NodeOutdatedRevisionTaint.Key, Effect: "PreferNoSchedule", Propagation: "Always"},
				{Key: "node-role.kubernetes.io/master", Effect: "NoSchedule", Propagation: "Always"},
				{Key: "example.com/" + strings.Repeat("k", 64), Effect: "NoSchedule", Propagation: "Always"},
			}
		}, want: []wantErr{
			{"spec.machineTemplate.spec.taints[0].key", "is reserved for the kubelet"},
			{"spec.machineTemplate.spec.taints[1].key", "is reserved for the cloud controller manager"},
			{"spec.machineTemplate.spec.taints[2].key", "is set and removed by Cluster API itself"},
			{"spec.machineTemplate.spec.taints[3].key", "use node-role.kubernetes.io/control-plane"},
			{"spec.machineTemplate.spec.taints[4].key", "must be no more than 63"},
		}},

		// machine template
		{name: "bad machine label", modify: func(s *spec) { s.MachineTemplate.ObjectMeta.Labels = map[string]string{"not a key": "x"} },
			want: []wantErr{{"spec.machineTemplate.metadata.labels", "Invalid value"}}},
		{name: "no infrastructure ref", modify: func(s *spec) { s.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{} },
			want: []wantErr{
				{"spec.machineTemplate.spec.infrastructureRef.apiGroup", "Required value"},
				{"spec.machineTemplate.spec.infrastructureRef.kind", "Required value"},
				{"spec.machineTemplate.spec.infrastructureRef.name", "Required value"},
			}},
		{name: "ref without group", modify: func(s *spec) { s.MachineTemplate.Spec.InfrastructureRef.APIGroup = "" },
			want: []wantErr{{"spec.machineTemplate.spec.infrastructureRef.apiGroup", "the API group of the infrastructure machine template"}}},
		{name: "leftover deprecated ref equal to the new one", modify: func(s *spec) { setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef()}) }},
		{name: "deprecated ref conflicts", modify: func(s *spec) {
			setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef()})
			s.MachineTemplate.Spec.InfrastructureRef.Name = "y"
		}, want: []wantErr{{"spec.machineTemplate.infrastructureRef",
			"conflicts with spec.machineTemplate.spec.infrastructureRef, which refers to infrastructure.cluster.x-k8s.io DockerMachineTemplate y"}}},
		{name: "deprecated ref in another namespace", modify: func(s *spec) {
			s.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{}
			setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.Namespace = "other" })})
		}, want: []wantErr{{"spec.machineTemplate.infrastructureRef.namespace",
			`must be empty or "ns", the control plane's namespace: spec.machineTemplate.spec.infrastructureRef`}}},
		{name: "deprecated ref in another namespace beside a new one", modify: func(s *spec) {
			setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.Namespace = "other" })})
		}, want: []wantErr{{"spec.machineTemplate.infrastructureRef.namespace", `must be empty or "ns"`}}},
		{name: "deprecated ref without apiVersion", modify: func(s *spec) {
			s.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{}
			setOld(&s.MachineTemplate, oldShape{ref: oldDockerRef(func(r *controlplanev1.DeprecatedObjectReference) { r.APIVersion = "" })})
		}, want: []wantErr{{"spec.machineTemplate.infrastructureRef.apiVersion",
			"is required to convert this deprecated reference to spec.machineTemplate.spec.infrastructureRef"}}},
		{name: "deprecated ref to the core group", modify: func(s *spec) {
			s.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{}
			setOld(&s.MachineTemplate, oldShape{ref: &controlplanev1.DeprecatedObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}})
		}, want: []wantErr{{"spec.machineTemplate.infrastructureRef.apiVersion", "must be the group/version of an infrastructure machine template"}}},
		{name: "empty deprecated ref", modify: func(s *spec) {
			s.MachineTemplate.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{}
			setOld(&s.MachineTemplate, oldShape{ref: &controlplanev1.DeprecatedObjectReference{}})
		}, want: []wantErr{
			{"spec.machineTemplate.infrastructureRef.apiVersion", "Required value"},
			{"spec.machineTemplate.infrastructureRef.kind", "Required value"},
			{"spec.machineTemplate.infrastructureRef.name", "Required value"},
		}},
		{name: "leftover deprecated timeout equal to the new one", modify: func(s *spec) { setOld(&s.MachineTemplate, oldShape{drain: duration("1m")}) }},
		{name: "deprecated drain timeout conflicts", modify: func(s *spec) { setOld(&s.MachineTemplate, oldShape{drain: duration("2m")}) },
			want: []wantErr{{"spec.machineTemplate.nodeDrainTimeout",
				"conflicts with spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds (60): the deprecated spec.machineTemplate.nodeDrainTimeout (120s) is replaced by spec.machineTemplate.spec.deletion.nodeDrainTimeoutSeconds"}}},
		{name: "deprecated deletion timeout conflicts", modify: func(s *spec) {
			s.MachineTemplate.Spec.Deletion.NodeDeletionTimeoutSeconds = ptr.To[int32](0)
			setOld(&s.MachineTemplate, oldShape{deletion: duration("1s")})
		}, want: []wantErr{{"spec.machineTemplate.nodeDeletionTimeout", "conflicts with spec.machineTemplate.spec.deletion.nodeDeletionTimeoutSeconds (0)"}}},
		{name: "negative deprecated timeout", modify: func(s *spec) { setOld(&s.MachineTemplate, oldShape{detach: duration("-5s")}) },
			want: []wantErr{{"spec.machineTemplate.nodeVolumeDetachTimeout", `Invalid value: "-5s": must not be negative`}}},
		{name: "deprecated timeout too long", modify: func(s *spec) { setOld(&s.MachineTemplate, oldShape{deletion: duration("600000h")}) },
			want: []wantErr{{"spec.machineTemplate.nodeDeletionTimeout",
				"must be at most 596523h14m7s: spec.machineTemplate.spec.deletion.nodeDeletionTimeoutSeconds, which replaces this deprecated field, holds at most 2147483647 seconds"}}},

		// rollout strategy
		{name: "maxSurge 0 with three replicas", modify: maxSurge(intstr.FromInt32(0))},
		{name: "maxSurge as strings", modify: maxSurge(intstr.FromString("1"))},
		{name: "maxSurge \"0\" with three replicas", modify: maxSurge(intstr.FromString("0"))},
		{name: "maxSurge 0 with one replica", modify: func(s *spec) {
			s.Replicas = ptr.To[int32](1)
			maxSurge(intstr.FromInt32(0))(s)
		}, want: []wantErr{{"spec.rolloutStrategy.rollingUpdate.maxSurge",
			"maxSurge 0 removes a server before creating its replacement; with fewer than 3 servers that loses etcd quorum (spec.replicas is 1)"}}},
		{name: "maxSurge \"0\" with replicas unset", modify: func(s *spec) {
			s.Replicas = nil
			maxSurge(intstr.FromString("0"))(s)
		}, want: []wantErr{{"spec.rolloutStrategy.rollingUpdate.maxSurge", "with fewer than 3 servers that loses etcd quorum"}}},
		{name: "maxSurge 2", modify: maxSurge(intstr.FromInt32(2)),
			want: []wantErr{{"spec.rolloutStrategy.rollingUpdate.maxSurge", "Invalid value: \"2\": must be 0 or 1"}}},
		{name: "maxSurge percentage", modify: maxSurge(intstr.FromString("50%")),
			want: []wantErr{{"spec.rolloutStrategy.rollingUpdate.maxSurge", "must be 0 or 1"}}},
		{name: "unknown strategy", modify: func(s *spec) { s.RolloutStrategy.Type = "Recreate" },
			want: []wantErr{{"spec.rolloutStrategy.type", `Unsupported value: "Recreate": supported values: "RollingUpdate"`}}},
		{name: "no rollout strategy", modify: func(s *spec) { s.RolloutStrategy = nil }},

		// remediation strategy
		{name: "no remediation strategy", modify: func(s *spec) { s.RemediationStrategy = nil }},
		{name: "zero remediation bounds", modify: func(s *spec) {
			s.RemediationStrategy = &controlplanev1.RemediationStrategy{MaxRetry: ptr.To[int32](0), MinHealthyPeriod: &metav1.Duration{}}
		}},
		{name: "negative remediation bounds", modify: func(s *spec) {
			s.RemediationStrategy.MaxRetry = ptr.To[int32](-1)
			s.RemediationStrategy.RetryPeriod = *duration("-1m")
			s.RemediationStrategy.MinHealthyPeriod = duration("-1s")
		}, want: []wantErr{
			{"spec.remediationStrategy.maxRetry", "must not be negative; leave it unset for no limit"},
			{"spec.remediationStrategy.retryPeriod", `Invalid value: "-1m0s": must not be negative`},
			{"spec.remediationStrategy.minHealthyPeriod", "must not be negative"},
		}},

		// the embedded KThreesConfigSpec, by the bootstrap webhooks' rules
		{name: "config file path relative", modify: func(s *spec) { s.KThreesConfigSpec.Files[0].Path = "etc/motd" },
			want: []wantErr{{"spec.kthreesConfigSpec.files[0].path", "must be an absolute path"}}},
		{name: "config port out of range", modify: func(s *spec) { s.KThreesConfigSpec.ServerConfig.HTTPSListenPort = "0" },
			want: []wantErr{{"spec.kthreesConfigSpec.serverConfig.httpsListenPort", "between 1 and 65535"}}},

		{name: "errors accumulate", modify: func(s *spec) {
			s.Replicas = ptr.To[int32](2)
			s.Version = "latest"
			s.KThreesConfigSpec.Files[0].Path = "motd"
		}, want: []wantErr{
			{"spec.replicas", "must be odd"},
			{"spec.version", "must be a k3s version"},
			{"spec.kthreesConfigSpec.files[0].path", "must be an absolute path"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.modify(&s)
			checkErrors(t, validateSpec(&s, testNamespace, field.NewPath("spec")), tt.want)
		})
	}
}

func TestValidateVersionChange(t *testing.T) {
	tests := []struct {
		from, to string
		want     string // a fragment of the error; empty means allowed
	}{
		{from: "v1.31.4+k3s1", to: "v1.31.4+k3s1"},
		{from: "v1.31.4+k3s1", to: "v1.31.5+k3s1"},
		{from: "v1.31.4+k3s1", to: "v1.32.0+k3s1"},
		{from: "v1.30.9+k3s1", to: "v1.31.0+k3s1"},
		{from: "1.31.4+k3s1", to: "v1.32.1+k3s2"},
		{from: "v1.31.4+k3s1", to: "v1.31.4+k3s2"},
		{from: "v1.31.4+k3s2", to: "v1.31.4+k3s1"}, // revisions are not ordered: the way back from a broken one
		{from: "v1.31.4-rc1+k3s1", to: "v1.31.4+k3s1"},
		{from: "v1.31.4+k3s1", to: "v1.31.4-rc1+k3s1", want: "cannot downgrade from v1.31.4+k3s1"},
		{from: "v1.31.4+k3s1", to: "v1.31.3+k3s1", want: "cannot downgrade from v1.31.4+k3s1: Kubernetes does not support downgrades"},
		{from: "v1.31.4+k3s1", to: "v1.30.9+k3s1", want: "cannot downgrade"},
		{from: "v1.30.5+k3s1", to: "v1.32.0+k3s1", want: "upgrade one minor version at a time: v1.30.x → v1.31.x first"},
		{from: "v1.30.5+k3s1", to: "v1.35.1+k3s1", want: "v1.30.x → v1.31.x first"},
		{from: "v1.31.4+k3s1", to: "v2.0.0", want: "cannot change the major version from v1.31.4+k3s1"},
		{from: "garbage", to: "v1.35.0+k3s1"},      // nothing to compare with
		{from: "v1.31.4+k3s1", to: "v1.33.x+k3s1"}, // reported by validateVersion
	}
	for _, tt := range tests {
		t.Run(tt.from+" to "+tt.to, func(t *testing.T) {
			errs := validateVersionChange(tt.from, tt.to, field.NewPath("spec", "version"))
			if tt.want == "" {
				checkErrors(t, errs, nil)
				return
			}
			checkErrors(t, errs, []wantErr{{"spec.version", tt.want}})
		})
	}
}

func TestValidateImmutable(t *testing.T) {
	type spec = controlplanev1.KThreesControlPlaneSpec
	tests := []struct {
		name   string
		modify func(*spec)
		want   []wantErr
	}{
		{name: "everything else may change", modify: func(s *spec) {
			s.Replicas = ptr.To[int32](5)
			s.Version = "v1.32.0+k3s1"
			s.MachineTemplate.Spec.InfrastructureRef.Name = "new-template"
			s.KThreesConfigSpec.Files = nil
			s.KThreesConfigSpec.ServerConfig.TLSSan = []string{"api.example.com"}
		}},
		{name: "cluster CIDR", modify: func(s *spec) { s.KThreesConfigSpec.ServerConfig.ClusterCidr = "10.50.0.0/16" },
			want: []wantErr{{"spec.kthreesConfigSpec.serverConfig.clusterCidr",
				`Forbidden: is immutable (was "10.42.0.0/16", now "10.50.0.0/16"): every node's pod range and every pod's address come from it, so changing it on a running k3s cluster breaks the cluster; create a new cluster`}}},
		{name: "service CIDR unset", modify: func(s *spec) { s.KThreesConfigSpec.ServerConfig.ServiceCidr = "" },
			want: []wantErr{{"spec.kthreesConfigSpec.serverConfig.serviceCidr", `was "10.43.0.0/16", now unset, k3s's default`}}},
		{name: "cluster DNS", modify: func(s *spec) { s.KThreesConfigSpec.ServerConfig.ClusterDNS = "10.43.0.11" },
			want: []wantErr{{"spec.kthreesConfigSpec.serverConfig.clusterDNS", "every pod's resolv.conf points at it"}}},
		{name: "cluster domain and CIDR", modify: func(s *spec) {
			s.KThreesConfigSpec.ServerConfig.ClusterDomain = "example.internal"
			s.KThreesConfigSpec.ServerConfig.ClusterCidr = "10.50.0.0/16"
		}, want: []wantErr{
			{"spec.kthreesConfigSpec.serverConfig.clusterCidr", "is immutable"},
			{"spec.kthreesConfigSpec.serverConfig.clusterDomain", "is immutable"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldSpec, newSpec := validSpec(), validSpec()
			tt.modify(&newSpec)
			checkErrors(t, validateImmutable(&oldSpec, &newSpec, field.NewPath("spec")), tt.want)
		})
	}

	// Setting a value that was left to k3s's default is a change too: the default may
	// not be what was written.
	oldSpec, newSpec := validSpec(), validSpec()
	oldSpec.KThreesConfigSpec.ServerConfig.ClusterDNS = ""
	checkErrors(t, validateImmutable(&oldSpec, &newSpec, field.NewPath("spec")),
		[]wantErr{{"spec.kthreesConfigSpec.serverConfig.clusterDNS", `was unset, k3s's default, now "10.43.0.10"`}})
}

func validTemplateSpec() controlplanev1.KThreesControlPlaneTemplateResourceSpec {
	s := validSpec()
	return controlplanev1.KThreesControlPlaneTemplateResourceSpec{
		MachineTemplate: &controlplanev1.KThreesControlPlaneTemplateMachineTemplate{
			ObjectMeta: s.MachineTemplate.ObjectMeta,
			Spec: controlplanev1.KThreesControlPlaneTemplateMachineTemplateSpec{
				Deletion: s.MachineTemplate.Spec.Deletion, Taints: s.MachineTemplate.Spec.Taints,
			},
		},
		MachineNaming:       s.MachineNaming,
		KThreesConfigSpec:   s.KThreesConfigSpec,
		RolloutStrategy:     s.RolloutStrategy,
		RemediationStrategy: s.RemediationStrategy,
	}
}

func TestValidateTemplateSpec(t *testing.T) {
	type spec = controlplanev1.KThreesControlPlaneTemplateResourceSpec
	tests := []struct {
		name   string
		modify func(*spec)
		want   []wantErr
	}{
		{name: "valid", modify: func(*spec) {}},
		{name: "empty", modify: func(s *spec) { *s = spec{} }},
		// Replicas come from the topology, so maxSurge 0 cannot be judged here.
		{name: "maxSurge 0", modify: func(s *spec) { s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0)) }},
		{name: "maxSurge 2", modify: func(s *spec) { s.RolloutStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(2)) },
			want: []wantErr{{"spec.template.spec.rolloutStrategy.rollingUpdate.maxSurge", "must be 0 or 1"}}},
		{name: "negative retry period", modify: func(s *spec) { s.RemediationStrategy.RetryPeriod = *duration("-1s") },
			want: []wantErr{{"spec.template.spec.remediationStrategy.retryPeriod", "must not be negative"}}},
		{name: "bad machine annotation", modify: func(s *spec) { s.MachineTemplate.ObjectMeta.Annotations = map[string]string{"/x": "y"} },
			want: []wantErr{{"spec.template.spec.machineTemplate.metadata.annotations", "Invalid value"}}},
		{name: "naming without random", modify: func(s *spec) { s.MachineNaming.Template = "cp" },
			want: []wantErr{{"spec.template.spec.machineNaming.template", "the name must depend on {{ .random }}"}}},
		{name: "naming with a loop", modify: func(s *spec) { s.MachineNaming.Template = "{{ range 3 }}{{ $.random }}{{ end }}" },
			want: []wantErr{{"spec.template.spec.machineNaming.template", "{{ range }} is not allowed"}}},
		{name: "reserved taint", modify: func(s *spec) { s.MachineTemplate.Spec.Taints[0].Key = "node.kubernetes.io/disk-pressure" },
			want: []wantErr{{"spec.template.spec.machineTemplate.spec.taints[0].key", "is reserved for the kubelet"}}},
		{name: "config file path", modify: func(s *spec) { s.KThreesConfigSpec.Files[0].Path = "/etc/../motd" },
			want: []wantErr{{"spec.template.spec.kthreesConfigSpec.files[0].path", "must not contain .. segments"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validTemplateSpec()
			tt.modify(&s)
			checkErrors(t, validateTemplateSpec(&s, field.NewPath("spec", "template", "spec")), tt.want)
		})
	}
}
