package bootstrap

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// ownedConditions are the conditions this controller sets, besides Paused (stale ones
// left by other software are dropped before the first status write).
var ownedConditions = []string{
	clusterv1.ReadyCondition,
	bootstrapv1.DataSecretAvailableCondition,
	bootstrapv1.CertificatesAvailableCondition,
}

func setCondition(config *bootstrapv1.KThreesConfig, conditionType string, status metav1.ConditionStatus, reason, message string) {
	conditions.Set(config, metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message})
}

// waiting records why the data Secret does not exist yet.
func waiting(config *bootstrapv1.KThreesConfig, reason, message string) {
	setCondition(config, bootstrapv1.DataSecretAvailableCondition, metav1.ConditionFalse, reason, message)
}

// setReady summarizes the conditions into Ready, as CAPI's contract asks.
func setReady(config *bootstrapv1.KThreesConfig) {
	// SetSummaryCondition only fails on bad options; there are none to get wrong here.
	_ = conditions.SetSummaryCondition(config, config, clusterv1.ReadyCondition,
		conditions.ForConditionTypes{bootstrapv1.DataSecretAvailableCondition, bootstrapv1.CertificatesAvailableCondition},
		// CertificatesAvailable is not set on agents, which need no CA keys.
		conditions.IgnoreTypesIfMissing{bootstrapv1.CertificatesAvailableCondition},
	)
}
