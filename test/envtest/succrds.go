package envtest

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SystemUpgradeNamespace and SystemUpgradeDeployment are where the
// system-upgrade-controller's own manifests install it.
const (
	SystemUpgradeNamespace  = "system-upgrade"
	SystemUpgradeDeployment = "system-upgrade-controller"
)

// PlanCRD is the system-upgrade-controller's Plan kind (upgrade.cattle.io/v1,
// namespaced, with a status subresource). Written for the tests in SUC's shape; the
// schema keeps every field.
func PlanCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "plans.upgrade.cattle.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "upgrade.cattle.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "plans", Singular: "plan", Kind: "Plan", ListKind: "PlanList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", XPreserveUnknownFields: ptr.To(true)},
						"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// InstallSystemUpgradeController makes the workload cluster cfg reaches look as if
// SUC were installed: the Plan kind served, and SUC's Deployment with an available
// replica (the simulated cluster runs no controller-manager, so its status is
// written here). What acts on Plans is the simulator's stand-in.
func InstallSystemUpgradeController(ctx context.Context, cfg *rest.Config) error {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client for the system-upgrade-controller: %w", err)
	}
	if err := createAndWaitEstablished(ctx, c, PlanCRD()); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemUpgradeNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", SystemUpgradeNamespace, err)
	}
	labels := map[string]string{"upgrade.cattle.io/controller": SystemUpgradeDeployment}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: SystemUpgradeNamespace, Name: SystemUpgradeDeployment, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "system-upgrade",
					Containers:         []corev1.Container{{Name: "controller", Image: "rancher/system-upgrade-controller"}},
				},
			},
		},
	}
	if err := c.Create(ctx, d); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the %s Deployment: %w", SystemUpgradeDeployment, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
		return err
	}
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}},
	}
	if err := c.Status().Update(ctx, d); err != nil {
		return fmt.Errorf("marking the %s Deployment available: %w", SystemUpgradeDeployment, err)
	}
	return nil
}

// createAndWaitEstablished creates crd (an existing one is kept) and waits until it
// is served.
func createAndWaitEstablished(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return false, nil
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}
