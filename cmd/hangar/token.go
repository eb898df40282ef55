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
func tokenCmd(args []string, w io.Writer) error {
	if len(args) > 0 && args[0] == "show" {
		return tokenShow(args[1:], w)
	}
	if len(args) == 0 || args[0] != "new" {
		return errors.New("usage: hangar token new --name NAME --scopes hangar:read,hangar:call [--servers math,fs-*]\n" +
			"       hangar token show [FILE]   (default " + defaultTokenFile + ")")
	}
	fs := flag.NewFlagSet("token new", flag.ContinueOnError)
	name := fs.String("name", "", "the token's name, shown in logs and audit")
	scopes := fs.String("scopes", auth.ScopeRead+","+auth.ScopeCall, "comma-separated scopes: "+strings.Join(auth.AllScopes, ", "))
	servers := fs.String("servers", "", "comma-separated patterns of the providers the token may reach (default: all)")
	if err := fs.Parse(args[1:]); err != nil {
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
