package k3smodel

import "errors"

// CheckServerFlags applies the checks `k3s server` makes on its flags before it starts
// anything (pkg/cli/server/server.go run(), v1.34.9, v1.35.4, v1.36.2):
//   - --disable-etcd needs --server: a server without etcd must join one that has it;
//   - --disable-etcd and --datastore-endpoint exclude each other;
//   - --cluster-reset-restore-path needs --cluster-reset.
//
// k3s does not refuse --disable-etcd together with --cluster-init; without --server
// the first rule refuses it anyway.
func CheckServerFlags(cfg Config) error {
	fail := func(reason string) error { return &ExitError{Role: RoleServer, Reason: reason} }
	if cfg.Bool("disable-etcd") && cfg.Last("server") == "" {
		return fail("invalid flag use; --server is required with --disable-etcd")
	}
	if cfg.Bool("disable-etcd") && cfg.Last("datastore-endpoint") != "" {
		return fail("invalid flag use; cannot use --disable-etcd with --datastore-endpoint")
	}
	if cfg.Last("cluster-reset-restore-path") != "" && !cfg.Bool("cluster-reset") {
		return fail("invalid flag use; --cluster-reset required with --cluster-reset-restore-path")
	}
	return nil
}

// IsExit says whether err is k3s refusing to start.
func IsExit(err error) bool {
	var e *ExitError
	return errors.As(err, &e)
}
