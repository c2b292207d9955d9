package bootstrap

import (
	"path"
	"strings"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// validateEtcd checks serverConfig.etcd. Snapshots and restores are the embedded
// etcd's, so they are refused beside an external datastore; the schedule is parsed
// with the cron library k3s itself uses (robfig/cron's standard parser), so that a
// schedule k3s would refuse at start is refused here.
func validateEtcd(c *bootstrapv1.KThreesServerConfig, fldPath *field.Path) field.ErrorList {
	e := c.Etcd
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if c.Datastore != nil {
		p := fldPath
		if e.Snapshots != nil {
			p = fldPath.Child("snapshots")
		}
		errs = append(errs, field.Forbidden(p,
			"etcd snapshots and restores need k3s's embedded etcd, and serverConfig.datastore replaces it: back up the external datastore itself"))
	}
	if s := e.Snapshots; s != nil {
		errs = append(errs, validateEtcdSnapshots(s, fldPath.Child("snapshots"))...)
	}
	if p := e.RestoreFrom; p != "" {
		hasS3 := e.Snapshots != nil && e.Snapshots.S3 != nil
		switch {
		case strings.ContainsAny(p, "\n\r\x00"):
			errs = append(errs, field.Invalid(fldPath.Child("restoreFrom"), field.OmitValueType{}, "must be one line"))
		case !hasS3 && !path.IsAbs(p):
			errs = append(errs, field.Invalid(fldPath.Child("restoreFrom"), p,
				"must be the absolute path of a snapshot file on the machine, or the name of a snapshot in S3 with snapshots.s3 set"))
		case hasS3 && !path.IsAbs(p) && !k3s.EtcdS3SnapshotName(p):
			errs = append(errs, field.Invalid(fldPath.Child("restoreFrom"), p,
				"must be a snapshot name in the bucket's folder (snapshots.s3.folder), without \"..\" elements or a trailing \"/\", or the absolute path of a snapshot file on the machine"))
		}
	}
	return errs
}

func validateEtcdSnapshots(s *bootstrapv1.EtcdSnapshots, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Schedule != "" {
		if _, err := cron.ParseStandard(s.Schedule); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("schedule"), s.Schedule,
				"must be a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. \"0 */6 * * *\": "+err.Error()))
		}
	}
	if s.Retention != nil && *s.Retention < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("retention"), *s.Retention, "must be at least 1"))
	}
	if s.Directory != "" && !path.IsAbs(s.Directory) {
		errs = append(errs, field.Invalid(fldPath.Child("directory"), s.Directory, "must be an absolute path"))
	}
	if s3 := s.S3; s3 != nil {
		p := fldPath.Child("s3")
		if s3.Bucket == "" {
			errs = append(errs, field.Required(p.Child("bucket"), "the bucket to upload snapshots to is required"))
		}
		if strings.Contains(s3.Endpoint, "://") {
			errs = append(errs, field.Invalid(p.Child("endpoint"), s3.Endpoint,
				"must be a host with an optional port, without a scheme (insecure: true selects plain HTTP)"))
		}
		if s3.EndpointCASecret != nil {
			errs = append(errs, validateSecretKeyReference(s3.EndpointCASecret, p.Child("endpointCASecret"))...)
		}
		if s3.CredentialsSecret != nil {
			errs = append(errs, validateSecretName(s3.CredentialsSecret.Name, p.Child("credentialsSecret", "name"))...)
		}
	}
	return errs
}
