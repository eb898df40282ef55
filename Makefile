# hangar — build, images, tests, benchmarks. Nothing here pulls an image:
# every image is FROM scratch around a static binary built on this host.

GO        ?= go
IMAGES    := gateway math testkit everything gosdk-everything egresskit
GOFLAGS_STATIC := CGO_ENABLED=0
COMPOSE   := $(shell if docker compose version >/dev/null 2>&1; then echo "docker compose"; else echo docker-compose; fi)
TEST_TIMEOUT ?= 15m

.PHONY: all build images test unit integration bench run run-stdio lint clean $(IMAGES:%=image-%)

all: build

build:
	$(GOFLAGS_STATIC) $(GO) build -trimpath -o bin/hangar ./cmd/hangar

# build/<image>/ is each image's whole build context: the static binary (and
# for the gateway its default config).
build/gateway/hangar: FORCE
	@mkdir -p build/gateway
	$(GOFLAGS_STATIC) $(GO) build -trimpath -o $@ ./cmd/hangar
	cp images/gateway/config.yaml build/gateway/config.yaml

build/%/bin: FORCE
	@mkdir -p build/$*
	$(GOFLAGS_STATIC) $(GO) build -trimpath -o build/$*/$* ./images/$*

image-gateway: build/gateway/hangar
	docker build -q -t mcp-hangar/gateway:dev -f images/gateway/Dockerfile build/gateway

image-math: build/math/bin
	docker build -q -t mcp-hangar/math:dev -f images/math/Dockerfile build/math

image-testkit: build/testkit/bin
	docker build -q -t mcp-hangar/testkit:dev -f images/testkit/Dockerfile build/testkit

image-egresskit: build/egresskit/bin
	docker build -q -t mcp-hangar/egresskit:dev -f images/egresskit/Dockerfile build/egresskit

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

images: $(IMAGES:%=image-%)

# Unit tests need no Docker. Integration tests build the images first and
# run against the real engine; they fail (not skip) under CI=true when the
# engine is missing.
unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./internal/... ./images/... ./cmd/... ./bench/...

integration: images
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p 1 ./integration/...

test: unit integration

bench: images build
	$(GO) run ./bench -out BENCHMARKS.md

# Runs the gateway on the host with the sample config (math provider).
run: build image-math
	./bin/hangar serve --config config.example.yaml --listen 127.0.0.1:8080

run-stdio: build image-math
	./bin/hangar serve --config config.example.yaml --stdio

clean:
	rm -rf bin build

FORCE:
