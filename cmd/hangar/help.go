package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Help fits a terminal: at most helpLines lines of helpWidth columns
// (TestHelpFitsAScreen).
const (
	helpWidth = 100
	helpLines = 24
	flagCol   = 24 // where a flag's description starts
)

// errHelpShown: a command printed its help, as asked; hangar exits 0.
var errHelpShown = errors.New("help shown")

// helpAsked reports whether args ask for help before any "--".
func helpAsked(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// usage is how a command is called and what it does; with a flag set, its
// flags are listed after.
type usage struct {
	lines []string // "hangar serve [flags]", without "usage: "
	about string   // what it does, and notes; wrapped to the width
}

// print writes u, and the flags of fs (nil: none), to w.
func (u usage) print(w io.Writer, fs *flag.FlagSet) {
	for i, l := range u.lines {
		prefix := "usage: "
		if i > 0 {
			prefix = "       "
		}
		fmt.Fprintln(w, prefix+l)
	}
	if u.about != "" {
		fmt.Fprintln(w)
		for _, para := range strings.Split(u.about, "\n") {
			for _, l := range wrap(para, helpWidth) {
				fmt.Fprintln(w, l)
			}
		}
	}
	if fs == nil {
		return
	}
	fmt.Fprintln(w)
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if name != "" {
			head += " " + name
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" && !strings.Contains(text, "(default") {
			text += " (default " + def + ")"
		}
		lines := wrap(text, helpWidth-flagCol)
		if len(head) >= flagCol {
			fmt.Fprintln(w, head)
		} else {
			fmt.Fprintf(w, "%-*s%s\n", flagCol, head, lines[0])
			lines = lines[1:]
		}
		for _, l := range lines {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", flagCol), l)
		}
	})
}

// wrap breaks s into lines of at most width columns at spaces.
func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) > width:
			out = append(out, line)
			line = word
		default:
			line += " " + word
		}
	}
	return append(out, line)
}

// parse parses args into fs; asked for help it prints u and fs's flags to
// out and returns errHelpShown. A bad flag's error points at the help.
func parse(fs *flag.FlagSet, args []string, out io.Writer, u usage) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		u.print(out, fs)
		return errHelpShown
	case err != nil:
		return fmt.Errorf("%w (hangar %s --help shows the flags)", err, fs.Name())
	}
	return nil
}
