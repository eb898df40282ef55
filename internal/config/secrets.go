package config

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// maxSecretFile bounds what is read from a secret or env file: they hold
// a token or a few variables, and a mistaken path (a log, a device) must
// not be read whole.
const maxSecretFile = 1 << 20

// ReadSecretFile reads a secret as Docker secrets mount it: the whole file,
// trailing newline removed. The error names the file, never its content.
func ReadSecretFile(path string) (string, error) {
	b, err := readBounded(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	var buf bytes.Buffer
	n, err := buf.ReadFrom(&limited{f, maxSecretFile + 1})
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, unwrapPath(err))
	}
	if n > maxSecretFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecretFile)
	}
	return buf.Bytes(), nil
}

type limited struct {
	f *os.File
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, nil
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// unwrapPath drops the *PathError wrapper, whose text repeats the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// envFiles merges env_files (KEY=VALUE files, as docker --env-file reads
// them) under the server's env: a key set in env wins. The files are read
// by the gateway, so they need not exist inside the provider's container.
func (d *decoder) envFiles(s *section, srv *Server) {
	var files []string
	if !s.strList("env_files", &files,
		"KEY=VALUE files (as docker --env-file reads them) read by the gateway into the server's environment; env wins.") {
		return
	}
	for i, path := range files {
		p := index(s.at("env_files"), i)
		b, err := readBounded(path)
		if err != nil {
			d.add(p, "%v", err)
			continue
		}
		vars, err := parseEnvFile(b)
		if err != nil {
			d.add(p, "%s: %v", path, err)
			continue
		}
		if srv.Env == nil && len(vars) > 0 {
			srv.Env = map[string]string{}
		}
		for k, v := range vars {
			if _, set := srv.Env[k]; !set {
				srv.Env[k] = v
			}
		}
	}
}

// parseEnvFile reads KEY=VALUE lines; blank lines and # comments are
// skipped, an "export " prefix and one pair of matching quotes around the
// value are removed. Errors give the line number only: the line may hold
// a secret.
func parseEnvFile(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), maxSecretFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !envNameRe().MatchString(k) {
			return nil, fmt.Errorf("line %d: want KEY=VALUE", n)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
