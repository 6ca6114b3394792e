package main

import "runtime/debug"

// version is set at build time with -ldflags "-X main.version=..." (make
// build and make release write `git describe` there). Empty, the binary
// says what the Go toolchain recorded in it: the module version of a
// `go install ...@v1.2.3` build, or the VCS revision of a build in a
// clone.
var version string

// buildVersion is the version the binary reports: on `specgate version`,
// `--version` and the MCP serverInfo.
func buildVersion() string { return versionFrom(version, debug.ReadBuildInfo) }

// versionFrom picks the version: the -ldflags one, else the module version
// (not "(devel)"), else the VCS revision (12 digits, "-dirty" when the tree
// had changes), else "dev".
func versionFrom(ldflags string, read func() (*debug.BuildInfo, bool)) string {
	if ldflags != "" {
		return ldflags
	}
	bi, ok := read()
	if !ok || bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "dev-" + rev
}

// versionLine is what `specgate version` prints.
func versionLine() string {
	v := buildVersion()
	if bi, ok := debug.ReadBuildInfo(); ok && bi.GoVersion != "" {
		return "specgate " + v + " (" + bi.GoVersion + ")"
	}
	return "specgate " + v
}
