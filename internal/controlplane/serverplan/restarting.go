package serverplan

import (
	"fmt"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/util/collections"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
	"github.com/capk3s/capk3s/internal/runtimehooks"
)

// Restarting says why server m's k3s may be down for a restart now, or "". A restart
// stops k3s, and with it the server's etcd member, while its Node stays Ready until
// the kubelet's status goes stale (about 40 s): a Ready Node does not make such a
// server a voter. Its Machine carries the mark from before the restart is asked for
// until after it ended:
//   - an in-place update: CAPI's update-in-progress annotation or a pending
//     UpdateMachine hook (the update extension restarts k3s);
//   - a certificate renewal: the renewing annotation, set before its restart Plan is
//     created and removed after the Plan is done.
func Restarting(m *clusterv1.Machine) string {
	if _, ok := m.Annotations[clusterv1.UpdateInProgressAnnotation]; ok || runtimehooks.IsPending(runtimehooksv1.UpdateMachine, m) {
		return "is updated in place"
	}
	if _, ok := m.Annotations[controlplanev1.CertificatesRenewingAnnotation]; ok {
		return "restarts k3s to renew its certificates"
	}
	return ""
}

// restartingNote names the servers of machines, other than victim, that Restarting
// counts out of a quorum, for a refusal's message: "" when there are none.
func restartingNote(machines collections.Machines, victim *clusterv1.Machine) string {
	var notes []string
	for _, m := range machines {
		if why := Restarting(m); why != "" && m.Name != victim.Name && m.DeletionTimestamp.IsZero() {
			notes = append(notes, fmt.Sprintf("%s %s", m.Name, why))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s: a server whose k3s restarts is not a healthy etcd member", list(notes))
}
