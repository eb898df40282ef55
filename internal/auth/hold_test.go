package auth

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-hangar/hangar/internal/config"
)

// TestHold: a stream held by its credential ends when the token expires,
// when a reload removes it or changes what it grants, and at a moved
// expiry; a reload that leaves its grant alone leaves it open. Times are
// synctest's: "ends at 2s" is exact.
func TestHold(t *testing.T) {
	t.Parallel()
	const secret = "hgr_hold-0123456789abcdef"
	const never = time.Duration(-1)
	type token struct {
		scopes, servers []string
		expiresIn       time.Duration // 0: never
	}
	tests := []struct {
		name      string
		start     token
		reload    *token // the token after the reload at 2s; nil: removed
		anonymous bool   // the reload allows anonymous callers
		endsAt    time.Duration
	}{
		{"expires", token{[]string{ScopeRead}, nil, 5 * time.Second}, &token{[]string{ScopeRead}, nil, 5 * time.Second}, false, 5 * time.Second},
		{"removed by a reload", token{[]string{ScopeRead}, nil, 0}, nil, false, 2 * time.Second},
		{"removed, anonymous allowed", token{[]string{ScopeRead}, nil, 0}, nil, true, 2 * time.Second},
		{"servers narrowed", token{[]string{ScopeRead}, []string{"a*"}, 0}, &token{[]string{ScopeRead}, []string{"a"}, 0}, false, 2 * time.Second},
		{"scope taken", token{[]string{ScopeRead, ScopeCall}, nil, 0}, &token{[]string{ScopeCall}, nil, 0}, false, 2 * time.Second},
		{"same grant", token{[]string{ScopeRead}, []string{"a"}, 0}, &token{[]string{ScopeRead}, []string{"a"}, 0}, false, never},
		{"expiry moved later", token{[]string{ScopeRead}, nil, 5 * time.Second}, &token{[]string{ScopeRead}, nil, 8 * time.Second}, false, 8 * time.Second},
		{"expiry moved earlier", token{[]string{ScopeRead}, nil, 0}, &token{[]string{ScopeRead}, nil, 3 * time.Second}, false, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				began := time.Now()
				conf := func(tk *token, anonymous bool) Settings {
					a := config.Auth{Tokens: []config.Token{{Name: "other", SHA256: sha256.Sum256([]byte("hgr_other-0123456789abcdef")), Scopes: AllScopes}}}
					if tk != nil {
						ct := config.Token{Name: "streamer", SHA256: sha256.Sum256([]byte(secret)), Scopes: tk.scopes, Servers: tk.servers}
						if tk.expiresIn > 0 {
							ct.ExpiresAt = began.Add(tk.expiresIn)
						}
						a.Tokens = append(a.Tokens, ct)
					}
					return Settings{Auth: NewAuthenticator(t.Context(), a, Options{}), AllowAnonymous: anonymous}
				}
				first := conf(&tt.start, false)
				h := &HTTP{Auth: first.Auth, Log: slog.New(slog.DiscardHandler)}
				ended := make(chan time.Duration, 1)
				opened := make(chan struct{})
				stream := h.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					ctx, release := h.Hold(r)
					defer release()
					close(opened)
					<-ctx.Done()
					ended <- time.Since(began)
				}))
				// The client's side: gone when the test ends.
				client, hangUp := context.WithCancel(t.Context())
				defer hangUp()
				req := httptest.NewRequestWithContext(client, http.MethodGet, "/events", nil)
				req.Header.Set("Authorization", "Bearer "+secret)
				go stream.ServeHTTP(httptest.NewRecorder(), req)
				<-opened
				time.Sleep(2 * time.Second)
				h.Reload(conf(tt.reload, tt.anonymous))
				select {
				case at := <-ended:
					if at != tt.endsAt {
						t.Errorf("the stream ended at %s, want %s", at, tt.endsAt)
					}
				case <-time.After(time.Minute):
					if tt.endsAt != never {
						t.Errorf("the stream is open a minute on, want it ended at %s", tt.endsAt)
					}
				}
				if tt.endsAt == never {
					return
				}
				synctest.Wait()
				if n := h.Holds(); n != 0 {
					t.Errorf("%d holds left after the stream ended", n)
				}
			})
		})
	}
}
