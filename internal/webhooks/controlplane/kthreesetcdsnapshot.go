package controlplane

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/webhooks/webhookutil"
)

// +kubebuilder:webhook:verbs=create;update,path=/mutate-controlplane-cluster-x-k8s-io-v1beta2-kthreesetcdsnapshot,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdsnapshots,versions=v1beta2,name=default.kthreesetcdsnapshot.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1
// +kubebuilder:webhook:verbs=create;update,path=/validate-controlplane-cluster-x-k8s-io-v1beta2-kthreesetcdsnapshot,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreesetcdsnapshots,versions=v1beta2,name=validation.kthreesetcdsnapshot.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// KThreesEtcdSnapshot is the defaulting and validating webhook of
// KThreesEtcdSnapshot. The object is one request: its spec never changes, so what
// it asked for and what it reports always match.
type KThreesEtcdSnapshot struct{}

var (
	_ admission.Defaulter[*controlplanev1.KThreesEtcdSnapshot] = &KThreesEtcdSnapshot{}
	_ admission.Validator[*controlplanev1.KThreesEtcdSnapshot] = &KThreesEtcdSnapshot{}
)

// Default sets the cluster-name label from spec.clusterName, so that the
// snapshots of a cluster are selected as CAPI selects its other objects.
func (*KThreesEtcdSnapshot) Default(_ context.Context, s *controlplanev1.KThreesEtcdSnapshot) error {
	if s.Spec.ClusterName == "" {
		return nil
	}
	if _, set := s.Labels[clusterv1.ClusterNameLabel]; set {
		return nil
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[clusterv1.ClusterNameLabel] = s.Spec.ClusterName
	return nil
}

// ValidateCreate checks that the cluster-name label, when set, names spec.clusterName.
func (*KThreesEtcdSnapshot) ValidateCreate(_ context.Context, s *controlplanev1.KThreesEtcdSnapshot) (admission.Warnings, error) {
	return nil, etcdSnapshotInvalid(s.Name, etcdSnapshotLabel(s))
}

// ValidateUpdate refuses every change of spec: a new snapshot is a new object.
func (*KThreesEtcdSnapshot) ValidateUpdate(_ context.Context, oldS, newS *controlplanev1.KThreesEtcdSnapshot) (admission.Warnings, error) {
	errs := etcdSnapshotLabel(newS)
	if !apiequality.Semantic.DeepEqual(oldS.Spec, newS.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "KThreesEtcdSnapshot spec is immutable; create a new KThreesEtcdSnapshot for another snapshot"))
	}
	return nil, etcdSnapshotInvalid(newS.Name, errs)
}

// ValidateDelete allows every deletion: the webhook is not registered for DELETE.
func (*KThreesEtcdSnapshot) ValidateDelete(context.Context, *controlplanev1.KThreesEtcdSnapshot) (admission.Warnings, error) {
	return nil, nil
}

func etcdSnapshotLabel(s *controlplanev1.KThreesEtcdSnapshot) field.ErrorList {
	if v, set := s.Labels[clusterv1.ClusterNameLabel]; set && v != s.Spec.ClusterName {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "labels").Key(clusterv1.ClusterNameLabel), v,
			"must be spec.clusterName ("+s.Spec.ClusterName+")")}
	}
	return nil
}

func etcdSnapshotInvalid(name string, errs field.ErrorList) error {
	return webhookutil.Invalid(controlplanev1.GroupVersion.WithKind("KThreesEtcdSnapshot").GroupKind(), name, errs)
}
