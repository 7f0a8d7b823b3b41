// Package deploy holds the tests of what focusgate ships to run it: the
// docker compose file and the Dockerfile here, the Helm chart and the Grafana
// dashboard in their folders.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// service is the part of a compose service these tests read.
type service struct {
	Image       string            `yaml:"image"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Restart     string            `yaml:"restart"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func compose(t *testing.T) map[string]service {
	t.Helper()
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]service `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f.Services
}

// The gateway's healthcheck runs the binary the distroless image has, and
// the image's own HEALTHCHECK does the same for a plain docker run.
func TestComposeHealthcheck(t *testing.T) {
	gw := compose(t)["focusgate"]
	if want := []string{"CMD", "/usr/local/bin/focusgate", "health"}; strings.Join(gw.Healthcheck.Test, " ") != strings.Join(want, " ") {
		t.Errorf("focusgate's healthcheck is %q, want %q", gw.Healthcheck.Test, want)
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docker), `CMD ["/usr/local/bin/focusgate", "health"]`) {
		t.Error("the Dockerfile has no HEALTHCHECK running focusgate health")
	}
}

// A missing keys file stops `docker compose up` before the gateway starts,
// with a message that says what to write where, instead of a gateway that
// exits and is restarted over and over. The check's script is run here as
// compose would run it.
func TestComposeKeysCheck(t *testing.T) {
	services := compose(t)
	gw, check := services["focusgate"], services["keys"]
	if gw.DependsOn["keys"].Condition != "service_completed_successfully" {
		t.Fatalf("focusgate does not wait for the keys check to succeed: depends_on %v", gw.DependsOn)
	}
	if check.Restart != "no" {
		t.Errorf("the keys check restarts (%q): a failed check would loop", check.Restart)
	}
	if !slices.Equal(check.Volumes, gw.Volumes) {
		t.Errorf("the keys check mounts %q, the gateway %q: it must look at what the gateway reads", check.Volumes, gw.Volumes)
	}
	if check.Environment["FOCUSGATE_CLIENT_KEYS_FILE"] != gw.Environment["FOCUSGATE_CLIENT_KEYS_FILE"] {
		t.Errorf("the keys check reads %q, the gateway %q", check.Environment["FOCUSGATE_CLIENT_KEYS_FILE"], gw.Environment["FOCUSGATE_CLIENT_KEYS_FILE"])
	}
	if len(check.Entrypoint) != 2 || check.Entrypoint[0] != "sh" || len(check.Command) != 1 {
		t.Fatalf("the keys check is %q %q, want sh -c and one script", check.Entrypoint, check.Command)
	}
	// Compose reads "$$" as a literal "$"; a lone "$" would be one of its
	// own variables, which the script must not use.
	if lone := regexp.MustCompile(`(^|[^$])\$([^$]|$)`).FindString(strings.ReplaceAll(check.Command[0], "$$", "")); lone != "" {
		t.Fatalf("the keys check's script has a compose variable %q", lone)
	}
	script := strings.ReplaceAll(check.Command[0], "$$", "$")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh to run the keys check with: %v", err)
	}

	dir := t.TempDir()
	present, empty := filepath.Join(dir, "client-keys"), filepath.Join(dir, "empty")
	os.WriteFile(present, []byte("alice:0123456789abcdef0123456789abcdef\n"), 0o600)
	os.WriteFile(empty, nil, 0o600)
	for _, c := range []struct {
		name, file string
		ok         bool
	}{
		{"present", present, true},
		{"no keys file configured", "", true},
		{"missing", filepath.Join(dir, "nothing-here"), false},
		{"empty", empty, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(sh, "-c", script)
			cmd.Env = []string{"FOCUSGATE_CLIENT_KEYS_FILE=" + c.file, "PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			if c.ok {
				if err != nil || len(out) > 0 {
					t.Errorf("the check failed (%v): %s", err, out)
				}
				return
			}
			if err == nil {
				t.Fatal("the check passed")
			}
			for _, want := range []string{c.file, "./keys/client-keys", "/etc/focusgate/keys", "name:key", "openssl rand -hex 24", "docker compose up"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("the message does not say %q:\n%s", want, out)
				}
			}
		})
	}
}
