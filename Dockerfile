# The gateway image: `docker build -t mcp-hangar/gateway:dev .`
# The demo stack's MCP servers are targets of the same file:
# `docker build --target math -t mcp-hangar/math:dev .` (and testkit; egresskit
# serves the egress tests; agent is the client of examples/agent).
#
# GO_IMAGE is the Go toolchain image of the build stage. Where images can be
# pulled the default serves; on a machine that cannot pull (like the CI
# machines of this project) `make images` builds mcp-hangar/go-base:dev from
# the host's Go and module cache and passes it here.
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
# Exec-form RUN only: the local build image has no shell.
ENV CGO_ENABLED=0 \
    GOFLAGS=-trimpath
WORKDIR /src
COPY go.mod go.sum ./
COPY cmd/ cmd/
COPY internal/ internal/
COPY images/math/ images/math/
COPY images/testkit/ images/testkit/
COPY images/egresskit/ images/egresskit/
# Only the agent example's Go files: editing its README rebuilds nothing.
COPY examples/agent/*.go examples/agent/
# Everything compiled once without the version, so that a new version (a new
# commit with the same sources) only links the gateway again.
RUN ["go", "build", "-o", "/out/", "./cmd/hangar", "./images/math", "./images/testkit", "./images/egresskit", "./examples/agent"]
ARG VERSION=dev
# GOFLAGS carries the version, so no shell is needed to expand it (one
# -ldflags only, quoted: a repeated -ldflags replaces the one before). -w
# leaves out the DWARF sections, as `make build` does.
ENV GOFLAGS="-trimpath '-ldflags=-w -X=github.com/mcp-hangar/hangar/internal/gateway.Version=${VERSION}'"
RUN ["go", "build", "-o", "/out/hangar", "./cmd/hangar"]
# Directories the final stage needs, made here because scratch has no mkdir.
WORKDIR /out/data
WORKDIR /out/run-hangar

# Two MCP servers of the demo stack and the tests: math (stdio) and testkit.
FROM scratch AS math
COPY --from=build /out/math /math
USER 65534:65534
ENTRYPOINT ["/math"]

FROM scratch AS testkit
COPY --from=build /out/testkit /testkit
USER 65534:65534
ENTRYPOINT ["/testkit"]

# The egress tests' provider and test server.
FROM scratch AS egresskit
COPY --from=build /out/egresskit /egresskit
USER 65534:65534
ENTRYPOINT ["/egresskit"]

# The example agent of examples/agent: an MCP client on the official Go SDK.
FROM scratch AS agent
COPY --from=build /out/agent /agent
USER 65534:65534
ENTRYPOINT ["/agent"]

# The gateway, the default target (last).
FROM scratch AS gateway
ARG VERSION=dev
ARG SOURCE=https://github.com/mcp-hangar/hangar
LABEL org.opencontainers.image.title="hangar" \
      org.opencontainers.image.description="Container-native MCP gateway" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# Time zones for policy rules that name one (request.time.getHours("Europe/Berlin")):
# Go reads $ZONEINFO, and scratch has no /usr/share/zoneinfo.
COPY --from=build /usr/local/go/lib/time/zoneinfo.zip /usr/share/zoneinfo.zip
COPY --from=build /out/hangar /hangar
COPY images/gateway/config.yaml /etc/hangar/config.yaml
# State (the SQLite store, its lock, the keystore key) lives in /data: mount
# a volume there to keep approvals across container restarts. /run/hangar
# holds a generated token (auth.generate_token in the default config).
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/run-hangar /run/hangar
ENV MCP_CONFIG=/etc/hangar/config.yaml \
    HANGAR_LISTEN=0.0.0.0:8080 \
    HANGAR_DATA_DIR=/data \
    ZONEINFO=/usr/share/zoneinfo.zip
# Non-root by default. A gateway that starts containers needs the Docker
# socket, and with it root (docker-compose.yml sets user: "0:0"); one that
# only reaches remote or discovered HTTP servers does not.
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/hangar"]
CMD ["serve"]
