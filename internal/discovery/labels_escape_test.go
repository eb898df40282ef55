package discovery

import (
	"errors"
	"testing"
)

// TestDecodeRefusesHostLabels: no discovery label gives a container
// anything of the host (the gateway attaches to a discovered container or
// reaches it over HTTP; it creates nothing from labels). A label that asks
// for a mount, a user, a network or privileges is an error naming it, and
// the container is not a candidate.
func TestDecodeRefusesHostLabels(t *testing.T) {
	t.Parallel()
	for _, label := range []string{
		LabelPrefix + "volumes", LabelPrefix + "volume", LabelPrefix + "mount", LabelPrefix + "user",
		LabelPrefix + "network", LabelPrefix + "privileged", LabelPrefix + "env_file", LabelPrefix + "cap_add",
		LabelPrefix + "allow_docker_socket",
	} {
		c := ContainerSnapshot{ID: "c1", Name: "/evil", Image: "img", Running: true, OpenStdin: true,
			Labels: map[string]string{LabelEnabled: "true", LabelMode: ModeStdio, label: "/proc/1/root:/host:rw"}}
		_, err := Decode(c)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: err %v, want a DecodeError", label, err)
			continue
		}
		named := false
		for _, p := range de.Problems {
			var le *LabelError
			if errors.As(p, &le) && le.Label == label {
				named = true
			}
		}
		if !named {
			t.Errorf("%s: problems %v do not name it", label, de.Problems)
		}
	}
}
