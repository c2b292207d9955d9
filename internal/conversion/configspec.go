package conversion

import (
	"slices"

	bootstrapv1beta1 "github.com/capk3s/capk3s/api/bootstrap/v1beta1"
	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// The KThreesConfigSpec fields v1beta1 has keep their names and meaning in v1beta2,
// so each direction copies them over whatever out holds: fields only v1beta2 has
// are left as they are, which is how a kept v1beta2 part survives an edit made
// through v1beta1.

func configSpecToHub(in *bootstrapv1beta1.KThreesConfigSpec, out *bootstrapv1.KThreesConfigSpec) {
	out.Files = nil
	for _, f := range in.Files {
		file := bootstrapv1.File{Path: f.Path, Owner: f.Owner, Permissions: f.Permissions,
			Encoding: bootstrapv1.Encoding(f.Encoding), Content: f.Content}
		if f.ContentFrom != nil {
			file.ContentFrom = &bootstrapv1.FileSource{Secret: bootstrapv1.SecretFileSource{
				Name: f.ContentFrom.Secret.Name, Key: f.ContentFrom.Secret.Key}}
		}
		out.Files = append(out.Files, file)
	}
	out.PreK3sCommands = slices.Clone(in.PreK3sCommands)
	out.PostK3sCommands = slices.Clone(in.PostK3sCommands)
	out.Version = in.Version

	a, oa := &in.AgentConfig, &out.AgentConfig
	oa.NodeLabels = slices.Clone(a.NodeLabels)
	oa.NodeTaints = slices.Clone(a.NodeTaints)
	oa.PrivateRegistry = a.PrivateRegistry
	oa.KubeletArgs = slices.Clone(a.KubeletArgs)
	oa.KubeProxyArgs = slices.Clone(a.KubeProxyArgs)
	oa.NodeName = a.NodeName
	oa.AirGapped = a.AirGapped

	s, os := &in.ServerConfig, &out.ServerConfig
	os.KubeAPIServerArgs = slices.Clone(s.KubeAPIServerArgs)
	os.KubeControllerManagerArgs = slices.Clone(s.KubeControllerManagerArgs)
	os.KubeSchedulerArgs = slices.Clone(s.KubeSchedulerArgs)
	os.TLSSan = slices.Clone(s.TLSSan)
	os.BindAddress = s.BindAddress
	os.HTTPSListenPort = s.HTTPSListenPort
	os.AdvertiseAddress = s.AdvertiseAddress
	os.AdvertisePort = s.AdvertisePort
	os.ClusterCidr = s.ClusterCidr
	os.ServiceCidr = s.ServiceCidr
	os.ClusterDNS = s.ClusterDNS
	os.ClusterDomain = s.ClusterDomain
	os.DisableComponents = slices.Clone(s.DisableComponents)
	os.DeprecatedDisableExternalCloudProvider = s.DisableExternalCloudProvider
}

func configSpecToV1Beta1(in *bootstrapv1.KThreesConfigSpec, out *bootstrapv1beta1.KThreesConfigSpec) {
	out.Files = nil
	for _, f := range in.Files {
		file := bootstrapv1beta1.File{Path: f.Path, Owner: f.Owner, Permissions: f.Permissions,
			Encoding: bootstrapv1beta1.Encoding(f.Encoding), Content: f.Content}
		// A ConfigMap source has no v1beta1 place: the file goes without one, and
		// the kept patch brings the source back on the way to v1beta2.
		if f.ContentFrom != nil && (f.ContentFrom.ConfigMap == (bootstrapv1.ConfigMapFileSource{}) ||
			f.ContentFrom.Secret != (bootstrapv1.SecretFileSource{})) {
			file.ContentFrom = &bootstrapv1beta1.FileSource{Secret: bootstrapv1beta1.SecretFileSource{
				Name: f.ContentFrom.Secret.Name, Key: f.ContentFrom.Secret.Key}}
		}
		out.Files = append(out.Files, file)
	}
	out.PreK3sCommands = slices.Clone(in.PreK3sCommands)
	out.PostK3sCommands = slices.Clone(in.PostK3sCommands)
	out.Version = in.Version

	a, oa := &in.AgentConfig, &out.AgentConfig
	oa.NodeLabels = slices.Clone(a.NodeLabels)
	oa.NodeTaints = slices.Clone(a.NodeTaints)
	oa.PrivateRegistry = a.PrivateRegistry
	oa.KubeletArgs = slices.Clone(a.KubeletArgs)
	oa.KubeProxyArgs = slices.Clone(a.KubeProxyArgs)
	oa.NodeName = a.NodeName
	oa.AirGapped = a.AirGapped

	s, os := &in.ServerConfig, &out.ServerConfig
	os.KubeAPIServerArgs = slices.Clone(s.KubeAPIServerArgs)
	os.KubeControllerManagerArgs = slices.Clone(s.KubeControllerManagerArgs)
	os.KubeSchedulerArgs = slices.Clone(s.KubeSchedulerArgs)
	os.TLSSan = slices.Clone(s.TLSSan)
	os.BindAddress = s.BindAddress
	os.HTTPSListenPort = s.HTTPSListenPort
	os.AdvertiseAddress = s.AdvertiseAddress
	os.AdvertisePort = s.AdvertisePort
	os.ClusterCidr = s.ClusterCidr
	os.ServiceCidr = s.ServiceCidr
	os.ClusterDNS = s.ClusterDNS
	os.ClusterDomain = s.ClusterDomain
	os.DisableComponents = slices.Clone(s.DisableComponents)
	os.DisableExternalCloudProvider = s.DeprecatedDisableExternalCloudProvider
}
