package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit may be set at link time (-ldflags "-X main.version=v1.2.0
// -X main.commit=$(git rev-parse HEAD)"), for builds that have no Git
// metadata to stamp: the Docker build leaves .git out of its context. Empty,
// the build information Go records in the binary is used.
var version, commit string

// devel stands for what the build did not record: a binary built from a work
// tree rather than a released module version, or without Git metadata.
const devel = "(devel)"

// buildVersion is what `focusgate version` prints: enough to tell which code
// a running gateway is, when reporting a problem or checking a rollout.
type buildVersion struct {
	Version  string // the module version, or devel
	Commit   string // the VCS revision, or devel
	Modified bool   // the work tree had uncommitted changes
	Go       string // the Go toolchain that built the binary
	Platform string // GOOS/GOARCH
}

// readVersion reads the binary's build information; ok is false when the
// binary carries none (built without module support).
func readVersion(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: version, Commit: commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok && info != nil {
		if v.Version == "" {
			v.Version = info.Main.Version
		}
		v.Go = cmp.Or(info.GoVersion, v.Go)
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					v.Commit = s.Value
				}
			case "vcs.modified":
				v.Modified = s.Value == "true" && commit == ""
			}
		}
	}
	v.Version = cmp.Or(v.Version, devel)
	v.Commit = cmp.Or(v.Commit, devel)
	return v
}

func (v buildVersion) write(w io.Writer) {
	c := v.Commit
	if v.Modified {
		c += " (modified)"
	}
	fmt.Fprintf(w, "focusgate %s\ncommit    %s\ngo        %s %s\n", v.Version, c, v.Go, v.Platform)
}

// printVersion answers `focusgate version` and `focusgate --version`.
func printVersion(stdout io.Writer) {
	readVersion(debug.ReadBuildInfo()).write(stdout)
}
