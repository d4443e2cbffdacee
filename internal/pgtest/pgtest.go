// Package pgtest starts a throw-away PostgreSQL cluster for tests: initdb and pg_ctl
// (Debian's /usr/lib/postgresql/VERSION/bin, $PRIVTRAIN_PG_BIN, or the PATH) in a
// temporary directory, on a random port, listening on a unix socket in that directory
// only, with trust authentication; run as the user postgres when the tests run as root
// (PostgreSQL refuses root). A test package starts it on first use (Server) and stops
// it from its TestMain (Stop); child processes of a test reach it by the URL the test
// hands them. Where PostgreSQL is not installed or does not start, Require skips the
// test with the reason.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running cluster.
type Server struct {
	dir, data, bin string
	port           int
	asPostgres     bool // the commands run as the user postgres (the tests run as root)
}

var (
	mu       sync.Mutex
	srv      *Server
	startErr error
	started  bool
	dbs      atomic.Int64
)

// Get starts the cluster on first use and returns it, or why it cannot start.
func Get() (*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	if !started {
		started = true
		srv, startErr = start()
	}
	return srv, startErr
}

// Require returns the cluster, or skips t with the reason it cannot start.
func Require(t testing.TB) *Server {
	t.Helper()
	s, err := Get()
	if err != nil {
		t.Skipf("PostgreSQL is not available, so this test of the database store does not run: %v (.ci/run installs Debian's postgresql)", err)
	}
	return s
}

// Stop stops the cluster, if one was started, and removes its directory.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	if srv != nil {
		srv.pgctl(30*time.Second, "stop", "-m", "immediate")
		os.RemoveAll(srv.dir)
		srv = nil
	}
}

// binDir finds initdb and pg_ctl.
func binDir() (string, error) {
	if d := os.Getenv("PRIVTRAIN_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va // the newest first
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no initdb in /usr/lib/postgresql/*/bin or on the PATH (set PRIVTRAIN_PG_BIN)")
}

// ownerFile names, in a cluster's directory, the file holding the pid of the test process
// that started it.
const ownerFile = "owner.pid"

// removeStale stops and removes the clusters left by test processes that died before
// their Stop (killed by a timeout, say).
func removeStale(bin string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pgtest-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // starting, or not ours
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		s := &Server{dir: d, data: filepath.Join(d, "data"), bin: bin, asPostgres: os.Geteuid() == 0}
		s.pgctl(30*time.Second, "stop", "-m", "immediate")
		os.RemoveAll(d)
	}
}

func start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	removeStale(bin)
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data"), bin: bin, asPostgres: os.Geteuid() == 0}
	fail := func(err error) (*Server, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fail(fmt.Errorf("running as root, and no user postgres to run the server as: %v", err))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return fail(err)
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			return fail(errors.New("running as root, and no runuser to run the server as postgres"))
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	if out, err := s.run(2*time.Minute, "initdb", "-D", s.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		return fail(fmt.Errorf("initdb: %v: %s", err, strings.TrimSpace(string(out))))
	}
	conf := fmt.Sprintf("\nport = %d\nlisten_addresses = ''\nunix_socket_directories = '%s'\nshared_buffers = 16MB\nmax_connections = 60\n", s.port, dir)
	f, err := os.OpenFile(filepath.Join(s.data, "postgresql.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fail(err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	if out, err := s.pgctl(2*time.Minute, "start", "-w", "-t", "110", "-l", filepath.Join(dir, "log")); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		s.pgctl(30*time.Second, "stop", "-m", "immediate")
		return fail(fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log))
	}
	return s, nil
}

// run runs a PostgreSQL program, as postgres when the tests run as root.
func (s *Server) run(timeout time.Duration, prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path := filepath.Join(s.bin, prog)
	var c *exec.Cmd
	if s.asPostgres {
		c = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		c = exec.CommandContext(ctx, path, args...)
	}
	c.Dir = s.dir
	return c.CombinedOutput()
}

func (s *Server) pgctl(timeout time.Duration, args ...string) ([]byte, error) {
	return s.run(timeout, "pg_ctl", append([]string{"-D", s.data}, args...)...)
}

// Restart restarts the server (pg_ctl restart -m fast): every connection is cut.
func (s *Server) Restart() error {
	if out, err := s.pgctl(2*time.Minute, "restart", "-m", "fast", "-w", "-t", "110", "-l", filepath.Join(s.dir, "log")); err != nil {
		return fmt.Errorf("pg_ctl restart: %v: %s", err, out)
	}
	return nil
}

// URL is the URL of database db (as the superuser postgres, no password), with extra
// query parameters (key=value).
func (s *Server) URL(db string, params ...string) string {
	q := append([]string{"host=" + s.dir, "port=" + strconv.Itoa(s.port), "sslmode=disable"}, params...)
	return "postgres://postgres@/" + db + "?" + strings.Join(q, "&")
}

// Psql runs SQL in database db as the superuser.
func (s *Server) Psql(db, sql string) error {
	out, err := s.run(time.Minute, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", s.dir, "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", db, "-c", sql)
	if err != nil {
		return fmt.Errorf("psql: %v: %s", err, out)
	}
	return nil
}

// NewDatabase creates an empty database of its own for t (dropped when t ends) and
// returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbs.Add(1))
	if err := s.Psql("postgres", "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Psql("postgres", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return s.URL(name)
}
