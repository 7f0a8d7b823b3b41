package main

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want buildVersion
	}{
		{"no build info", nil, false, buildVersion{Version: devel, Commit: devel, Go: runtime.Version()}},
		{"a work tree without Git metadata", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true,
			buildVersion{Version: devel, Commit: devel, Go: "go1.26.8"}},
		{"a clean checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: settings("vcs", "git", "vcs.revision", "0123456789abcdef", "vcs.modified", "false")}, true,
			buildVersion{Version: "v1.2.0", Commit: "0123456789abcdef", Go: "go1.26.8"}},
		{"uncommitted changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.1-0.20260101000000-0123456789ab+dirty"},
			Settings: settings("vcs.revision", "0123456789abcdef", "vcs.modified", "true")}, true,
			buildVersion{Version: "v1.2.1-0.20260101000000-0123456789ab+dirty", Commit: "0123456789abcdef", Modified: true, Go: "go1.26.8"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := readVersion(c.info, c.ok)
			c.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// Values set at link time win over the build information: they are how an
// image built without .git says which commit it is.
func TestReadVersionLinkTime(t *testing.T) {
	oldVersion, oldCommit := version, commit
	t.Cleanup(func() { version, commit = oldVersion, oldCommit })
	version, commit = "v1.3.0", "fedcba9876543210"
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123"}, {Key: "vcs.modified", Value: "true"}}}
	got := readVersion(info, true)
	if got.Version != "v1.3.0" || got.Commit != "fedcba9876543210" || got.Modified {
		t.Errorf("got %+v, want the link-time version and commit, unmodified", got)
	}
}

func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), append([]string{"focusgate"}, args...), func(string) string { return "" }, nil, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "focusgate ") || !strings.HasPrefix(lines[1], "commit ") ||
				!strings.Contains(lines[2], runtime.Version()) {
				t.Errorf("focusgate %s printed %q, want the version, the commit and %s", args[0], out.String(), runtime.Version())
			}
		})
	}
}
