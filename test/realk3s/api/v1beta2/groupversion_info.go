package v1beta2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the real-k3s layer's kinds.
	GroupVersion = schema.GroupVersion{Group: "infrastructure.netns.capk3s.io", Version: "v1beta2"}
	// schemeBuilder collects the functions that add this package's kinds to a scheme.
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the layer's kinds to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&NetnsCluster{}, &NetnsClusterList{},
		&NetnsMachine{}, &NetnsMachineList{},
		&NetnsMachineTemplate{}, &NetnsMachineTemplateList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
