package envtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresUser is the system account PostgreSQL runs as: initdb and postgres refuse
// to run as root.
const postgresUser = "postgres"

// Postgres is a throwaway PostgreSQL server on 127.0.0.1, standing in for the external
// datastore a k3s cluster may run on. Every TCP connection needs a password
// (scram-sha-256), so that a wrong one really fails, as it would against a real
// database.
type Postgres struct {
	// Port is the TCP port on 127.0.0.1.
	Port int

	dir       string
	superPass string
	cmd       *exec.Cmd
	exited    chan struct{}
	log       *os.File

	stopOnce sync.Once
	stopErr  error
}

// StartPostgres runs initdb and postgres in a new directory below parent ("" is the
// system's temporary directory; it must be reachable by the postgres account, which a
// t.TempDir owned by root is not). Run as root, both run as the postgres account.
// On error nothing is left running.
func StartPostgres(parent string) (_ *Postgres, retErr error) {
	bin, err := postgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "capk3s-postgres-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir, superPass: randomHex()}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(fmt.Errorf("postgres: %w", retErr), p.Stop())
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	pwFile := filepath.Join(dir, "superuser.pw")
	if err := os.WriteFile(pwFile, []byte(p.superPass+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(pwFile, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	if p.log, err = os.Create(filepath.Join(dir, "postgres.log")); err != nil {
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", postgresUser,
		"--pwfile", pwFile, "--auth", "scram-sha-256", "--no-sync", "--encoding", "UTF8", "--locale", "C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if p.Port, err = FreePort(); err != nil {
		return nil, err
	}
	// fsync off: the data lives as long as one test run.
	p.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"),
		"-h", workloadHost, "-p", strconv.Itoa(p.Port), "-k", dir, "-c", "fsync=off", "-c", "max_connections=200")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	p.exited = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitUp(); err != nil {
		return nil, startError("postgres", p.log, err)
	}
	return p, nil
}

// waitUp waits until the superuser can connect.
func (p *Postgres) waitUp() error {
	return Eventually(context.Background(), workloadStartTimeout, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, errors.New("postgres exited")
		default:
		}
		conn, err := pgx.Connect(ctx, p.DSN(postgresUser, p.superPass, "postgres"))
		if err != nil {
			return false, nil
		}
		return true, conn.Close(ctx)
	})
}

// DSN is the URL kine and k3s take as datastore-endpoint for the given role, password
// and database.
func (p *Postgres) DSN(role, password, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(role, password),
		Host:     fmt.Sprintf("%s:%d", workloadHost, p.Port),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateRole creates a login role with the given password.
func (p *Postgres) CreateRole(ctx context.Context, role, password string) error {
	return p.exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD %s",
		pgx.Identifier{role}.Sanitize(), quoteLiteral(password)))
}

// CreateDatabase creates a database owned by the given role.
func (p *Postgres) CreateDatabase(ctx context.Context, db, owner string) error {
	return p.exec(ctx, fmt.Sprintf("CREATE DATABASE %s OWNER %s", pgx.Identifier{db}.Sanitize(), pgx.Identifier{owner}.Sanitize()))
}

func (p *Postgres) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, p.DSN(postgresUser, p.superPass, "postgres"))
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	return errors.Join(err, conn.Close(ctx))
}

// Stop shuts postgres down (fast mode: open connections are cut) and removes its
// files. Calling it again returns the first call's result.
func (p *Postgres) Stop() error {
	p.stopOnce.Do(func() {
		var errs []error
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				errs = append(errs, errors.New("postgres did not stop within 30s; killed"), p.cmd.Process.Kill())
				<-p.exited
			}
		}
		if p.log != nil {
			errs = append(errs, p.log.Close())
		}
		errs = append(errs, os.RemoveAll(p.dir))
		p.stopErr = errors.Join(errs...)
	})
	return p.stopErr
}

// postgresBinDir finds initdb and postgres: in PATH, else where Debian's packages put
// them.
func postgresBinDir() (string, error) {
	if path, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Dir(real), nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		return "", errors.New("postgres: initdb not found in PATH nor /usr/lib/postgresql/*/bin; run hack/ensure-postgres.sh")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// postgresCredential is the postgres account when running as root, nil otherwise (the
// processes then run as the current user, which postgres accepts).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(postgresUser)
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root needs the %s account: %w", postgresUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings is on).
func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := range len(s) {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}

// randomHex is a fresh random password.
func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
