# hangar — build, images, tests, benchmarks. Nothing here pulls an image:
# the gateway and our test servers are built by the top-level Dockerfile on a
# Go image made from this host's toolchain (go-base); the two third-party
# test servers are FROM scratch around a static binary built on this host.

GO        ?= go
IMAGES    := gateway math testkit agent everything gosdk-everything egresskit postgres pkgregistry pkgruntime
GOFLAGS_STATIC := CGO_ENABLED=0
COMPOSE   := $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; else echo docker-compose; fi)
# A guard against a hung test, not the budget: the suite takes about 13 minutes on
# two quiet cores, and more on a busy engine.
TEST_TIMEOUT ?= 30m
# Read once per make run (:=), so that every image of one run has one version.
ifeq ($(origin VERSION),undefined)
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
endif
# The build stage's Go image. Where images can be pulled: make images GO_IMAGE=golang:1.26-bookworm
GO_IMAGE  ?= mcp-hangar/go-base:dev
GOROOT    := $(shell $(GO) env GOROOT)
GOMODCACHE_HOST := $(shell $(GO) env GOMODCACHE)

.PHONY: all build images test unit integration soak bench run run-stdio lint clean docs image-go-base $(IMAGES:%=image-%)

all: build

# -w leaves out the DWARF debugging sections (9 MB; they are never loaded,
# and panics, pprof and `go tool nm` use the symbol table, which stays).
# `make build STRIP=` keeps them for a debugger. docs/performance.md.
STRIP ?= -w
build:
	$(GOFLAGS_STATIC) $(GO) build -trimpath -ldflags "$(STRIP) -X github.com/mcp-hangar/hangar/internal/gateway.Version=$(VERSION)" -o bin/hangar ./cmd/hangar

# The Go image the Dockerfile builds on here: this host's GOROOT and the
# module cache of go.sum's modules, copied out of the host's cache (no
# network). Rebuilt only when the toolchain or go.sum changed: the image's
# label holds what it was made from. The context's folder starts with "_" so
# that ./... never walks into the module cache inside it.
GO_BASE_KEY := $(shell { $(GO) version; cat go.sum images/go-base/Dockerfile; } | sha256sum | cut -c1-16)
image-go-base:
	@if [ "$$(docker image inspect -f '{{index .Config.Labels "io.mcp-hangar.go-base"}}' mcp-hangar/go-base:dev 2>/dev/null)" = "$(GO_BASE_KEY)" ]; then \
		echo "mcp-hangar/go-base:dev is current"; \
	else \
		set -e; rm -rf build/_go-base; mkdir -p build/_go-base; \
		$(GO) mod download; \
		cp -al $(GOROOT) build/_go-base/go 2>/dev/null || cp -a $(GOROOT) build/_go-base/go; \
		rm -rf build/_go-base/go/test build/_go-base/go/doc; \
		GOFLAGS=-modcacherw GOMODCACHE=$(CURDIR)/build/_go-base/mod GOPROXY=file://$(GOMODCACHE_HOST)/cache/download GOSUMDB=off $(GO) mod download; \
		find build/_go-base/mod/cache -name "*.zip" -delete; \
		cp /etc/ssl/certs/ca-certificates.crt build/_go-base/; \
		mkdir build/_go-base/warm; cp go.mod go.sum build/_go-base/warm/; \
		{ echo "package warm"; echo; echo "import ("; \
		  $(GO) list -deps -f '{{if not .Standard}}	_ "{{.ImportPath}}"{{end}}' ./cmd/hangar ./images/math ./images/testkit ./images/egresskit ./examples/agent \
		    | grep -v '"github.com/mcp-hangar/hangar' | grep -Ev '/internal(/|")' ; echo ")"; } > build/_go-base/warm/warm.go; \
		docker build -q --label io.mcp-hangar.go-base=$(GO_BASE_KEY) -t mcp-hangar/go-base:dev -f images/go-base/Dockerfile build/_go-base; \
		rm -rf build/_go-base; \
	fi

# The gateway, the demo servers math and testkit, egresskit and the example
# agent (examples/agent): targets of the top-level Dockerfile, as `docker
# build .` would run it (one build stage).
DOCKERFILE_BUILD = docker build -q --build-arg GO_IMAGE=$(GO_IMAGE) --build-arg VERSION=$(VERSION)
GO_BASE_DEP = $(if $(filter mcp-hangar/go-base:dev,$(GO_IMAGE)),image-go-base)
image-gateway: $(GO_BASE_DEP)
	$(DOCKERFILE_BUILD) -t mcp-hangar/gateway:dev .

image-math image-testkit image-egresskit image-agent: image-%: $(GO_BASE_DEP)
	$(DOCKERFILE_BUILD) --target $* -t mcp-hangar/$*:dev .

# A third-party server from a Go module (mcp-go's examples/everything), for
# the front door's tests; built from the module cache, nothing pulled.
build/everything/everything: FORCE
	@mkdir -p build/everything
	$(GOFLAGS_STATIC) $(GO) build -trimpath -o $@ github.com/mark3labs/mcp-go/examples/everything

image-everything: build/everything/everything
	docker build -q -t mcp-hangar/everything:dev -f images/everything/Dockerfile build/everything

# The official Go SDK's everything example; images/gosdk-everything is a
# module of its own that pins the SDK.
build/gosdk-everything/gosdk-everything: FORCE
	@mkdir -p build/gosdk-everything
	cd images/gosdk-everything && $(GOFLAGS_STATIC) $(GO) build -trimpath -o $(CURDIR)/$@ github.com/modelcontextprotocol/go-sdk/examples/server/everything

image-gosdk-everything: build/gosdk-everything/gosdk-everything
	docker build -q -t mcp-hangar/gosdk-everything:dev -f images/gosdk-everything/Dockerfile build/gosdk-everything

# PostgreSQL for compose/swarm.yml, FROM scratch around this host's Debian
# packages (nothing pulled). Rebuilt only when the packages or the image's
# files changed (the label holds what it was made from); skipped with a
# notice where PostgreSQL is not installed (.ci/run installs it).
PG_BIN := $(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin/postgres)))
PG_KEY := $(shell { [ -n "$(PG_BIN)" ] && $(PG_BIN) --version; cat images/postgres/Dockerfile images/postgres/entrypoint.sh images/postgres/rootfs.sh; } 2>/dev/null | sha256sum | cut -c1-16)
image-postgres:
	@if [ -z "$(PG_BIN)" ]; then \
		echo "mcp-hangar/postgres:dev skipped: PostgreSQL is not installed (apt-get install postgresql)"; \
	elif [ "$$(docker image inspect -f '{{index .Config.Labels "io.mcp-hangar.postgres"}}' mcp-hangar/postgres:dev 2>/dev/null)" = "$(PG_KEY)" ]; then \
		echo "mcp-hangar/postgres:dev is current"; \
	else \
		set -e; v=$$(sh images/postgres/rootfs.sh build/_postgres); \
		docker build -q --label io.mcp-hangar.postgres=$(PG_KEY) --build-arg PG_VERSION=$$v -t mcp-hangar/postgres:dev -f images/postgres/Dockerfile build/_postgres; \
		rm -rf build/_postgres; \
	fi

# The test package registry: an npm registry and a PyPI simple index of
# the packages internal/packages/pkgtest makes, FROM scratch.
build/pkgregistry/pkgregistry: FORCE
	@mkdir -p build/pkgregistry
	$(GOFLAGS_STATIC) $(GO) build -trimpath -o $@ ./images/pkgregistry

image-pkgregistry: build/pkgregistry/pkgregistry
	docker build -q -t mcp-hangar/pkgregistry:dev -f images/pkgregistry/Dockerfile build/pkgregistry

# The package runtime images of the tests, from this host's Debian packages
# (debootstrap --variant=minbase from the host's own mirror, apt-get in a
# chroot; images/pkgruntime/rootfs.sh), docker import-ed:
# mcp-hangar/pkgruntime-node:dev (Node.js and npm) and
# mcp-hangar/pkgruntime-python:dev (Python with pip and venv, no uv). Built
# once: their label holds what they were made from. Skipped with a notice
# where debootstrap is not installed (.ci/run installs it) or make does not
# run as root.
PKGRUNTIME_KEY := $(shell { cat images/pkgruntime/rootfs.sh; . /etc/os-release 2>/dev/null && echo "$$VERSION_CODENAME"; } | sha256sum | cut -c1-16)
PKGRUNTIME_CURRENT = [ "$$(docker image inspect -f '{{index .Config.Labels "io.mcp-hangar.pkgruntime"}}' mcp-hangar/pkgruntime-$(1):dev 2>/dev/null)" = "$(PKGRUNTIME_KEY)" ]
image-pkgruntime:
	@if $(call PKGRUNTIME_CURRENT,node) && $(call PKGRUNTIME_CURRENT,python); then \
		echo "mcp-hangar/pkgruntime-node:dev and mcp-hangar/pkgruntime-python:dev are current"; \
	elif ! command -v debootstrap >/dev/null 2>&1 || [ "$$(id -u)" -ne 0 ]; then \
		echo "mcp-hangar/pkgruntime-*:dev skipped: they need debootstrap (apt-get install debootstrap) and root"; \
	else \
		set -e; v=$$(sh images/pkgruntime/rootfs.sh build/_pkgruntime); \
		for r in node python; do \
			tar -C build/_pkgruntime/$$r -c . | docker import \
				-c 'LABEL io.mcp-hangar.pkgruntime=$(PKGRUNTIME_KEY)' \
				-c "LABEL org.opencontainers.image.description=\"hangar's test package runtime ($$r): $$v\"" \
				-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
				-c 'CMD ["/bin/sh"]' - mcp-hangar/pkgruntime-$$r:dev >/dev/null; \
		done; \
		rm -rf build/_pkgruntime; \
		echo "mcp-hangar/pkgruntime-node:dev and mcp-hangar/pkgruntime-python:dev built: $$v"; \
	fi

images: $(IMAGES:%=image-%)

# Unit tests need no Docker. Integration tests build the images first and
# run against the real engine; they fail (not skip) under CI=true when the
# engine is missing.
unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./internal/... ./images/... ./examples/... ./cmd/... ./bench/... ./soak/... ./docs/...

integration: images
	IMAGE_VERSION=$(VERSION) GO_IMAGE=$(GO_IMAGE) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p 1 ./integration/...

test: unit integration

# The reliability harness (package soak), not in CI: two gateway replicas
# on PostgreSQL behind a balancer, clients of both SDKs on both protocol
# versions, a fault every SOAK_FAULT_EVERY; it stops by itself after
# SOAK_DURATION and writes RELIABILITY.md (exit 1 when it found problems).
# integration's TestSoakShort runs the same harness for under 3 minutes.
# SOAK_FLAGS passes more flags (docs/reliability.md).
SOAK_DURATION    ?= 1h
SOAK_FAULT_EVERY ?= 3m
SOAK_FLAGS       ?=
soak: image-gateway image-testkit image-postgres
	SOAK_COMMAND="make soak SOAK_DURATION=$(SOAK_DURATION) SOAK_FAULT_EVERY=$(SOAK_FAULT_EVERY)$(if $(SOAK_FLAGS), SOAK_FLAGS='$(SOAK_FLAGS)')" \
		$(GO) run ./soak/cmd/soak -duration $(SOAK_DURATION) -fault-every $(SOAK_FAULT_EVERY) -out RELIABILITY.md $(SOAK_FLAGS)

bench: images build
	$(GO) run ./bench -out BENCHMARKS.md

# Runs the gateway on the host with the sample config (math provider).
# docs/configuration.md's reference is rendered from the config loader's own
# definitions; TestConfigurationReferenceIsCurrent fails until this is run.
docs:
	$(GO) test ./internal/config -run '^TestConfigurationReferenceIsCurrent$$' -count=1 -update

run: build image-math
	./bin/hangar serve --config config.example.yaml --listen 127.0.0.1:8080

run-stdio: build image-math
	./bin/hangar serve --config config.example.yaml --stdio

clean:
	rm -rf bin build

FORCE:
