package controlplane

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCACertificateValidityPeriodDays(t *testing.T) {
	for _, tc := range []struct {
		days int32
		want []wantErr
	}{
		{days: 0}, {days: 1}, {days: 7300}, {days: 36500},
		{days: -1, want: []wantErr{{"spec.caCertificateValidityPeriodDays", "must be between 1 and 36500 days; leave it unset for the default, 3650 days"}}},
		{days: 36501, want: []wantErr{{"spec.caCertificateValidityPeriodDays", "must be between 1 and 36500 days"}}},
	} {
		s := validSpec()
		s.CACertificateValidityPeriodDays = tc.days
		checkErrors(t, validateSpec(&s, testNamespace, field.NewPath("spec")), tc.want)
		ts := validTemplateSpec()
		ts.CACertificateValidityPeriodDays = tc.days
		var want []wantErr
		for _, w := range tc.want {
			want = append(want, wantErr{"spec.template." + w.path, w.message})
		}
		checkErrors(t, validateTemplateSpec(&ts, field.NewPath("spec", "template", "spec")), want)
	}
}

func TestCACertificateValidityPeriodDaysIsImmutable(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after int32
		want          []wantErr
	}{
		{name: "unchanged", before: 7300, after: 7300},
		{name: "changed", before: 7300, after: 3650, want: []wantErr{{"spec.caCertificateValidityPeriodDays",
			"Forbidden: is immutable (was 7300 days, now 3650 days): the cluster CAs are made once"}}},
		{name: "set later", before: 0, after: 7300, want: []wantErr{{"spec.caCertificateValidityPeriodDays", "was unset, 3650 days, now 7300 days"}}},
		{name: "cleared", before: 7300, after: 0, want: []wantErr{{"spec.caCertificateValidityPeriodDays", "now unset, 3650 days"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oldSpec, newSpec := validSpec(), validSpec()
			oldSpec.CACertificateValidityPeriodDays, newSpec.CACertificateValidityPeriodDays = tc.before, tc.after
			checkErrors(t, validateImmutable(&oldSpec, &newSpec, field.NewPath("spec")), tc.want)
		})
	}
}
