package config

import (
	"path/filepath"
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
	if cfg.Batch.DefaultTimeout > cfg.Batch.MaxTimeout {
		d.add(b.at("default_timeout"), "must not exceed max_timeout (%s > %s)", cfg.Batch.DefaultTimeout, cfg.Batch.MaxTimeout)
	}
	b.finish()

	a := root.sub("auth")
	a.boolean("enabled", &cfg.Auth.Enabled)
	rl := a.sub("rate_limit")
	rl.floatIn("rps", &cfg.Auth.RateLimit.RPS, 0.01, 1e6)
	rl.intIn("burst", &cfg.Auth.RateLimit.Burst, 1, 1e6)
	rl.finish()
	a.finish()

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
	d.toolAccess(root, cfg)

	if root.str("data_dir", &cfg.DataDir) && cfg.DataDir == "" {
		d.add("data_dir", "must not be empty")
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
	} else if s.enum("type", &src.Type, "docker", "filesystem") && src.Type == "docker" {
		for _, k := range []string{"path", "pattern", "watch"} {
			if s.has(k) {
				s.reject(k, "not allowed for type docker")
			}
		}
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
