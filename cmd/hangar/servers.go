package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-hangar/hangar/internal/manage"
)

var serversHelp = usage{
	lines: []string{
		"hangar servers list [--json]",
		"hangar servers details NAME",
		"hangar servers install FILE [--enabled=true|false] [--implicit=true|false]",
		"hangar servers uninstall NAME",
		"hangar servers restart NAME [--update]",
		"hangar servers policy NAME [--enabled=true|false] [--implicit=true|false]",
		"hangar import FILE",
	},
	about: "Manage the servers of a running gateway over its management protocol (mcp/*). install and " +
		"import take a client config (Claude Desktop, Cursor, VS Code). The bearer token is $HANGAR_TOKEN.",
}

// serversUsage is serversHelp's usage lines, for errors.
var serversUsage = "usage: " + strings.Join(serversHelp.lines, "\n       ")

// optBool is a flag that remembers whether it was given.
type optBool struct {
	set, v bool
}

func (b *optBool) String() string   { return strconv.FormatBool(b.v) }
func (b *optBool) IsBoolFlag() bool { return true }
func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.set, b.v = true, v
	return nil
}

// serversCmd runs `hangar servers …`; with importFile it is `hangar import`.
func serversCmd(args []string, importFile bool, out io.Writer) error {
	sub := "install"
	if !importFile {
		if len(args) == 0 {
			return errors.New(serversUsage)
		}
		if helpAsked(args[:1]) {
			args = append([]string{"list"}, args...)
		}
		sub, args = args[0], args[1:]
	}
	name := "servers " + sub
	if importFile {
		name = "import"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	url := fs.String("url", envOr("HANGAR_URL", "http://127.0.0.1:8080/mcp"), "the gateway's MCP endpoint ($HANGAR_URL)")
	wait := 2 * time.Minute
	if sub == "install" || sub == "restart" {
		wait = 10 * time.Minute // npm and PyPI servers are built into images first
	}
	timeout := fs.Duration("timeout", wait, "give up after this long")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	update := fs.Bool("update", false, "restart: resolve an npm or PyPI server's version range again first")
	var enabled, implicit optBool
	fs.Var(&enabled, "enabled", "policy: serve the server (true|false)")
	fs.Var(&implicit, "implicit", "policy: allow implicit invocation (true|false)")
	// Flags may follow the positional argument (hangar servers policy NAME --enabled=false).
	var pos []string
	help := serversHelp
	if importFile {
		help = usage{lines: []string{"hangar import FILE [flags]"},
			about: "Installs the servers of a client config (Claude Desktop, Cursor, VS Code) into a running gateway, " +
				"as hangar servers install does. The bearer token is $HANGAR_TOKEN."}
	}
	for {
		if err := parse(fs, args, out, help); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
	c := &manage.Client{URL: *url, Token: os.Getenv("HANGAR_TOKEN")}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	one := func() (string, error) {
		if len(pos) != 1 {
			return "", fmt.Errorf("hangar servers %s takes one argument\n%s", sub, serversUsage)
		}
		return pos[0], nil
	}
	policy := func(p map[string]any) map[string]any {
		if enabled.set {
			p["enabled"] = enabled.v
		}
		if implicit.set {
			p["allow_implicit_invocation"] = implicit.v
		}
		return p
	}
	show := func(v any) error { return manage.PrintJSON(out, v) }

	switch sub {
	case "list":
		var res manage.ListResult
		if err := c.Call(ctx, manage.MethodList, map[string]any{}, &res); err != nil {
			return err
		}
		if *asJSON {
			return show(res)
		}
		manage.PrintList(out, &res)
		return nil
	case "details":
		name, err := one()
		if err != nil {
			return err
		}
		var res json.RawMessage
		if err := c.Call(ctx, manage.MethodDetails, map[string]any{"server_id": name}, &res); err != nil {
			return err
		}
		return show(res)
	case "install":
		file, err := one()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		return c.InstallFile(ctx, data, policy(map[string]any{}), out)
	case "uninstall", "restart":
		name, err := one()
		if err != nil {
			return err
		}
		method := manage.MethodUninstall
		params := map[string]any{"name": name}
		if sub == "restart" {
			method = manage.MethodRestart
			if *update {
				params["update"] = true
			}
		}
		var res json.RawMessage
		if err := c.Call(ctx, method, params, &res); err != nil {
			return err
		}
		return show(res)
	case "policy":
		name, err := one()
		if err != nil {
			return err
		}
		if !enabled.set && !implicit.set {
			return errors.New("hangar servers policy NAME needs --enabled=… or --implicit=…")
		}
		var res manage.PolicyResult
		if err := c.Call(ctx, manage.MethodPolicySet, policy(map[string]any{"name": name}), &res); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: enabled=%v implicit=%v state=%s\n", name, res.Policy.Enabled, res.Policy.AllowImplicitInvocation, res.Server.Runtime.State)
		return nil
	}
	return fmt.Errorf("unknown command hangar servers %s\n%s", sub, serversUsage)
}
