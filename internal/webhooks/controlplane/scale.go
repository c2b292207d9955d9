package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// scaleValidationPath is where the scale webhook is served; the marker below says the same.
const scaleValidationPath = "/validate-scale-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplane"

// +kubebuilder:webhook:verbs=update,path=/validate-scale-controlplane-cluster-x-k8s-io-v1beta2-kthreescontrolplane,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,groups=controlplane.cluster.x-k8s.io,resources=kthreescontrolplanes/scale,versions=v1beta2,name=validation-scale.kthreescontrolplane.controlplane.cluster.x-k8s.io,sideEffects=None,admissionReviewVersions=v1

// ScaleValidator validates writes to the KThreesControlPlane scale subresource
// (kubectl scale, autoscalers). The apiserver sends those to webhooks registered for
// kthreescontrolplanes/scale only, so without this one an even or zero replica count
// would bypass the KThreesControlPlane webhook entirely.
type ScaleValidator struct {
	// Reader reads the control plane being scaled, for its rollout strategy.
	Reader client.Reader
}

var _ admission.Handler = &ScaleValidator{}

// Handle applies the replica rules of the KThreesControlPlane webhook to the new
// replica count: at least 1, odd on embedded etcd, and at least 3 (2 with an external
// datastore) under a maxSurge of 0. An unchanged
// count is let through, like an unchanged spec in ValidateUpdate.
func (v *ScaleValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	newScale, err := decodeScale(req.Object.Raw)
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the new Scale: %w", err))
	}
	if len(req.OldObject.Raw) > 0 {
		oldScale, err := decodeScale(req.OldObject.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old Scale: %w", err))
		}
		if oldScale.Spec.Replicas == newScale.Spec.Replicas {
			return admission.Allowed("")
		}
	}

	// The rules depend on the control plane's datastore and rollout strategy.
	cp := &controlplanev1.KThreesControlPlane{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name}, cp); err != nil {
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("reading KThreesControlPlane %s/%s: %w", req.Namespace, req.Name, err))
	}
	replicas := newScale.Spec.Replicas
	specPath := field.NewPath("spec")
	datastore := hasDatastore(&cp.Spec)
	errs := validateReplicas(&replicas, datastore, specPath.Child("replicas"))
	if len(errs) == 0 {
		errs = validateRolloutStrategy(cp.Spec.RolloutStrategy, &replicas, datastore, specPath.Child("rolloutStrategy"))
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// The same Invalid status as the typed webhooks return, so that clients see one
	// kind of rejection whichever way they change the replicas.
	status := apierrors.NewInvalid(controlplanev1.GroupVersion.WithKind("KThreesControlPlane").GroupKind(), req.Name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

func decodeScale(raw []byte) (*autoscalingv1.Scale, error) {
	s := &autoscalingv1.Scale{}
	return s, json.Unmarshal(raw, s)
}
