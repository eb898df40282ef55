package config

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

const (
	serversKey = "mcp_servers"
	aliasKey   = "providers" // the Python hangar's older name for mcp_servers
)

// decode walks the raw koanf map into a Config with defaults applied.
func (d *decoder) decode(raw map[string]any) *Config {
	cfg := defaults()
	root := d.section("", raw)
	if d.tr != nil {
		root.t = &sectionTrace{node: d.tr.root}
		d.tr.at[""] = d.tr.root
	}

	// Execution first: servers default their max_concurrency from it.
	ex := root.sub("execution", "System-wide limits on calls and requests.")
	ex.intIn("max_concurrency", &cfg.Execution.MaxConcurrency, 1, 10000,
		"Tool calls the gateway runs at once, over every server; more wait up to their timeout.")
	ex.intIn("default_provider_concurrency", &cfg.Execution.DefaultProviderConcurrency, 1, 1000,
		"The default of each server's max_concurrency.")
	ex.intIn("max_request_body_bytes", &cfg.Execution.MaxRequestBodyBytes, 1<<10, 1<<30,
		"The largest HTTP request body on /mcp, in bytes; a larger one gets 413 before it is read.")
	ex.finish()

	key := serversKey
	if root.has(aliasKey) {
		if root.has(serversKey) {
			root.reject(aliasKey, "is an alias of %s; use only one of %s and %s", serversKey, serversKey, aliasKey)
		} else {
			key = aliasKey
		}
	}
	cfg.Servers = d.servers(root.entries(key, serversDoc[key], "server id to server", "<id>", idPatternText), cfg.Execution)

	d.discovery(root.sub("discovery", "Finding MCP servers in labelled containers, Swarm services and files."), &cfg.Discovery)

	b := root.sub("batch", "Limits of hangar_call, which runs one call or a batch of calls.")
	b.intIn("max_calls", &cfg.Batch.MaxCalls, 1, 10000,
		"The most calls one hangar_call may hold.")
	b.intIn("max_concurrency", &cfg.Batch.MaxConcurrency, 1, 10000,
		"The most calls of one batch that run at once (the upper bound of its max_concurrency argument).")
	b.seconds("default_timeout", &cfg.Batch.DefaultTimeout, 1, 3600,
		"A batch's timeout when the call gives none, in seconds; at most max_timeout.")
	b.seconds("max_timeout", &cfg.Batch.MaxTimeout, 1, 3600,
		"The longest timeout a batch may ask for, in seconds.")
	b.intIn("max_response_size_bytes", &cfg.Batch.MaxResponseSizeBytes, 1, 1<<30,
		"A call's result larger than this many bytes is truncated; the rest is fetched with hangar_fetch_continuation.")
	b.intIn("max_total_response_size_bytes", &cfg.Batch.MaxTotalResponseSizeByte, 1, 1<<30,
		"The most bytes of results one batch returns; results beyond it are truncated.")
	b.intIn("max_continuation_bytes", &cfg.Batch.MaxContinuationBytes, 1<<10, 1<<34,
		"The bytes of truncated results kept for hangar_fetch_continuation (on disk under data_dir); a result that does not fit fails with error_type continuation_full.")
	b.seconds("continuation_ttl_s", &cfg.Batch.ContinuationTTL, 1, 86400,
		"How long a truncated result can be fetched, in seconds.")
	if cfg.Batch.DefaultTimeout > cfg.Batch.MaxTimeout {
		d.add(b.at("default_timeout"), "must not exceed max_timeout (%s > %s)", cfg.Batch.DefaultTimeout, cfg.Batch.MaxTimeout)
	}
	b.finish()

	d.auth(root.sub("auth", "Who may call the gateway: bearer tokens, OIDC JWTs, and the rate limit."), &cfg.Auth)
	d.checkUpstreamAuth(key, cfg)

	r := root.sub("config_reload", "Watching the config file and applying its changes without a restart.")
	r.boolean("enabled", &cfg.ConfigReload.Enabled,
		"Reload the config file when it changes.")
	r.seconds("interval_s", &cfg.ConfigReload.Interval, 1, 3600,
		"How often the file is looked at, in seconds.")
	r.finish()

	l := root.sub("logging", "The gateway's log (on stderr).")
	// WARNING is accepted because the Python hangar (and its logging
	// module) spells the level that way.
	if l.enum("level", &cfg.Logging.Level, "The lowest level logged (WARNING is WARN).",
		"DEBUG", "INFO", "WARN", "WARNING", "ERROR") && cfg.Logging.Level == "WARNING" {
		cfg.Logging.Level = "WARN"
	}
	l.boolean("json_format", &cfg.Logging.JSONFormat,
		"Log JSON lines; false logs text.")
	l.finish()

	d.registry(root.sub("registry", "Hot-loading with hangar_load: the MCP registry searched, and a local catalog consulted first. Off when both url and catalog_file are empty."), &cfg.Registry)
	d.images(root.sub("images", "How provider images are pulled, which registries they may come from, and signatures."), &cfg.Images)
	d.httpServer(root.sub("server", "The HTTP endpoint: its sessions and the names it is served under."), &cfg.HTTP)
	d.manage(root, cfg)
	d.egressProxy(root.sub("egress_proxy", "Where and how the gateway runs the egress proxies of servers with egress."), &cfg.EgressProxy)
	d.toolAccess(root, cfg)
	d.store(root.sub("store", "Where durable state lives: PostgreSQL shared by replicas when url is set, else SQLite in data_dir."), &cfg.Store)
	d.telemetry(root.sub("telemetry", "OpenTelemetry traces and metrics exported over OTLP; off unless an endpoint is set here or in OTEL_EXPORTER_OTLP_*."), &cfg.Telemetry)
	cfg.Policy = d.policySpec(root.sub("policy", "The gateway's policy over calls: CEL rules that allow or deny a call (docs/policy.md)."))

	if root.str("data_dir", &cfg.DataDir,
		"The directory of state that survives restarts (the store, its keystore key). Default $XDG_STATE_HOME/hangar/<instance>; /data in the image; --data-dir and $HANGAR_DATA_DIR win.") {
		if msg := checkDataDir(cfg.DataDir); msg != "" {
			d.add("data_dir", "%s", msg)
		}
	}

	root.finish()
	return cfg
}

func (d *decoder) discovery(s *section, disc *Discovery) {
	s.boolean("enabled", &disc.Enabled,
		"Run discovery.")
	s.seconds("refresh_interval_s", &disc.RefreshInterval, 1, 86400,
		"How often sources are listed again besides their events, in seconds.")
	s.boolean("auto_register", &disc.AutoRegister,
		"Serve a found server at once; false keeps it in hangar_discovered until hangar_approve.")
	items, _ := s.list("sources", "Where servers are found; with none, discovery finds nothing.")
	for i, item := range items {
		sp := index(s.at("sources"), i)
		if _, ok := asMap(item); !ok {
			d.add(sp, "must be a mapping (got %s)", got(item))
			continue
		}
		disc.Sources = append(disc.Sources, d.source(s.item("sources", sp, item)))
	}
	sec := s.sub("security", "What happens to found servers before they are served.")
	sec.boolean("require_health_check", &disc.Security.RequireHealthCheck,
		"Check a found server (an MCP handshake and tools/list) before it is offered or registered.")
	sec.boolean("quarantine_on_failure", &disc.Security.QuarantineOnFailure,
		"Quarantine a server that fails its check (hangar_quarantine); false drops it.")
	sec.finish()
	s.finish()
}

func (d *decoder) source(s *section) Source {
	src := Source{Mode: "additive"}
	const typeDoc = "docker: labelled containers of the Docker engine; swarm: labelled services of a Swarm; filesystem: server files in a directory."
	if !s.has("type") {
		s.def("type", typeDoc, "string")
		s.take("type")
		d.add(s.at("type"), "required")
	} else if s.enum("type", &src.Type, typeDoc, "docker", "swarm", "filesystem") && (src.Type == "docker" || src.Type == "swarm") {
		for _, k := range []string{"path", "pattern", "watch"} {
			if s.has(k) {
				s.reject(k, "not allowed for type %s", src.Type)
			}
		}
	} else if src.Type == "filesystem" && s.has("filters") {
		s.reject("filters", "not allowed for type filesystem")
	}
	const filtersDoc = "Which labelled containers (docker) or services (swarm) the source sees: each must pass every filter."
	switch src.Type {
	case "docker":
		src.Filters = d.sourceFilters(s.sub("filters", filtersDoc))
	case "swarm":
		src.Filters = d.swarmFilters(s.sub("filters", filtersDoc))
	}
	s.enum("mode", &src.Mode, "authoritative: a server the source registered is removed once the source no longer lists it; "+
		"additive: only once its container or service is removed (docker rm, docker service rm), not when it is stopped or scaled to zero.",
		"additive", "authoritative")
	if src.Type == "filesystem" {
		src.Pattern = "*.yaml"
	}
	hasPath := s.str("path", &src.Path, "filesystem: the directory of server files (required for filesystem).")
	if src.Type == "filesystem" && (!hasPath || src.Path == "") {
		d.add(s.at("path"), "required for type filesystem")
	}
	if s.str("pattern", &src.Pattern, "filesystem: a glob of the file names read.") {
		if _, err := filepath.Match(src.Pattern, ""); err != nil {
			d.add(s.at("pattern"), "invalid glob pattern %q: %v", src.Pattern, err)
		}
	}
	s.boolean("watch", &src.Watch, "filesystem: read the directory again when it changes.")
	s.finish()
	return src
}

// composeProjectName is what docker compose accepts as a project name.
var composeProjectName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`) })

func (d *decoder) sourceFilters(s *section) SourceFilters {
	f := SourceFilters{ComposeProject: ComposeAuto}
	if s.str("compose_project", &f.ComposeProject,
		`docker: "auto" is the gateway's own compose project (every project when the gateway is not in one); "*" any project or none; else a project name.`,
		opt{pattern: func() string { return `^(auto|\*)$|` + composeProjectName().String() }}) {
		switch p := f.ComposeProject; {
		case p == ComposeAuto, p == ComposeAny:
		case !composeProjectName().MatchString(p):
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
	if s.strMap("labels", &f.Labels, "Labels each must carry: an empty value asks only that the label is present.") {
		for k := range f.Labels {
			if strings.TrimSpace(k) == "" {
				d.add(join(s.at("labels"), k), "label name must not be empty")
			}
		}
	}
	if s.strList("networks", &f.Networks, "Networks one of which each must be on; none: any network.") {
		for i, n := range f.Networks {
			if strings.TrimSpace(n) == "" {
				d.add(index(s.at("networks"), i), "must not be empty")
			}
		}
	}
}
