// Command pkgregistry serves internal/packages/pkgtest: an npm registry and
// a PyPI simple index of test packages, for the package runtime's
// integration tests and benchmarks (image mcp-hangar/pkgregistry:dev).
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/mcp-hangar/hangar/internal/packages/pkgtest"
)

func main() {
	listen := flag.String("listen", ":8080", "address to serve on")
	flag.Parse()
	srv := &http.Server{Addr: *listen, Handler: pkgtest.New(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("pkgregistry: npm at /npm/, PyPI simple index at /pypi/simple/, on %s", *listen)
	log.Fatal(srv.ListenAndServe())
}
