package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at release builds with -ldflags "-X main.version=v1.2.3"; otherwise it is taken
// from the module's build information.
var version = ""

// versionInfo is what `rota version` reports.
type versionInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of rota",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if a.jsonOutput() {
				return a.printJSON(v)
			}
			fmt.Fprintf(a.stdout, "rota %s", v.Version)
			if v.Commit != "" {
				fmt.Fprintf(a.stdout, " (commit %.12s)", v.Commit)
			}
			fmt.Fprintf(a.stdout, " %s %s/%s\n", v.Go, v.OS, v.Arch)
			return nil
		},
	}
}
