// Package redistest runs throwaway redis-server processes for tests, so that
// code talking to Redis is tested against the real thing, including a server
// that dies and comes back. There is deliberately no fallback to a fake.
// Without redis-server a test that needs it skips, saying so, so that
// `go test ./...` passes on a machine with Go alone; `make test`, which
// installs redis-server, fails on any such skip (tools/skipcheck).
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startAttempts bounds retries when another process takes the free port
// between the moment it is picked and the moment redis-server binds it.
const startAttempts = 3

// readyTimeout is how long a starting server may take to answer PING, and a
// new cluster to join and report itself ok: generous, since a loaded
// machine takes seconds for what takes milliseconds on an idle one.
const readyTimeout = time.Minute

// Server is a redis-server process owned by one test. It is not safe for
// concurrent use.
type Server struct {
	tb      testing.TB
	bin     string
	dir     string
	port    int
	args    []string // further redis-server arguments
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	exitErr error         // cmd's exit status, once exited is closed
}

// Start launches redis-server from PATH on a free loopback port, without
// persistence, and stops it when the test ends. It skips the test if
// redis-server is not installed (a test that needs to stop its server
// cannot use a shared one).
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skipf("needs redis-server, which is not on PATH (%v): install it (apt-get install redis-server; make test does)", err)
	}
	s := &Server{tb: tb, bin: bin, dir: tb.TempDir()}
	for attempt := 1; ; attempt++ {
		s.port = freePort(tb)
		err := s.start()
		if err == nil {
			break
		}
		if attempt == startAttempts {
			tb.Fatalf("redistest: %v", err)
		}
	}
	tb.Cleanup(s.Stop)
	return s
}

// Shared returns the URL of a Redis server for tests that never stop it: the
// one in REDIS_URL when set (scripts/with-redis.sh, CI), else a server of the
// test's own from Start. Tests sharing a server must use keys of their own.
func Shared(tb testing.TB) string {
	tb.Helper()
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return Start(tb).URL()
}

// URL returns the server's address as a redis:// URL for database 0.
func (s *Server) URL() string {
	return "redis://" + s.addr() + "/0"
}

// Stop kills the server, as a crash would: clients see their connections
// drop. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Restart stops the server if it runs and starts an empty one on the same
// port, so that clients reconnect to it.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

func (s *Server) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

func (s *Server) logPath() string {
	return filepath.Join(s.dir, "redis.log")
}

// start launches redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", s.logPath(),
	)
	cmd.Args = append(cmd.Args, s.args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan<- struct{}) {
		s.exitErr = cmd.Wait()
		close(exited)
	}(s.exited)

	if err := s.waitReady(); err != nil {
		s.Stop()
		log, _ := os.ReadFile(s.logPath())
		return fmt.Errorf("redis-server on port %d: %w\n%s", s.port, err, log)
	}
	return nil
}

func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := ping(s.addr())
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("exited before answering PING: %v", s.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("no answer to PING after %v: %w", readyTimeout, err)
		case <-tick.C:
		}
	}
}

// ping sends an inline PING, which needs no client library.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return errors.New("unexpected reply to PING: " + strings.TrimSpace(line))
	}
	return nil
}

// clusterBusOffset is how far above its port a cluster node listens for the
// other nodes.
const clusterBusOffset = 10000

// freeClusterPort returns a loopback port that was free a moment ago, and
// whose cluster bus port, clusterBusOffset above, was too: a node cannot
// start on a port whose bus port does not exist or is taken.
func freeClusterPort(tb testing.TB) int {
	tb.Helper()
	for range 100 {
		port := freePort(tb)
		if port+clusterBusOffset > 65535 {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+clusterBusOffset))); err == nil {
			l.Close()
			return port
		}
	}
	tb.Fatal("redistest: no free port with a free cluster bus port in 100 tries")
	return 0
}

// freePort returns a loopback port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Cluster is a Redis Cluster of throwaway servers owned by one test, each a
// master holding a share of the slots, with no replicas: a master that dies
// takes its slots down with it, as in a cluster failing over.
type Cluster struct {
	Masters []*Server
}

// StartCluster starts masters redis-servers in cluster mode on free
// loopback ports, joins them with redis-cli --cluster create, and waits
// until every node reports the cluster ok. The servers stop when the test
// ends.
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skipf("needs redis-server, which is not on PATH (%v): install it (apt-get install redis-server; make test does)", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		tb.Skipf("needs redis-cli, which is not on PATH (%v): it comes with redis-server (redis-tools)", err)
	}
	c := &Cluster{}
	var addrs []string
	for range masters {
		dir := tb.TempDir()
		s := &Server{tb: tb, bin: bin, dir: dir, args: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			// Nodes that have not completed their handshake within the node
			// timeout are forgotten, and redis-cli then waits for the
			// cluster to join forever: a loaded machine can take more than
			// a second for it.
			"--cluster-node-timeout", "5000",
		}}
		for attempt := 1; ; attempt++ {
			s.port = freeClusterPort(tb)
			if err = s.start(); err == nil {
				break
			}
			if attempt == startAttempts {
				tb.Fatalf("redistest: %v", err)
			}
		}
		tb.Cleanup(s.Stop)
		c.Masters = append(c.Masters, s)
		addrs = append(addrs, s.addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create (a minute at most): %v\n%s", err, out)
	}
	for _, a := range addrs {
		for {
			info, err := command(a, "CLUSTER INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			select {
			case <-ctx.Done():
				tb.Fatalf("redistest: the cluster is not ok after %v: %v\n%s", readyTimeout, err, info)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return c
}

// URL is the cluster's seed URL in go-redis's ParseClusterURL form.
func (c *Cluster) URL() string {
	u := "redis://" + c.Masters[0].addr()
	for i, m := range c.Masters[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + m.addr()
	}
	return u
}

// command sends an inline command and returns the whole reply, up to 64 KiB.
func command(addr, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 64<<10)
	n, err := conn.Read(buf)
	return string(buf[:n]), err
}
