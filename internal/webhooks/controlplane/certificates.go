package controlplane

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	controlplanev1 "github.com/capk3s/capk3s/api/controlplane/v1beta2"
)

// maxCAValidityDays is KCP's upper bound for caCertificateValidityPeriodDays (100
// years); the schema holds the same bounds, the webhook says them in words.
const maxCAValidityDays = 36500

// validateCAValidity checks caCertificateValidityPeriodDays: unset (0) means the
// default, otherwise 1 to 36500 days, as KCP's field.
func validateCAValidity(days int32, fldPath *field.Path) field.ErrorList {
	if days == 0 || (days >= 1 && days <= maxCAValidityDays) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, days, fmt.Sprintf(
		"must be between 1 and %d days; leave it unset for the default, %d days", maxCAValidityDays, controlplanev1.DefaultCACertificateValidityPeriodDays))}
}

// validateCAValidityUnchanged refuses any change of caCertificateValidityPeriodDays,
// setting or clearing it included: the CAs are made once, before the first server,
// and never again, so a new value would change nothing, while saying it did.
func validateCAValidityUnchanged(before, after int32, fldPath *field.Path) field.ErrorList {
	if before == after {
		return nil
	}
	return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf(
		"is immutable (was %s, now %s): the cluster CAs are made once, before the first server, and are never made again; "+
			"it applies to new clusters only (renewing a CA is k3s's CA rotation, see docs/certificates.md)",
		describeDays(before), describeDays(after)))}
}

func describeDays(days int32) string {
	if days == 0 {
		return fmt.Sprintf("unset, %d days", controlplanev1.DefaultCACertificateValidityPeriodDays)
	}
	return fmt.Sprintf("%d days", days)
}
