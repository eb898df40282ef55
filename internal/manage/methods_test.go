package manage_test

import (
	"testing"

	"github.com/mcp-hangar/hangar/internal/manage"
	"github.com/mcp-hangar/hangar/internal/telemetry"
)

// TestMethodsAreTelemetryLabels: every seed 003 method and notification
// keeps its own mcp.method.name (telemetry bounds the rest to _OTHER).
func TestMethodsAreTelemetryLabels(t *testing.T) {
	t.Parallel()
	for _, m := range []string{
		manage.MethodList, manage.MethodInstall, manage.MethodPolicySet, manage.MethodRestart,
		manage.MethodUninstall, manage.MethodDetails,
		manage.MethodChanged, manage.MethodStatusChanged, manage.MethodCatalogChanged,
	} {
		if got := telemetry.MethodName(m); got != m {
			t.Errorf("telemetry.MethodName(%q) = %q", m, got)
		}
	}
}
