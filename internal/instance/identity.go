package instance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// LabelComposeProject is the label docker compose puts on the containers of
// a project.
const LabelComposeProject = "com.docker.compose.project"

// DefaultName is the instance name of a gateway that is given none and
// does not run in a compose project.
const DefaultName = "default"

// validName: the instance name becomes part of a volume name (the lease),
// which the engine restricts to these characters.
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}$`) })

// CheckName reports an instance name the engine could not carry.
func CheckName(name string) error {
	if !validName().MatchString(name) {
		return fmt.Errorf("instance name %q: use 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Container describes the container the gateway runs in.
type Container struct {
	ID             string
	Name           string // without the leading slash
	ComposeProject string // "" when not started by compose
	Networks       []string
}

// InspectAPI is the engine call Detect needs.
type InspectAPI interface {
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

// Detect finds the container this process runs in through its hostname,
// which the engine sets to the container ID's prefix (or to the compose
// service's hostname:). ok is false on a host, or when the engine cannot
// tell. A container merely named like the host is not taken for ours: its
// configured hostname must be ours too.
func Detect(ctx context.Context, api InspectAPI, hostname string) (Container, bool) {
	if hostname == "" {
		return Container{}, false
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	res, err := api.ContainerInspect(ictx, hostname, client.ContainerInspectOptions{})
	cancel()
	if err != nil {
		return Container{}, false
	}
	ct := res.Container
	if ct.Config == nil || ct.Config.Hostname != hostname {
		return Container{}, false
	}
	c := Container{ID: ct.ID, Name: strings.TrimPrefix(ct.Name, "/"), ComposeProject: ct.Config.Labels[LabelComposeProject]}
	if ct.NetworkSettings != nil {
		for n := range ct.NetworkSettings.Networks {
			c.Networks = append(c.Networks, n)
		}
		sort.Strings(c.Networks)
	}
	return c, true
}

// Holder identifies one running gateway process well enough that another
// process can later tell whether it is still alive (see Checker).
type Holder struct {
	Instance string
	// Token is new for every acquisition: two holders are the same only
	// when their tokens are.
	Token string
	Host  string // hostname
	PID   int
	// PIDStart is the process start time in clock ticks after boot
	// (/proc/PID/stat field 22): with it a reused PID is not taken for the
	// holder.
	PIDStart uint64
	// PIDNS is the boot ID and PID namespace of the process: only a process
	// with the same PIDNS can look the holder's PID up in its own /proc.
	PIDNS string
	// Container is the ID of the container the holder runs in ("" on a
	// host) and ContainerName its name.
	Container     string
	ContainerName string
	Listen        string // host:port of its HTTP endpoint, "" when it serves stdio
	Since         time.Time
}

// String names the holder for an operator: where it runs, where it listens
// and since when.
func (h Holder) String() string {
	var b strings.Builder
	if h.Container != "" {
		name := h.ContainerName
		if name == "" {
			name = shortID(h.Container)
		}
		fmt.Fprintf(&b, "container %s (%s)", name, shortID(h.Container))
	} else {
		fmt.Fprintf(&b, "pid %d on host %s", h.PID, h.Host)
	}
	if h.Listen != "" {
		fmt.Fprintf(&b, ", listening on %s", h.Listen)
	} else {
		b.WriteString(", serving stdio")
	}
	if !h.Since.IsZero() {
		fmt.Fprintf(&b, ", since %s", h.Since.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Self describes this process as a lease holder. self is the container the
// process runs in (zero on a host); listen is its HTTP address, "" for
// stdio.
func Self(instance string, self Container, listen string) Holder {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start, _ := procStart(pid)
	return Holder{
		Instance:      instance,
		Token:         newToken(),
		Host:          host,
		PID:           pid,
		PIDStart:      start,
		PIDNS:         pidNamespace(),
		Container:     self.ID,
		ContainerName: self.Name,
		Listen:        listen,
		Since:         time.Now().UTC().Truncate(time.Second),
	}
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pidNamespace is "" when /proc cannot tell, so that no PID is ever
// compared across namespaces by accident.
func pidNamespace() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// procStart reads the start time of pid from /proc; ok is false when no
// such process exists.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStatStart(string(b))
}

// parseStatStart takes field 22 of a /proc/PID/stat line. The command
// (field 2) may hold spaces and parentheses, so fields are counted from its
// last ')'.
func parseStatStart(stat string) (uint64, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	const startField = 22 - 3 // f[0] is field 3
	if len(f) <= startField {
		return 0, false
	}
	n, err := strconv.ParseUint(f[startField], 10, 64)
	return n, err == nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
