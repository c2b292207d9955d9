package bootstrap

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
)

// validateDatastore checks the Secret references of serverConfig.datastore. A
// rejected name or key is never echoed back: a user who pasted the connection
// string where its Secret's name belongs must not see it in an error, an event or
// an audit log.
func validateDatastore(d *bootstrapv1.Datastore, fldPath *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, validateSecretKeyReference(&d.EndpointSecret, fldPath.Child("endpointSecret"))...)
	for _, ref := range []struct {
		name string
		ref  *bootstrapv1.SecretKeyReference
	}{{"caSecret", d.CASecret}, {"certSecret", d.CertSecret}, {"keySecret", d.KeySecret}} {
		if ref.ref != nil {
			errs = append(errs, validateSecretKeyReference(ref.ref, fldPath.Child(ref.name))...)
		}
	}
	if (d.CertSecret == nil) != (d.KeySecret == nil) {
		errs = append(errs, field.Required(fldPath.Child("keySecret"),
			"certSecret and keySecret go together: a datastore client certificate is useless without its key; set both or neither"))
	}
	return errs
}

func validateSecretKeyReference(ref *bootstrapv1.SecretKeyReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case ref.Name == "":
		errs = append(errs, field.Required(fldPath.Child("name"), "the name of a Secret in the config's namespace is required"))
	case len(validation.IsDNS1123Subdomain(ref.Name)) > 0:
		errs = append(errs, field.Invalid(fldPath.Child("name"), field.OmitValueType{},
			"must be the name of a Secret (lower-case letters, digits, '-' and '.'), not the value itself: put the value into a Secret and name that Secret here"))
	}
	switch {
	case ref.Key == "":
		errs = append(errs, field.Required(fldPath.Child("key"), "the key of the Secret's data that holds the value is required"))
	case len(validation.IsConfigMapKey(ref.Key)) > 0:
		errs = append(errs, field.Invalid(fldPath.Child("key"), field.OmitValueType{},
			"must be a Secret data key (letters, digits, '-', '_' and '.'), not the value itself"))
	}
	return errs
}

// ValidateDatastoreChange refuses to switch an existing object between the embedded
// etcd and an external datastore. Servers cannot move their data either way: a
// server rolled out onto an empty external datastore would start a new, empty
// cluster beside the running one, and embedded etcd would have nothing to join.
// Changing the references of an existing datastore is allowed: it rolls the servers
// out with the new values (a k3s configuration change).
func ValidateDatastoreChange(oldConfig, newConfig *bootstrapv1.KThreesServerConfig, fldPath *field.Path) field.ErrorList {
	before, after := oldConfig.Datastore != nil, newConfig.Datastore != nil
	if before == after {
		return nil
	}
	from, to := "the embedded etcd", "an external datastore"
	if before {
		from, to = to, from
	}
	return field.ErrorList{field.Forbidden(fldPath.Child("datastore"), strings.Join([]string{
		"cannot switch from ", from, " to ", to, ": k3s servers cannot move the cluster's data between datastores, ",
		"so the new servers would start an empty cluster; create a new cluster instead. ",
		"Changing the Secret references of an existing datastore is allowed",
	}, ""))}
}
