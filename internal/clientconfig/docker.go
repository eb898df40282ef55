package clientconfig

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-hangar/hangar/internal/config"
	"github.com/mcp-hangar/hangar/internal/hostaccess"
)

// How the mapper treats a docker run flag. Every flag docker run knows is
// listed, so that one that takes a value is never mistaken for the image
// and a flag that is not listed is refused, not guessed at.
type flagAction int

const (
	flagIgnore flagAction = iota // harmless, or the gateway decides it itself
	flagRefuse                   // would widen the hardening whatever its value
	flagUse                      // read into the spec
)

type dockerFlagDef struct {
	value  bool // takes a value
	action flagAction
	why    string // for flagRefuse: what it would give
}

func use(value bool) dockerFlagDef    { return dockerFlagDef{value: value, action: flagUse} }
func ignore(value bool) dockerFlagDef { return dockerFlagDef{value: value} }
func refuse(value bool, why string) dockerFlagDef {
	return dockerFlagDef{value: value, action: flagRefuse, why: why}
}

// dockerRunFlags are docker run's flags by long name.
var dockerRunFlags = map[string]dockerFlagDef{
	"interactive": use(false), "tty": use(false), "read-only": use(false),
	"env": use(true), "env-file": use(true), "volume": use(true), "mount": use(true),
	"network": use(true), "net": use(true), "memory": use(true), "cpus": use(true), "user": use(true),

	"rm": ignore(false), "init": ignore(false), "detach": ignore(false), "publish-all": ignore(false),
	"quiet": ignore(false), "no-healthcheck": ignore(false), "sig-proxy": ignore(false),
	"disable-content-trust": ignore(false), "help": ignore(false),
	"name": ignore(true), "pull": ignore(true), "platform": ignore(true), "label": ignore(true),
	"hostname": ignore(true), "domainname": ignore(true), "workdir": ignore(true), "entrypoint": ignore(true),
	"publish": ignore(true), "expose": ignore(true), "add-host": ignore(true), "dns": ignore(true),
	"dns-option": ignore(true), "dns-opt": ignore(true), "dns-search": ignore(true), "tmpfs": ignore(true),
	"shm-size": ignore(true), "stop-signal": ignore(true), "stop-timeout": ignore(true), "restart": ignore(true),
	"log-driver": ignore(true), "log-opt": ignore(true), "health-cmd": ignore(true), "health-interval": ignore(true),
	"health-retries": ignore(true), "health-timeout": ignore(true), "health-start-period": ignore(true),
	"health-start-interval": ignore(true), "memory-swap": ignore(true), "memory-reservation": ignore(true),
	"memory-swappiness": ignore(true), "cpu-shares": ignore(true), "cpu-period": ignore(true),
	"cpu-quota": ignore(true), "cpuset-cpus": ignore(true), "cpuset-mems": ignore(true),
	"cpu-rt-period": ignore(true), "cpu-rt-runtime": ignore(true), "blkio-weight": ignore(true),
	"attach": ignore(true), "cidfile": ignore(true), "detach-keys": ignore(true), "cap-drop": ignore(true),
	"pids-limit": ignore(true), "annotation": ignore(true), "isolation": ignore(true), "oom-score-adj": ignore(true),
	"stop-timeout-seconds": ignore(true),

	"privileged":          refuse(false, "runs the container privileged"),
	"oom-kill-disable":    refuse(false, "exempts the container from the OOM killer"),
	"cap-add":             refuse(true, "adds Linux capabilities"),
	"device":              refuse(true, "gives the container a host device"),
	"device-cgroup-rule":  refuse(true, "gives the container host devices"),
	"device-read-bps":     refuse(true, "names host devices"),
	"device-write-bps":    refuse(true, "names host devices"),
	"device-read-iops":    refuse(true, "names host devices"),
	"device-write-iops":   refuse(true, "names host devices"),
	"blkio-weight-device": refuse(true, "names host devices"),
	"gpus":                refuse(true, "gives the container host devices"),
	"security-opt":        refuse(true, "changes security options (seccomp, AppArmor, no-new-privileges)"),
	"volumes-from":        refuse(true, "mounts another container's volumes"),
	"volume-driver":       refuse(true, "chooses a volume plugin"),
	"storage-opt":         refuse(true, "changes the storage driver's options"),
	"sysctl":              refuse(true, "changes kernel parameters"),
	"runtime":             refuse(true, "changes the container runtime"),
	"cgroup-parent":       refuse(true, "changes the cgroup"),
	"cgroupns":            refuse(true, "chooses the cgroup namespace"),
	"group-add":           refuse(true, "adds supplementary groups"),
	"pid":                 refuse(true, "chooses the PID namespace"),
	"ipc":                 refuse(true, "chooses the IPC namespace"),
	"uts":                 refuse(true, "chooses the UTS namespace"),
	"userns":              refuse(true, "chooses the user namespace"),
	"ulimit":              refuse(true, "raises resource limits"),
	"kernel-memory":       refuse(true, "changes kernel memory limits"),
	"label-file":          refuse(true, "reads a file of the gateway's host"),
	"link":                refuse(true, "links to other containers"),
	"link-local-ip":       refuse(true, "chooses addresses on a network"),
	"ip":                  refuse(true, "chooses addresses on a network"),
	"ip6":                 refuse(true, "chooses addresses on a network"),
	"mac-address":         refuse(true, "chooses addresses on a network"),
	"network-alias":       refuse(true, "names the container on a network"),
}

// dockerShortFlags are the one-letter spellings.
var dockerShortFlags = map[byte]string{
	'i': "interactive", 't': "tty", 'd': "detach", 'P': "publish-all", 'q': "quiet",
	'e': "env", 'v': "volume", 'm': "memory", 'u': "user", 'p': "publish", 'l': "label",
	'w': "workdir", 'h': "hostname", 'c': "cpu-shares", 'a': "attach",
}

// runFlag is one flag of a docker run command line.
type runFlag struct {
	name   string // long name
	value  string
	hasVal bool   // a value was given (always, for a flag that takes one)
	raw    string // as written, for messages
	field  string // field path of the argument
}

// splitDockerRun reads `run [flags] IMAGE [args]` the way the docker CLI
// does (pflag): --long, --long=v, --long v, -s v, -sv, -s=v and clusters
// of one-letter flags (-itv v). It returns the flags, the index of the
// image in args, and false after an error diagnostic.
func splitDockerRun(args []string, af string, diags *Diagnostics) ([]runFlag, int, bool) {
	var flags []runFlag
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		fp := fmt.Sprintf("%s[%d]", af, i)
		if a == "--" {
			return flags, i + 1, true
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			return flags, i, true
		}
		if strings.HasPrefix(a, "--") {
			name, val, inline := strings.Cut(a[2:], "=")
			def, ok := dockerRunFlags[name]
			if !ok {
				diags.Add(LevelError, CodeUnsupported, fp, "docker run flag --%s is not supported", name)
				return nil, 0, false
			}
			if def.value && !inline {
				if i+1 >= len(args) {
					diags.Add(LevelError, CodeInvalidValue, fp, "flag %s needs a value", a)
					return nil, 0, false
				}
				i++
				val = args[i]
			}
			flags = append(flags, runFlag{name: name, value: val, hasVal: def.value || inline, raw: "--" + name, field: fp})
			continue
		}
		cluster := a[1:]
		for j := 0; j < len(cluster); j++ {
			name, ok := dockerShortFlags[cluster[j]]
			if !ok {
				diags.Add(LevelError, CodeUnsupported, fp, "docker run flag -%c is not supported", cluster[j])
				return nil, 0, false
			}
			raw := "-" + string(cluster[j])
			rest := cluster[j+1:]
			if !dockerRunFlags[name].value {
				if strings.HasPrefix(rest, "=") { // -i=true
					flags = append(flags, runFlag{name: name, value: rest[1:], hasVal: true, raw: raw, field: fp})
					break
				}
				flags = append(flags, runFlag{name: name, raw: raw, field: fp})
				continue
			}
			// A flag that takes a value ends the cluster: the rest of the
			// argument is its value, or else the next argument is.
			val := strings.TrimPrefix(rest, "=")
			if rest == "" {
				if i+1 >= len(args) {
					diags.Add(LevelError, CodeInvalidValue, fp, "flag %s needs a value", raw)
					return nil, 0, false
				}
				i++
				val = args[i]
			}
			flags = append(flags, runFlag{name: name, value: val, hasVal: true, raw: raw, field: fp})
			break
		}
	}
	return flags, i, true
}

// mapDocker reads `docker run [flags] IMAGE [args]`.
func mapDocker(name string, e Entry, field string, o Options, diags *Diagnostics) *config.Server {
	args := e.Args
	af := field + ".args"
	if len(args) == 0 || args[0] != "run" {
		diags.Add(LevelError, CodeUnsupported, af, `a docker command must be "docker run [flags] IMAGE [args]"`)
		return nil
	}
	flags, i, ok := splitDockerRun(args, af, diags)
	if !ok {
		return nil
	}
	s := config.NewServer(name, config.ModeDocker, o.Execution)
	for _, f := range flags {
		dockerFlag(s, e, f, o, diags)
	}
	if i >= len(args) {
		diags.Add(LevelError, CodeMissingField, af, "docker run has no image")
		return nil
	}
	s.Image = args[i]
	if s.Image == "" {
		diags.Add(LevelError, CodeInvalidValue, fmt.Sprintf("%s[%d]", af, i), "image must not be empty")
	}
	if rest := args[i+1:]; len(rest) > 0 {
		s.Args = slices.Clone(rest)
	}
	// Entries with "-e NAME" take NAME from env; any env left is passed
	// too, since that is what the client would have exported.
	for k, v := range e.Env {
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		if _, set := s.Env[k]; !set {
			if !envNameRe().MatchString(k) {
				diags.Add(LevelError, CodeInvalidValue, field+".env."+k, "invalid environment variable name")
				continue
			}
			s.Env[k] = v
		}
	}
	envFile(s, e.EnvFile, field+".envFile", o, diags)
	return s
}

func dockerFlag(s *config.Server, e Entry, f runFlag, o Options, diags *Diagnostics) {
	def := dockerRunFlags[f.name]
	fp := f.field
	switch def.action {
	case flagRefuse:
		diags.Add(LevelError, CodeWidensHardening, fp, "docker flag --%s refused: it %s", f.name, def.why)
		return
	case flagIgnore:
		switch f.name {
		case "rm", "init", "detach", "quiet", "help":
			// The gateway always attaches and removes its containers.
		case "pids-limit", "cap-drop":
			diags.Add(LevelWarning, CodeIgnored, fp, "%s ignored: the gateway sets it", f.raw)
		default:
			diags.Add(LevelWarning, CodeIgnored, fp, "docker flag %s ignored: the gateway builds the container itself", f.raw)
		}
		return
	}
	switch f.name {
	case "interactive":
		// -i is how stdio servers are written; the gateway always attaches
		// stdin.
	case "tty":
		diags.Add(LevelWarning, CodeIgnored, fp, "%s ignored: a TTY would corrupt the MCP stdio stream", f.raw)
	case "read-only":
		if f.hasVal {
			if b, err := strconv.ParseBool(f.value); err != nil || !b {
				diags.Add(LevelWarning, CodeWidensHardening, fp, "--read-only=%s ignored: the root file system stays read-only", f.value)
			}
		}
		s.ReadOnly = true // the default
	case "env":
		k, v, hasVal := strings.Cut(f.value, "=")
		if !envNameRe().MatchString(k) {
			diags.Add(LevelError, CodeInvalidValue, fp, "%s wants NAME=value or NAME", f.raw)
			return
		}
		if !hasVal {
			var ok bool
			if v, ok = e.Env[k]; !ok {
				diags.Add(LevelWarning, CodeIgnored, fp, "-e %s ignored: %s is not in env", k, k)
				return
			}
		}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	case "env-file":
		envFile(s, f.value, fp, o, diags)
	case "volume":
		b, err := o.Access.Volume(f.value)
		if err != nil {
			diags.Add(LevelError, CodeWidensHardening, fp, "%s %s", f.raw, err)
			return
		}
		s.Volumes = append(s.Volumes, b.String())
	case "mount":
		mountFlag(s, f, o, diags)
	case "network", "net":
		if err := o.Access.Network(f.value); err != nil {
			diags.Add(LevelError, CodeWidensHardening, fp, "--%s %q: %v", f.name, f.value, err)
			return
		}
		s.Network = f.value
	case "memory":
		n, err := config.ParseSize(f.value)
		if err != nil || n < 6<<20 {
			diags.Add(LevelError, CodeInvalidValue, fp, "--memory wants a size of at least 6m like 512m")
			return
		}
		s.Resources.MemoryBytes = n
	case "cpus":
		n, ok := config.ParseCPUs(f.value)
		if !ok || n > 64e9 {
			diags.Add(LevelError, CodeInvalidValue, fp, "--cpus wants a number of CPUs (0.01..64)")
			return
		}
		s.Resources.NanoCPUs = n
	case "user":
		u, err := o.Access.User(f.value)
		if err != nil {
			s.User = hostaccess.DefaultUser
			diags.Add(LevelWarning, CodeWidensHardening, fp, "%s %q: %v; the default user %s is kept", f.raw, f.value, err, hostaccess.DefaultUser)
			return
		}
		s.User = u
	}
}

// mountFlag reads --mount type=bind,source=…,target=…[,readonly]: a bind
// goes through the same rule as -v; tmpfs is the gateway's own; any other
// type (volume, image, npipe, cluster: a named volume may be another
// container's data) is refused.
func mountFlag(s *config.Server, f runFlag, o Options, diags *Diagnostics) {
	fields, err := csv.NewReader(strings.NewReader(f.value)).Read()
	if err != nil {
		diags.Add(LevelError, CodeInvalidValue, f.field, "--mount: not a comma-separated list of key=value")
		return
	}
	typ, src, dst, ro := "volume", "", "", false
	for _, kv := range fields {
		k, v, hasVal := strings.Cut(strings.TrimSpace(kv), "=")
		switch strings.ToLower(k) {
		case "type":
			typ = strings.ToLower(v)
		case "source", "src":
			src = v
		case "target", "destination", "dst":
			dst = v
		case "readonly", "ro":
			ro = true
			if hasVal {
				b, err := strconv.ParseBool(v)
				if err != nil {
					diags.Add(LevelError, CodeInvalidValue, f.field, "--mount %s wants true or false", k)
					return
				}
				ro = b
			}
		case "consistency", "bind-recursive", "bind-nonrecursive":
		default:
			diags.Add(LevelError, CodeWidensHardening, f.field, "--mount option %q refused: only type, source, target and readonly are supported", k)
			return
		}
	}
	switch typ {
	case "bind":
		b, err := o.Access.Bind(src, dst, ro)
		if err != nil {
			diags.Add(LevelError, CodeWidensHardening, f.field, "--mount %v", err)
			return
		}
		s.Volumes = append(s.Volumes, b.String())
	case "tmpfs":
		diags.Add(LevelWarning, CodeIgnored, f.field, "--mount type=tmpfs ignored: the gateway gives every container its own /tmp")
	default:
		diags.Add(LevelError, CodeWidensHardening, f.field, "--mount type=%s refused: only bind mounts under %s are supported", typ, hostaccess.KeyBindRoots)
	}
}
