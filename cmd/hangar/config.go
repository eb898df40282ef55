package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcp-hangar/hangar/internal/app"
	"github.com/mcp-hangar/hangar/internal/config"
)

var (
	configUsage = usage{
		lines: []string{"hangar config check [--config GATEWAY_CONFIG] FILE", "hangar config schema [--markdown]"},
		about: "check loads FILE as the gateway would and prints what it serves, or every problem with its key " +
			"path; given a client config (Claude Desktop, Cursor, VS Code) it shows what hangar import of it " +
			"would do.\nschema prints the config's JSON Schema (draft 2020-12), for editors " +
			"(docs/configuration.md says how); --markdown prints the configuration reference instead.",
	}
	checkUsage = usage{
		lines: []string{"hangar config check [--config GATEWAY_CONFIG] FILE"},
		about: "Loads FILE as the gateway would and prints what it serves, or every problem with its key path. " +
			"Given a client config (Claude Desktop, Cursor, VS Code) it shows what hangar import of it would do, " +
			"under the runtimes and install sections of GATEWAY_CONFIG.",
	}
	schemaUsage = usage{
		lines: []string{"hangar config schema [--markdown]"},
		about: "Prints the JSON Schema (draft 2020-12) of hangar's config file, made from the loader's own " +
			"definitions: point an editor's YAML support at it (docs/configuration.md).",
	}
)

// configCmd is hangar config check|schema.
func configCmd(args []string, out io.Writer) error {
	switch {
	case len(args) == 0:
		return errors.New("usage: " + configUsage.lines[0] + "\n       " + configUsage.lines[1])
	case helpAsked(args[:1]):
		configUsage.print(out, nil)
		return errHelpShown
	}
	switch args[0] {
	case "check":
		return configCheck(args[1:], out)
	case "schema":
		return configSchema(args[1:], out)
	}
	return fmt.Errorf("unknown command hangar config %s (hangar config --help lists them)", args[0])
}

func configCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	gwPath := fs.String("config", "", "with a client config FILE: the gateway config whose runtimes and install sections apply (default $MCP_CONFIG, else ./config.yaml when present)")
	if err := parse(fs, args, out, checkUsage); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: " + checkUsage.lines[0])
	}
	file := fs.Arg(0)
	if !app.IsClientConfig(file) {
		return app.CheckConfig(context.Background(), file, out)
	}
	// A client config: what `hangar import` of it would do.
	var gw *config.Config
	path := *gwPath
	if path == "" {
		path = os.Getenv("MCP_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path != "" {
		c, err := config.Load(path)
		if err != nil {
			return err
		}
		gw = c
	}
	return app.CheckClientConfig(file, gw, out)
}

func configSchema(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("config schema", flag.ContinueOnError)
	markdown := fs.Bool("markdown", false, "print the configuration reference in Markdown instead (docs/configuration.md holds it)")
	if err := parse(fs, args, out, schemaUsage); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return errors.New("usage: " + schemaUsage.lines[0])
	}
	if *markdown {
		ref, err := config.Reference()
		if err != nil {
			return err
		}
		_, err = io.WriteString(out, ref)
		return err
	}
	b, err := config.JSONSchema()
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}
