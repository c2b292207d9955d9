package cloudinit

import (
	"errors"
	"fmt"
	"path"
	"strings"

	bootstrapv1 "github.com/capk3s/capk3s/api/bootstrap/v1beta2"
	"github.com/capk3s/capk3s/internal/k3s"
)

// EtcdS3CAPath is where every server finds the S3 endpoint's CA, for those who
// send k3s S3 settings of their own (an on-demand snapshot's request).
const EtcdS3CAPath = etcdS3CAPath

const (
	// etcdS3CAPath is where the S3 endpoint's CA goes, beside k3s's own TLS files
	// (k3s leaves a directory of ours there alone, as for the datastore's).
	etcdS3CAPath = "/var/lib/rancher/k3s/server/tls/etcd-s3/ca.crt"
	// k3sEnvPath is an environment file the k3s unit that the install script
	// writes reads (EnvironmentFile=-/etc/default/%N). The script rewrites its own
	// k3s.service.env on every run, so capk3s cannot use that one; this file it
	// leaves alone.
	k3sEnvPath = "/etc/default/k3s"
)

// EtcdS3 holds the values read from the Secrets that
// spec.serverConfig.etcd.snapshots.s3 references. All of it stays out of config.yaml.
type EtcdS3 struct {
	// AccessKeyID and SecretAccessKey are k3s's etcd-s3-access-key and
	// etcd-s3-secret-key, given to k3s as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
	// (the environment variables those options read). Both empty: none given.
	AccessKeyID, SecretAccessKey string
	// EndpointCA is PEM; empty means not used.
	EndpointCA string
}

// String keeps the values out of logs should the struct ever be printed.
func (EtcdS3) String() string { return "etcd-s3(redacted)" }

// checkEtcd rejects etcd input that the machine could not use. Its errors never
// quote a secret.
func checkEtcd(in Input) error {
	e := in.Spec.ServerConfig.Etcd
	var s3 *bootstrapv1.EtcdSnapshotsS3
	if e != nil && e.Snapshots != nil {
		s3 = e.Snapshots.S3
	}
	switch {
	case in.Role == Agent && in.EtcdS3 != nil:
		return errors.New("etcd S3 values are for servers only; an agent must not receive the S3 credentials")
	case in.Role == Agent:
		return nil
	case e != nil && in.Spec.ServerConfig.Datastore != nil:
		return errors.New("spec.serverConfig.etcd configures the embedded etcd, which a server on spec.serverConfig.datastore does not run")
	case s3 == nil && in.EtcdS3 != nil:
		return errors.New("etcd S3 values were given but spec.serverConfig.etcd.snapshots.s3 is not set")
	case s3 == nil:
		return nil
	case (s3.CredentialsSecret != nil || s3.EndpointCASecret != nil) && in.EtcdS3 == nil:
		// Rendering anyway would start a server whose uploads all fail.
		return errors.New("spec.serverConfig.etcd.snapshots.s3 names Secrets whose values were not resolved")
	}
	if in.EtcdS3 == nil {
		return nil
	}
	c := in.EtcdS3
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return errors.New("the S3 access key ID and secret access key go together")
	}
	for _, v := range []struct{ name, value string }{
		{bootstrapv1.EtcdS3AccessKeyIDKey, c.AccessKeyID}, {bootstrapv1.EtcdS3SecretAccessKeyKey, c.SecretAccessKey},
	} {
		if !envSafe(v.value) {
			return fmt.Errorf("the S3 credentials Secret's %s holds a line break, a control character or a single quote, which an environment file cannot carry", v.name)
		}
	}
	if d := e.Snapshots.Directory; d != "" && !path.IsAbs(d) {
		return fmt.Errorf("spec.serverConfig.etcd.snapshots.directory %q must be absolute", d)
	}
	return nil
}

// envSafe says whether v can be written single-quoted into a systemd environment
// file (and read by sh, which the restore command uses) byte for byte.
func envSafe(v string) bool {
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == '\'' {
			return false
		}
	}
	return true
}

// etcdOptions maps spec.serverConfig.etcd.snapshots onto k3s's options. The S3
// credentials are not among them: they go to k3sEnvPath.
func etcdOptions(o k3sOptions, e *bootstrapv1.Etcd, s3Values *EtcdS3) {
	if e == nil || e.Snapshots == nil {
		return
	}
	s := e.Snapshots
	o.str("etcd-snapshot-schedule-cron", s.Schedule)
	if s.Retention != nil {
		o["etcd-snapshot-retention"] = int(*s.Retention)
	}
	o.str("etcd-snapshot-dir", s.Directory)
	if s.Compress {
		o["etcd-snapshot-compress"] = true
	}
	if s.S3 == nil {
		return
	}
	o["etcd-s3"] = true
	o.str("etcd-s3-bucket", s.S3.Bucket)
	o.str("etcd-s3-endpoint", s.S3.Endpoint)
	o.str("etcd-s3-region", s.S3.Region)
	o.str("etcd-s3-folder", s.S3.Folder)
	if s.S3.Insecure {
		o["etcd-s3-insecure"] = true
	}
	if s.S3.SkipSSLVerify {
		o["etcd-s3-skip-ssl-verify"] = true
	}
	if s3Values != nil && s3Values.EndpointCA != "" {
		o["etcd-s3-endpoint-ca"] = etcdS3CAPath
	}
}

// addEtcdFiles writes the S3 endpoint's CA and the environment file with the S3
// credentials, both 0600 (addGenerated).
func (s *fileSet) addEtcdFiles(v *EtcdS3) error {
	if v == nil {
		return nil
	}
	if v.EndpointCA != "" {
		if err := s.addGenerated(etcdS3CAPath, []byte(v.EndpointCA)); err != nil {
			return err
		}
	}
	if v.AccessKeyID == "" {
		return nil
	}
	env := "AWS_ACCESS_KEY_ID='" + v.AccessKeyID + "'\nAWS_SECRET_ACCESS_KEY='" + v.SecretAccessKey + "'\n"
	return s.addGenerated(k3sEnvPath, []byte(env))
}

// snapshotDirCommand creates spec.serverConfig.etcd.snapshots.directory on a server,
// before k3s starts. k3s creates only its default folder; a folder named by
// etcd-snapshot-dir must exist (k3s pkg/etcd/snapshot.go, snapshotDir; v1.34.9,
// v1.35.4, v1.36.2), or every scheduled snapshot and a cluster-reset restore from
// S3, which downloads into it, fail. Mode 0700 is the one k3s gives its own folder;
// an existing folder (a mount, one preK3sCommands made) is left as it is. A path
// that cannot be a folder stops the bootstrap, saying why, as a failed check does.
// Nil for agents and where no folder is given.
func snapshotDirCommand(in Input) ([]string, error) {
	e := in.Spec.ServerConfig.Etcd
	if in.Role == Agent || e == nil || e.Snapshots == nil || e.Snapshots.Directory == "" {
		return nil, nil
	}
	d := e.Snapshots.Directory
	if !carriable(d) || strings.ContainsAny(d, "\n\r") {
		return nil, fmt.Errorf("spec.serverConfig.etcd.snapshots.directory %s", notCarriable)
	}
	if !path.IsAbs(d) {
		return nil, fmt.Errorf("spec.serverConfig.etcd.snapshots.directory %q must be absolute", d)
	}
	return []string{fmt.Sprintf("mkdir -p -m 0700 %s || %s", shellQuote(d),
		failInline(fmt.Sprintf("could not create the etcd snapshot folder %s (serverConfig.etcd.snapshots.directory)", d)))}, nil
}

// restoreCommands restores the embedded etcd from spec.serverConfig.etcd.restoreFrom
// on the first server, before its k3s service starts: k3s's cluster-reset with
// cluster-reset-restore-path, run once in the foreground (k3s exits when the restore
// is done). Written into config.yaml instead, the options would restore again on
// every restart of the service. The environment file is read first, so that a
// restore from S3 has the credentials. With snapshots.s3 set, k3s reads the path as a
// key in the bucket; an absolute path is a file on the machine, so the restore runs
// with etcd-s3 turned off on the command line (see k3s.EtcdS3SnapshotName). Nil for
// every other machine.
func restoreCommands(in Input) []string {
	e := in.Spec.ServerConfig.Etcd
	if in.Role != ServerInit || e == nil || e.RestoreFrom == "" {
		return nil
	}
	// One line, so that k3s starts only after a successful restore: started on a
	// failed one, the first server would make a new, empty cluster.
	local := ""
	if e.Snapshots != nil && e.Snapshots.S3 != nil && path.IsAbs(e.RestoreFrom) {
		local = " --etcd-s3=false"
	}
	return []string{fmt.Sprintf(
		"(set -a; [ ! -f %[1]s ] || . %[1]s; set +a; k3s server --cluster-reset%[3]s --cluster-reset-restore-path=%[2]s) && systemctl start k3s",
		k3sEnvPath, shellQuote(e.RestoreFrom), local)}
}

// restoring says whether the first server restores a snapshot before k3s starts,
// so that the install must not start the service.
func restoring(in Input) bool {
	return len(restoreCommands(in)) > 0
}

// checkRestore refuses a restore path k3s would misread.
func checkRestore(in Input) error {
	e := in.Spec.ServerConfig.Etcd
	if e == nil || e.RestoreFrom == "" || in.Role == Agent {
		return nil
	}
	p := e.RestoreFrom
	if !carriable(p) || strings.ContainsAny(p, "\n\r") {
		return fmt.Errorf("spec.serverConfig.etcd.restoreFrom %s", notCarriable)
	}
	hasS3 := e.Snapshots != nil && e.Snapshots.S3 != nil
	switch {
	case !hasS3 && !path.IsAbs(p):
		return fmt.Errorf("spec.serverConfig.etcd.restoreFrom %q must be an absolute path of a snapshot file, or a snapshot name with snapshots.s3 set", p)
	case hasS3 && !path.IsAbs(p) && !k3s.EtcdS3SnapshotName(p):
		return fmt.Errorf("spec.serverConfig.etcd.restoreFrom %q must be a snapshot name in the bucket's folder, or the absolute path of a snapshot file", p)
	}
	return nil
}
