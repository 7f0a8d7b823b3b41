// Package helm holds the tests of focusgate's Helm chart: they render it
// with the pinned helm (built by `make chart-check`, passed in HELM) and
// check what a cluster would run.
package helm

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

const chartDir = "focusgate"

// helmBinary is the helm that `make test` built; without it the tests
// cannot run and say how to get it.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin/helm")
		if _, err := os.Stat(bin); err != nil {
			t.Skip("helm is not built: run `make test` or `make chart-check`, or set HELM")
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("HELM=%s: %v", bin, err)
	}
	return bin
}

// manifest is the part of a Kubernetes object these tests read.
type manifest struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		// Service
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		// Service selector is a plain map; Deployment's is matchLabels.
		ServiceSelector map[string]string `yaml:"-"`
		Template        struct {
			Metadata struct {
				Annotations map[string]string `yaml:"annotations"`
				Labels      map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		// HorizontalPodAutoscaler
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas  int `yaml:"minReplicas"`
		MinAvailable int `yaml:"minAvailable"`
		Endpoints    []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name   string `yaml:"name"`
		Secret struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type container struct {
	Name  string `yaml:"name"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	ReadinessProbe probe `yaml:"readinessProbe"`
	LivenessProbe  probe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	SecurityContext struct {
		ReadOnlyRootFilesystem   bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// rendered is the chart's output, by kind and name.
type rendered struct {
	raw     string
	objects map[string]manifest // "Kind/name"
}

func (r rendered) get(t *testing.T, kind, name string) manifest {
	t.Helper()
	m, ok := r.objects[kind+"/"+name]
	if !ok {
		t.Fatalf("no %s %q rendered; have %v", kind, name, keysOf(r.objects))
	}
	return m
}

func keysOf(m map[string]manifest) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// render runs helm template with the given --set values. The release is
// named "fg", so the objects are "fg-focusgate".
func render(t *testing.T, set ...string) (rendered, error) {
	t.Helper()
	args := []string{"template", "fg", chartDir, "--namespace", "agents"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return rendered{}, errors.New(stderr.String())
	}
	out := rendered{raw: stdout.String(), objects: map[string]manifest{}}
	dec := yaml.NewDecoder(bytes.NewReader(stdout.Bytes()))
	for {
		var raw map[string]any
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output is not YAML: %v\n%s", err, stdout.String())
		}
		if raw == nil {
			continue
		}
		b, _ := yaml.Marshal(raw)
		var m manifest
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatalf("decode %v: %v", raw["kind"], err)
		}
		if m.Kind == "Service" {
			if spec, ok := raw["spec"].(map[string]any); ok {
				if sel, ok := spec["selector"].(map[string]any); ok {
					m.Spec.ServiceSelector = map[string]string{}
					for k, v := range sel {
						m.Spec.ServiceSelector[k], _ = v.(string)
					}
				}
			}
		}
		out.objects[m.Kind+"/"+m.Metadata.Name] = m
	}
	return out, nil
}

func mustRender(t *testing.T, set ...string) rendered {
	t.Helper()
	r, err := render(t, set...)
	if err != nil {
		t.Fatalf("helm template %v: %v", set, err)
	}
	return r
}

func gatewayContainer(t *testing.T, d manifest) container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "focusgate" {
			return c
		}
	}
	t.Fatal("the Deployment has no focusgate container")
	return container{}
}

// env returns a variable's literal value, or "secret:<name>/<key>".
func env(c container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
			continue
		}
		out[e.Name] = e.Value
	}
	return out
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

const (
	upstreamKey = "sk-upstream-chart-test-0123456789"
	gatewayKey  = "fg-alice-chart-test-0123456789"
)

func TestChartRunsTheGatewayWithKeysFromASecret(t *testing.T) {
	r := mustRender(t, "auth.upstreamApiKey="+upstreamKey, "auth.clientKeys=alice:"+gatewayKey)

	d := r.get(t, "Deployment", "fg-focusgate")
	c := gatewayContainer(t, d)
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container ports %+v, want http 8080", c.Ports)
	}
	if got := c.ReadinessProbe.HTTPGet; got.Path != "/readyz" || got.Port != "http" {
		t.Errorf("readiness probe %+v, want /readyz on http", got)
	}
	if got := c.LivenessProbe.HTTPGet; got.Path != "/healthz" || got.Port != "http" {
		t.Errorf("liveness probe %+v, want /healthz on http", got)
	}

	e := env(c)
	for name, want := range map[string]string{
		"FOCUSGATE_ADDR":             ":8080",
		"FOCUSGATE_UPSTREAM_API_KEY": "secret:fg-focusgate/upstream-api-key",
		"FOCUSGATE_CLIENT_KEYS_FILE": "/etc/focusgate/keys/client-keys",
		"FOCUSGATE_UPSTREAM_URL":     "https://api.openai.com/v1",
	} {
		if e[name] != want {
			t.Errorf("env %s = %q, want %q", name, e[name], want)
		}
	}
	if _, set := e["FOCUSGATE_ALLOW_UNAUTHENTICATED"]; set {
		t.Error("FOCUSGATE_ALLOW_UNAUTHENTICATED is set although client keys are configured")
	}
	// The keys file is mounted as a directory (not a subPath), from the Secret.
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/focusgate/keys" ||
		!strings.HasPrefix(e["FOCUSGATE_CLIENT_KEYS_FILE"], c.VolumeMounts[0].MountPath+"/") {
		t.Errorf("volume mounts %+v do not hold FOCUSGATE_CLIENT_KEYS_FILE", c.VolumeMounts)
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret.SecretName != "fg-focusgate" {
		t.Errorf("volumes %+v, want the Secret fg-focusgate", v)
	}

	// Keys are in the Secret, base64-encoded, and nowhere in plain text.
	s := r.get(t, "Secret", "fg-focusgate")
	for key, want := range map[string]string{"upstream-api-key": upstreamKey, "client-keys": "alice:" + gatewayKey} {
		got, err := base64.StdEncoding.DecodeString(s.Data[key])
		if err != nil || string(got) != want {
			t.Errorf("Secret %s = %q (%v), want %q", key, got, err, want)
		}
	}
	for _, secret := range []string{upstreamKey, gatewayKey} {
		if strings.Contains(r.raw, secret) {
			t.Errorf("a key appears in plain text in the rendered manifests")
		}
	}

	// Graceful termination outlasts the gateway's own drain.
	shutdown, err := time.ParseDuration(e["FOCUSGATE_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("FOCUSGATE_SHUTDOWN_TIMEOUT = %q: %v", e["FOCUSGATE_SHUTDOWN_TIMEOUT"], err)
	}
	if grace := time.Duration(d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %s is not longer than FOCUSGATE_SHUTDOWN_TIMEOUT %s", grace, shutdown)
	}

	if !d.Spec.Template.Spec.SecurityContext.RunAsNonRoot || !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("security context: pod %+v, container %+v; want non-root, read-only, no privilege escalation",
			d.Spec.Template.Spec.SecurityContext, c.SecurityContext)
	}
	if a := d.Spec.Template.Metadata.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "8080" || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v, want Prometheus scraping of :8080/metrics", a)
	}

	podLabels := d.Spec.Template.Metadata.Labels
	svc := r.get(t, "Service", "fg-focusgate")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort != "http" || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("service ports %+v, want 80 to http", svc.Spec.Ports)
	}
	if !matches(svc.Spec.ServiceSelector, podLabels) {
		t.Errorf("service selector %v does not select the pods %v", svc.Spec.ServiceSelector, podLabels)
	}
	if !matches(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("deployment selector %v does not select its pods %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	hpa := r.get(t, "HorizontalPodAutoscaler", "fg-focusgate")
	if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "fg-focusgate" || hpa.Spec.MinReplicas < 2 {
		t.Errorf("HPA %+v, want the Deployment with at least 2 replicas", hpa.Spec.ScaleTargetRef)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("the Deployment sets replicas (%d) although the HPA owns them", *d.Spec.Replicas)
	}
	pdb := r.get(t, "PodDisruptionBudget", "fg-focusgate")
	if !matches(pdb.Spec.Selector.MatchLabels, podLabels) || pdb.Spec.MinAvailable < 1 {
		t.Errorf("PDB selector %v / minAvailable %d do not protect the pods %v", pdb.Spec.Selector.MatchLabels, pdb.Spec.MinAvailable, podLabels)
	}
}

func TestChartUsesAnExistingSecret(t *testing.T) {
	r := mustRender(t, "auth.existingSecret=team-keys", "autoscaling.enabled=false", "replicaCount=3")
	if _, ok := r.objects["Secret/fg-focusgate"]; ok {
		t.Error("a Secret is rendered although auth.existingSecret names one")
	}
	d := r.get(t, "Deployment", "fg-focusgate")
	e := env(gatewayContainer(t, d))
	for name, want := range map[string]string{
		"FOCUSGATE_UPSTREAM_API_KEY":  "secret:team-keys/upstream-api-key",
		"FOCUSGATE_ANTHROPIC_API_KEY": "secret:team-keys/anthropic-api-key",
		"FOCUSGATE_GEMINI_API_KEY":    "secret:team-keys/gemini-api-key",
		"FOCUSGATE_RETRIEVER_API_KEY": "secret:team-keys/retriever-api-key",
		"FOCUSGATE_REDIS_URL":         "secret:team-keys/redis-url",
		"FOCUSGATE_CLIENT_KEYS_FILE":  "/etc/focusgate/keys/client-keys",
	} {
		if e[name] != want {
			t.Errorf("env %s = %q, want %q", name, e[name], want)
		}
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret.SecretName != "team-keys" {
		t.Errorf("volumes %+v, want the Secret team-keys", v)
	}
	if _, ok := r.objects["HorizontalPodAutoscaler/fg-focusgate"]; ok {
		t.Error("an HPA is rendered with autoscaling.enabled=false")
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
}

func TestChartRedis(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		r := mustRender(t, "redis.url=redis://node-0.cache:7000", "redis.cluster=true")
		e := env(gatewayContainer(t, r.get(t, "Deployment", "fg-focusgate")))
		if e["FOCUSGATE_REDIS_CLUSTER"] != "true" || e["FOCUSGATE_REDIS_URL"] != "secret:fg-focusgate/redis-url" {
			t.Errorf("FOCUSGATE_REDIS_CLUSTER = %q, FOCUSGATE_REDIS_URL = %q; want true and the URL from the Secret", e["FOCUSGATE_REDIS_CLUSTER"], e["FOCUSGATE_REDIS_URL"])
		}
		if _, ok := env(gatewayContainer(t, mustRender(t, "redis.url=redis://node-0.cache:7000").get(t, "Deployment", "fg-focusgate")))["FOCUSGATE_REDIS_CLUSTER"]; ok {
			t.Error("FOCUSGATE_REDIS_CLUSTER set without redis.cluster")
		}
	})
	t.Run("existing", func(t *testing.T) {
		const url = "redis://:hunter2-redis-password@redis-master.cache:6379/0"
		r := mustRender(t, "redis.url="+url)
		e := env(gatewayContainer(t, r.get(t, "Deployment", "fg-focusgate")))
		if e["FOCUSGATE_REDIS_URL"] != "secret:fg-focusgate/redis-url" {
			t.Errorf("FOCUSGATE_REDIS_URL = %q, want it from the Secret", e["FOCUSGATE_REDIS_URL"])
		}
		if strings.Contains(r.raw, "hunter2") {
			t.Error("the Redis password appears in plain text")
		}
		if _, ok := r.objects["Deployment/fg-focusgate-redis"]; ok {
			t.Error("a trial Redis is deployed although redis.url names one")
		}
	})
	t.Run("trial", func(t *testing.T) {
		r := mustRender(t, "redis.deploy=true")
		d := r.get(t, "Deployment", "fg-focusgate")
		e := env(gatewayContainer(t, d))
		if e["FOCUSGATE_REDIS_URL"] != "redis://fg-focusgate-redis:6379/0" {
			t.Errorf("FOCUSGATE_REDIS_URL = %q, want the trial Redis", e["FOCUSGATE_REDIS_URL"])
		}
		redis := r.get(t, "Deployment", "fg-focusgate-redis")
		redisSvc := r.get(t, "Service", "fg-focusgate-redis")
		if !matches(redisSvc.Spec.ServiceSelector, redis.Spec.Template.Metadata.Labels) {
			t.Error("the Redis Service does not select the Redis pod")
		}
		// The gateway's Service and PDB must not take the Redis pod for a gateway.
		if matches(r.get(t, "Service", "fg-focusgate").Spec.ServiceSelector, redis.Spec.Template.Metadata.Labels) {
			t.Error("the gateway Service selects the Redis pod")
		}
		if matches(d.Spec.Selector.MatchLabels, redis.Spec.Template.Metadata.Labels) {
			t.Error("the gateway Deployment selects the Redis pod")
		}
	})
}

func TestChartServiceMonitor(t *testing.T) {
	r := mustRender(t, "metrics.serviceMonitor.enabled=true", "metrics.podAnnotations=false")
	sm := r.get(t, "ServiceMonitor", "fg-focusgate")
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on http", sm.Spec.Endpoints)
	}
	if !matches(sm.Spec.Selector.MatchLabels, r.get(t, "Service", "fg-focusgate").Metadata.Labels) {
		t.Error("the ServiceMonitor does not select the gateway Service")
	}
	if a := r.get(t, "Deployment", "fg-focusgate").Spec.Template.Metadata.Annotations; a["prometheus.io/scrape"] != "" {
		t.Errorf("pod annotations %v with metrics.podAnnotations=false", a)
	}
}

// The chart refuses what the gateway would refuse, at install time.
func TestChartRefusesWhatTheGatewayWouldRefuse(t *testing.T) {
	tests := []struct {
		set  []string
		want string
	}{
		{[]string{"auth.upstreamApiKey=" + upstreamKey}, "auth.clientKeys"},
		{[]string{"auth.anthropicApiKey=" + upstreamKey}, "auth.clientKeys"},
		{[]string{"auth.geminiApiKey=" + upstreamKey}, "auth.clientKeys"},
		{[]string{"shutdownTimeoutSeconds=60", "terminationGracePeriodSeconds=30"}, "terminationGracePeriodSeconds"},
		{[]string{"redis.deploy=true", "redis.url=redis://r:6379/0"}, "not both"},
	}
	for _, tt := range tests {
		_, err := render(t, tt.set...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("helm template %v: error %v, want one naming %q", tt.set, err, tt.want)
		}
	}
	// Stating the intent to run open is accepted.
	r := mustRender(t, "auth.upstreamApiKey="+upstreamKey, "auth.allowUnauthenticated=true")
	if e := env(gatewayContainer(t, r.get(t, "Deployment", "fg-focusgate"))); e["FOCUSGATE_ALLOW_UNAUTHENTICATED"] != strconv.FormatBool(true) {
		t.Errorf("FOCUSGATE_ALLOW_UNAUTHENTICATED = %q, want true", e["FOCUSGATE_ALLOW_UNAUTHENTICATED"])
	}
}

// Each provider's upstream key comes from the Secret the chart writes, and
// is in no manifest in plain text.
func TestChartCarriesEveryProvidersKey(t *testing.T) {
	anthropicKey, geminiKey := "sk-ant-chart-test-0123456789", "AIza-chart-test-0123456789"
	r := mustRender(t, "auth.anthropicApiKey="+anthropicKey, "auth.geminiApiKey="+geminiKey, "auth.clientKeys=alice:"+gatewayKey)
	e := env(gatewayContainer(t, r.get(t, "Deployment", "fg-focusgate")))
	for name, want := range map[string]string{
		"FOCUSGATE_ANTHROPIC_API_KEY": "secret:fg-focusgate/anthropic-api-key",
		"FOCUSGATE_GEMINI_API_KEY":    "secret:fg-focusgate/gemini-api-key",
	} {
		if e[name] != want {
			t.Errorf("env %s = %q, want %q", name, e[name], want)
		}
	}
	if _, set := e["FOCUSGATE_UPSTREAM_API_KEY"]; set {
		t.Error("FOCUSGATE_UPSTREAM_API_KEY is set although no OpenAI key was given")
	}
	s := r.get(t, "Secret", "fg-focusgate")
	for key, want := range map[string]string{"anthropic-api-key": anthropicKey, "gemini-api-key": geminiKey} {
		got, err := base64.StdEncoding.DecodeString(s.Data[key])
		if err != nil || string(got) != want {
			t.Errorf("Secret %s = %q (%v), want %q", key, got, err, want)
		}
	}
	for _, secret := range []string{anthropicKey, geminiKey} {
		if strings.Contains(r.raw, secret) {
			t.Error("a provider key appears in plain text in the rendered manifests")
		}
	}
}

// notes renders the chart's NOTES.txt, which helm template leaves out: a
// copy of the chart gets a template that renders the notes with tpl into a
// YAML value.
func notes(t *testing.T, set ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "focusgate")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "templates", "NOTES.txt")
	if err := os.Rename(src, filepath.Join(dir, "notes.src")); err != nil {
		t.Fatal(err)
	}
	probe := `notes: {{ tpl (.Files.Get "notes.src") . | toJson }}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "templates", "notes-probe.yaml"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"template", "fg", dir, "--namespace", "agents", "--show-only", "templates/notes-probe.yaml"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helmBinary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var v struct {
		Notes string `yaml:"notes"`
	}
	if err := yaml.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return v.Notes
}

// The chart describes focusgate as the gateway of every API it serves, and
// its notes give each agent the base-URL variable it reads.
func TestChartNotesNameEveryAgentsBaseURL(t *testing.T) {
	chart, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(chart), "OpenAI-compatible gateway") {
		t.Error("Chart.yaml still calls focusgate an OpenAI-compatible gateway")
	}
	for _, c := range []struct {
		name string
		set  []string
		want []string
	}{
		{"open", nil, []string{
			"OPENAI_BASE_URL=http://fg-focusgate.agents.svc:80/v1 ",
			"ANTHROPIC_BASE_URL=http://fg-focusgate.agents.svc:80 ",
			"GOOGLE_GEMINI_BASE_URL=http://fg-focusgate.agents.svc:80 ",
			"http://fg-focusgate.agents.svc:80/metrics.",
		}},
		{"with keys and a ServiceMonitor", []string{"auth.existingSecret=keys", "metrics.serviceMonitor.enabled=true"}, []string{
			"gateway key", "ANTHROPIC_API_KEY", "ServiceMonitor fg-focusgate",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := notes(t, c.set...)
			for _, w := range c.want {
				if !strings.Contains(n, w) {
					t.Errorf("the notes lack %q:\n%s", w, n)
				}
			}
		})
	}
}
