package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `focusgate prune` exits 2 when it could not do its work at all (usage,
// I/O, configuration, input over the cap) and 1 when it failed open, the
// input printed unchanged on stdout.
func TestPruneExitStatus(t *testing.T) {
	const file = "../../testdata/axtrees/bgym-pr301_workarena_standard_laptop_form.txt"
	down, _ := scriptedRetriever(t, http.StatusInternalServerError, "")
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"unknown flag", []string{"--no-such-flag", file}, nil, 2},
		{"two files", []string{file, file}, nil, 2},
		{"missing file", []string{"no/such/file.txt"}, nil, 2},
		{"a directory", []string{"../../testdata"}, nil, 2},
		{"bad configuration", []string{file}, map[string]string{"FOCUSGATE_MODE": "shred"}, 2},
		{"bad --api", []string{"--request", "--api", "soap", file}, nil, 2},
		{"input over the cap", []string{file}, map[string]string{"FOCUSGATE_MAX_BODY_BYTES": "1000"}, 2},
		{"no page in the input", []string{"../../go.mod"}, nil, 2},
		{"retriever down: failed open", []string{file}, map[string]string{"FOCUSGATE_RETRIEVER_URL": down}, 1},
		{"retriever down, a request: failed open", []string{"--request", "../../testdata/requests/genericagent_workarena_standard_laptop_step5_with_history.json"}, map[string]string{"FOCUSGATE_RETRIEVER_URL": down}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"focusgate", "prune"}, tt.args...), func(k string) string { return tt.env[k] }, nil, &stdout, &stderr)
			if err == nil {
				t.Fatal("no error")
			}
			if got := exitCode(err); got != tt.want {
				t.Errorf("exit status %d for %v, want %d", got, err, tt.want)
			}
			if tt.want == 1 && stdout.Len() == 0 {
				t.Error("failed open without printing the input")
			}
			if tt.want == 2 && stdout.Len() > 0 {
				t.Errorf("an input error printed %d bytes", stdout.Len())
			}
		})
	}
	if got := exitCode(errors.New("serve: listen")); got != 1 {
		t.Errorf("other commands' errors exit %d, want 1", got)
	}
}

// mkfifo makes a FIFO that nobody writes to, and frees whoever is left
// blocked opening it for reading when the test ends.
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Succeeds only while a reader holds the FIFO open or waits for
		// it; it then ends that reader's wait with end of file.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path
}

// untilDeadline ends a wait that would otherwise hang the test binary: the
// test fails when its deadline is near instead of when the binary's timeout
// kills it.
func untilDeadline(t *testing.T) <-chan time.Time {
	deadline, ok := t.Deadline()
	if !ok {
		return nil
	}
	return time.After(time.Until(deadline) - 10*time.Second)
}

// The end of the command's context (SIGTERM, SIGINT) ends `focusgate prune`
// even while FILE is a FIFO nobody opens for writing, so that its open
// blocks in the kernel.
func TestPruneEndsWhileWaitingForItsInput(t *testing.T) {
	fifo := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"focusgate", "prune", fifo}, func(string) string { return "" }, nil, &bytes.Buffer{}, &bytes.Buffer{})
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || exitCode(err) != 2 {
			t.Errorf("error %v (exit status %d), want the interruption, exit status 2", err, exitCode(err))
		}
	case <-untilDeadline(t):
		t.Fatal("prune still waits for its FIFO after its context ended")
	}
}

// The same with a real SIGTERM: the test binary runs focusgate's main in a
// child process, which blocks reading a FIFO whose writer never writes.
func TestPruneEndsOnSIGTERM(t *testing.T) {
	if fifo := os.Getenv("FOCUSGATE_TEST_PRUNE_FIFO"); fifo != "" {
		os.Args = []string{"focusgate", "prune", fifo}
		main()
		os.Exit(0)
	}
	fifo := mkfifo(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPruneEndsOnSIGTERM$")
	cmd.Env = append(os.Environ(), "FOCUSGATE_TEST_PRUNE_FIFO="+fifo)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Opening the write end returns once the child has opened the FIFO
	// for reading, which it does after its signal handler is installed.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "context canceled") {
			t.Errorf("the child ended with %v, stderr %q; want exit status 2 naming the interruption", err, stderr.String())
		}
	case <-untilDeadline(t):
		t.Fatal("prune still reads its FIFO after SIGTERM")
	}
}
