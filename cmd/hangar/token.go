package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mcp-hangar/hangar/internal/auth"
)

// tokenCmd is `hangar token new`: a fresh token, shown once, and the
// config entry that holds only its hash.
var (
	tokenUsage = usage{
		lines: []string{"hangar token new --name NAME [--scopes hangar:read,hangar:call] [--servers math,fs-*]",
			"hangar token show [FILE]"},
		about: "new makes an access token, printed once, and the auth.tokens entry that holds only its hash.\n" +
			"show prints the token a gateway generated (auth.generate_token) into FILE (default " +
			defaultTokenFile + "), for docker compose exec: the image has no shell.",
	}
	tokenNewUsage = usage{
		lines: []string{tokenUsage.lines[0]},
		about: "Makes an access token, printed once, and the auth.tokens entry for the config file, which holds only its hash.",
	}
)

func tokenCmd(args []string, w io.Writer) error {
	switch {
	case len(args) > 0 && helpAsked(args[:1]):
		tokenUsage.print(w, nil)
		return errHelpShown
	case len(args) > 0 && args[0] == "show":
		if helpAsked(args[1:]) {
			usage{lines: tokenUsage.lines[1:], about: "Prints the token a gateway generated (auth.generate_token) into FILE (default " +
				defaultTokenFile + "), for docker compose exec: the image has no shell."}.print(w, nil)
			return errHelpShown
		}
		return tokenShow(args[1:], w)
	case len(args) == 0 || args[0] != "new":
		return errors.New("usage: " + tokenUsage.lines[0] + "\n       " + tokenUsage.lines[1])
	}
	fs := flag.NewFlagSet("token new", flag.ContinueOnError)
	name := fs.String("name", "", "the token's `NAME`, shown in logs and audit")
	scopes := fs.String("scopes", auth.ScopeRead+","+auth.ScopeCall, "comma-separated `SCOPES`: "+strings.Join(auth.AllScopes, ", "))
	servers := fs.String("servers", "", "comma-separated `PATTERNS` of the servers the token may reach (default: all)")
	if err := parse(fs, args[1:], w, tokenNewUsage); err != nil {
		return err
	}
	if *name == "" {
		return errors.New("token new: --name is required")
	}
	sc := splitList(*scopes)
	if len(sc) == 0 {
		return errors.New("token new: --scopes must name at least one scope")
	}
	for _, s := range sc {
		if !slices.Contains(auth.AllScopes, s) {
			return fmt.Errorf("token new: unknown scope %q (known: %s)", s, strings.Join(auth.AllScopes, ", "))
		}
	}
	tok, err := auth.NewToken()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Token (shown once; give it to the client as Authorization: Bearer <token> or HANGAR_TOKEN):\n\n  %s\n\n", tok)
	fmt.Fprintf(w, "Config entry (the gateway keeps only the hash):\n\n%s", auth.TokenEntryYAML(*name, tok, sc, splitList(*servers)))
	return nil
}

// resolveToken picks the client's token: the flag, else $HANGAR_TOKEN,
// else the token file.
func resolveToken(flagTok, file string) (string, error) {
	if flagTok != "" {
		return flagTok, nil
	}
	if t := os.Getenv("HANGAR_TOKEN"); t != "" {
		return t, nil
	}
	if file == "" {
		return "", nil
	}
	return resolveTokenFile(file)
}

// defaultTokenFile is where the images' configs generate a token.
const defaultTokenFile = "/run/hangar/token"

// tokenShow prints a generated token file, for `docker compose exec`: the
// gateway image has no shell or cat.
func tokenShow(args []string, w io.Writer) error {
	file := defaultTokenFile
	if len(args) > 0 {
		file = args[0]
	}
	tok, err := resolveTokenFile(file)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, tok)
	return err
}

func resolveTokenFile(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
