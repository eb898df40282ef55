package config

import (
	"path/filepath"
	"regexp"
	"strings"
)

const (
	serversKey = "mcp_servers"
	aliasKey   = "providers" // the Python hangar's older name for mcp_servers
)

// decode walks the raw koanf map into a Config with defaults applied.
func (d *decoder) decode(raw map[string]any) *Config {
	cfg := defaults()
	root := d.section("", raw)

	// Execution first: servers default their max_concurrency from it.
	ex := root.sub("execution")
	ex.intIn("max_concurrency", &cfg.Execution.MaxConcurrency, 1, 10000)
	ex.intIn("default_provider_concurrency", &cfg.Execution.DefaultProviderConcurrency, 1, 1000)
	ex.intIn("max_request_body_bytes", &cfg.Execution.MaxRequestBodyBytes, 1<<10, 1<<30)
	ex.finish()

	key := serversKey
	if root.has(aliasKey) {
		if root.has(serversKey) {
			root.reject(aliasKey, "is an alias of %s; use only one of %s and %s", serversKey, serversKey, aliasKey)
		} else {
			key = aliasKey
		}
	}
	sv, _ := root.take(key)
	cfg.Servers = d.servers(key, sv, cfg.Execution)

	d.discovery(root.sub("discovery"), &cfg.Discovery)

	b := root.sub("batch")
	b.intIn("max_calls", &cfg.Batch.MaxCalls, 1, 10000)
	b.intIn("max_concurrency", &cfg.Batch.MaxConcurrency, 1, 10000)
	b.seconds("default_timeout", &cfg.Batch.DefaultTimeout, 1, 3600)
	b.seconds("max_timeout", &cfg.Batch.MaxTimeout, 1, 3600)
	b.intIn("max_response_size_bytes", &cfg.Batch.MaxResponseSizeBytes, 1, 1<<30)
	b.intIn("max_total_response_size_bytes", &cfg.Batch.MaxTotalResponseSizeByte, 1, 1<<30)
	b.intIn("max_continuation_bytes", &cfg.Batch.MaxContinuationBytes, 1<<10, 1<<34)
	b.seconds("continuation_ttl_s", &cfg.Batch.ContinuationTTL, 1, 86400)
	if cfg.Batch.DefaultTimeout > cfg.Batch.MaxTimeout {
		d.add(b.at("default_timeout"), "must not exceed max_timeout (%s > %s)", cfg.Batch.DefaultTimeout, cfg.Batch.MaxTimeout)
	}
	b.finish()

	d.auth(root.sub("auth"), &cfg.Auth)

	r := root.sub("config_reload")
	r.boolean("enabled", &cfg.ConfigReload.Enabled)
	r.seconds("interval_s", &cfg.ConfigReload.Interval, 1, 3600)
	r.finish()

	l := root.sub("logging")
	// WARNING is accepted because the Python hangar (and its logging
	// module) spells the level that way.
	if l.enum("level", &cfg.Logging.Level, "DEBUG", "INFO", "WARN", "WARNING", "ERROR") && cfg.Logging.Level == "WARNING" {
		cfg.Logging.Level = "WARN"
	}
	l.boolean("json_format", &cfg.Logging.JSONFormat)
	l.finish()

	d.registry(root.sub("registry"), &cfg.Registry)
	d.images(root.sub("images"), &cfg.Images)
	d.httpServer(root.sub("server"), &cfg.HTTP)
	d.manage(root, cfg)
	d.egressProxy(root.sub("egress_proxy"), &cfg.EgressProxy)
	d.toolAccess(root, cfg)
	d.store(root.sub("store"), &cfg.Store)
	d.telemetry(root.sub("telemetry"), &cfg.Telemetry)

	if root.str("data_dir", &cfg.DataDir) {
		if msg := checkDataDir(cfg.DataDir); msg != "" {
			d.add("data_dir", "%s", msg)
		}
	}

	root.finish()
	return cfg
}

func (d *decoder) discovery(s *section, disc *Discovery) {
	s.boolean("enabled", &disc.Enabled)
	s.seconds("refresh_interval_s", &disc.RefreshInterval, 1, 86400)
	s.boolean("auto_register", &disc.AutoRegister)
	items, _ := s.list("sources")
	for i, item := range items {
		sp := index(s.at("sources"), i)
		if _, ok := asMap(item); !ok {
			d.add(sp, "must be a mapping (got %s)", got(item))
			continue
		}
		disc.Sources = append(disc.Sources, d.source(d.section(sp, item)))
	}
	sec := s.sub("security")
	sec.boolean("require_health_check", &disc.Security.RequireHealthCheck)
	sec.boolean("quarantine_on_failure", &disc.Security.QuarantineOnFailure)
	sec.finish()
	s.finish()
}

func (d *decoder) source(s *section) Source {
	src := Source{Mode: "additive"}
	if !s.has("type") {
		s.take("type")
		d.add(s.at("type"), "required")
	} else if s.enum("type", &src.Type, "docker", "swarm", "filesystem") && (src.Type == "docker" || src.Type == "swarm") {
		for _, k := range []string{"path", "pattern", "watch"} {
			if s.has(k) {
				s.reject(k, "not allowed for type %s", src.Type)
			}
		}
	} else if src.Type == "filesystem" && s.has("filters") {
		s.reject("filters", "not allowed for type filesystem")
	}
	switch src.Type {
	case "docker":
		src.Filters = d.sourceFilters(s.sub("filters"))
	case "swarm":
		src.Filters = d.swarmFilters(s.sub("filters"))
	}
	s.enum("mode", &src.Mode, "additive", "authoritative")
	if src.Type == "filesystem" {
		src.Pattern = "*.yaml"
		if !s.str("path", &src.Path) || src.Path == "" {
			d.add(s.at("path"), "required for type filesystem")
		}
	} else {
		s.str("path", &src.Path)
	}
	if s.str("pattern", &src.Pattern) {
		if _, err := filepath.Match(src.Pattern, ""); err != nil {
			d.add(s.at("pattern"), "invalid glob pattern %q: %v", src.Pattern, err)
		}
	}
	s.boolean("watch", &src.Watch)
	s.finish()
	return src
}

// composeProjectName is what docker compose accepts as a project name.
var composeProjectName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func (d *decoder) sourceFilters(s *section) SourceFilters {
	f := SourceFilters{ComposeProject: ComposeAuto}
	if s.str("compose_project", &f.ComposeProject) {
		switch p := f.ComposeProject; {
		case p == ComposeAuto, p == ComposeAny:
		case !composeProjectName.MatchString(p):
			d.add(s.at("compose_project"), `must be "auto", "*" or a compose project name (lowercase letters, digits, '-' and '_') (got %q)`, p)
		}
	}
	d.labelAndNetworkFilters(s, &f)
	s.finish()
	return f
}

// swarmFilters are a docker source's filters but compose_project: a stack
// deployed on a swarm is no compose project (filter on the label
// com.docker.stack.namespace instead).
func (d *decoder) swarmFilters(s *section) SourceFilters {
	var f SourceFilters
	if s.has("compose_project") {
		s.reject("compose_project", "not allowed for type swarm (a stack's services carry the label com.docker.stack.namespace: filter on labels)")
	}
	d.labelAndNetworkFilters(s, &f)
	s.finish()
	return f
}

func (d *decoder) labelAndNetworkFilters(s *section, f *SourceFilters) {
	if s.strMap("labels", &f.Labels) {
		for k := range f.Labels {
			if strings.TrimSpace(k) == "" {
				d.add(join(s.at("labels"), k), "label name must not be empty")
			}
		}
	}
	if s.strList("networks", &f.Networks) {
		for i, n := range f.Networks {
			if strings.TrimSpace(n) == "" {
				d.add(index(s.at("networks"), i), "must not be empty")
			}
		}
	}
}
