package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// build compiles focusgate and the two bare proxies into dir.
func build(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/focusgate/focusgate/cmd/focusgate",
		"github.com/focusgate/focusgate/bench/loadbench/bareproxy",
		"github.com/focusgate/focusgate/bench/loadbench/defaultproxy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// gatewayEnv is this process's environment without any FOCUSGATE_ setting,
// so that focusgate runs with its defaults, plus the fakes' URLs.
func gatewayEnv(upstreamURL, retrieverURL string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "FOCUSGATE_") })
	return append(env, "FOCUSGATE_UPSTREAM_URL="+upstreamURL, "FOCUSGATE_RETRIEVER_URL="+retrieverURL)
}

// process is a proxy under test. It runs as a child process so that its CPU
// time and memory are measured apart from the load generator's and the
// fakes', which run in this one.
type process struct {
	name, url string
	cmd       *exec.Cmd
	logPath   string
	done      chan struct{} // closed once the process has exited
	err       error         // why it exited; set before done is closed
}

// start runs bin with args, and -addr set to a free loopback port, and
// returns once it answers HTTP there. Its output goes to a log in logDir.
func start(ctx context.Context, bin string, args, env []string, logDir string) (*process, error) {
	name := filepath.Base(bin)
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child has its own descriptor once started.
	defer logFile.Close()

	cmd := exec.Command(bin, append(args, "-addr", addr)...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, url: "http://" + addr, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		_ = p.stop()
		return nil, fmt.Errorf("%s: %w; its log ends:\n%s", name, err, p.logTail())
	}
	return p, nil
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady returns once the process answers an HTTP request, whatever the
// answer.
func (p *process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before serving: %w", p.err)
		case <-ctx.Done():
			return fmt.Errorf("not serving: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// stop asks the process to shut down, as an orchestrator would, and kills
// it if it has not exited within ten seconds.
func (p *process) stop() error {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if p.err != nil {
		return fmt.Errorf("%s: %w; its log ends:\n%s", p.name, p.err, p.logTail())
	}
	return nil
}

func (p *process) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(b)
}

// clockTicks is Linux's USER_HZ, the unit of CPU times in /proc; it is 100
// on every architecture Go supports.
const clockTicks = 100

// cpuTime returns the CPU time, user and system, that the process has used.
func (p *process) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces; utime and stime
	// are the 12th and 13th fields after it.
	var f []string
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		f = strings.Fields(string(b[i+1:]))
	}
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", p.cmd.Process.Pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.cmd.Process.Pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// resetPeakRSS makes the peak resident set size start again from the
// current one, so that peakRSS reports the peak of what follows.
func (p *process) resetPeakRSS() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0)
}

// peakRSS returns the process's peak resident set size in bytes (VmHWM).
func (p *process) peakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmHWM: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", p.cmd.Process.Pid)
}
