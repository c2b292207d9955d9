package chaos

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	simv1 "github.com/capk3s/capk3s/test/sim/api/v1beta2"
)

// orphans lists, in a namespace whose clusters converged, every Machine, KThreesConfig,
// SimMachine and Secret whose owner is gone, and every KThreesConfig or SimMachine
// without a Machine: what killed managers may leave behind.
func orphans(ctx context.Context, ns string) ([]string, error) {
	var (
		machines  clusterv1.MachineList
		configs   bootstrapv1.KThreesConfigList
		infra     simv1.SimMachineList
		secrets   corev1.SecretList
		owners    = sets.New[types.UID]()
		ownerList = []client.ObjectList{
			&clusterv1.ClusterList{}, &clusterv1.MachineDeploymentList{}, &clusterv1.MachineSetList{},
			&controlplanev1.KThreesControlPlaneList{}, &simv1.SimClusterList{},
		}
	)
	for _, l := range append(ownerList, &machines, &configs, &infra, &secrets) {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			owners.Insert(o.(metav1.Object).GetUID())
		}
	}
	var out []string
	missing := func(kind string, o metav1.Object, ownerKind string) {
		for _, r := range o.GetOwnerReferences() {
			if (ownerKind == "" || r.Kind == ownerKind) && owners.Has(r.UID) {
				return
			}
		}
		want := "an existing owner"
		if ownerKind != "" {
			want = "an existing " + ownerKind
		}
		out = append(out, fmt.Sprintf("%s %s/%s has no %s (owners %v)", kind, ns, o.GetName(), want, o.GetOwnerReferences()))
	}
	for i := range machines.Items {
		missing("Machine", &machines.Items[i], "")
	}
	for i := range configs.Items {
		missing("KThreesConfig", &configs.Items[i], "Machine")
	}
	for i := range infra.Items {
		missing("SimMachine", &infra.Items[i], "Machine")
	}
	for i := range secrets.Items {
		missing("Secret", &secrets.Items[i], "")
	}
	return out, nil
}
