package auth

import (
	"net/http"
	"strings"
	"testing"
)

func TestCredential(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		headers [][2]string
		want    string
		err     error
	}{
		{"none", nil, "", ErrNoCredential},
		{"bearer", [][2]string{{"Authorization", "Bearer abc"}}, "abc", nil},
		{"bearer lower case", [][2]string{{"Authorization", "bearer abc"}}, "abc", nil},
		{"extra spaces", [][2]string{{"Authorization", "  Bearer   abc  "}}, "abc", nil},
		{"api key", [][2]string{{"X-API-Key", "abc"}}, "abc", nil},
		{"api key any case", [][2]string{{"x-api-key", "abc"}}, "abc", nil},
		{"same in both", [][2]string{{"Authorization", "Bearer abc"}, {"X-API-Key", "abc"}}, "abc", nil},
		{"different in both", [][2]string{{"Authorization", "Bearer abc"}, {"X-API-Key", "xyz"}}, "", ErrMultipleCredential},
		{"two authorization headers", [][2]string{{"Authorization", "Bearer abc"}, {"Authorization", "Bearer abc"}}, "", ErrMultipleCredential},
		{"two api keys", [][2]string{{"X-API-Key", "a"}, {"X-API-Key", "b"}}, "", ErrMultipleCredential},
		{"basic", [][2]string{{"Authorization", "Basic YWxhZGRpbjpvcGVu"}}, "", ErrUnsupportedScheme},
		{"scheme only", [][2]string{{"Authorization", "Bearer"}}, "", ErrMalformedAuthz},
		{"bare token", [][2]string{{"Authorization", "abc"}}, "", ErrUnsupportedScheme},
		{"empty token", [][2]string{{"Authorization", "Bearer  "}}, "", ErrMalformedAuthz},
		{"space inside", [][2]string{{"Authorization", "Bearer a b"}}, "", ErrBadCredentialChars},
		{"control character", [][2]string{{"X-API-Key", "a\x01b"}}, "", ErrBadCredentialChars},
		{"quote", [][2]string{{"X-API-Key", `a"b`}}, "", ErrBadCredentialChars},
		{"non-ascii", [][2]string{{"X-API-Key", "tökén"}}, "", ErrBadCredentialChars},
		{"too long", [][2]string{{"X-API-Key", strings.Repeat("a", MaxCredentialLength+1)}}, "", ErrMalformedAuthz},
		{"jwt", [][2]string{{"Authorization", "Bearer eyJ.eyJ.sig-_"}}, "eyJ.eyJ.sig-_", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, kv := range tc.headers {
				h.Add(kv[0], kv[1])
			}
			got, err := Credential(h, "X-API-Key")
			if got != tc.want || err != tc.err {
				t.Errorf("Credential = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// FuzzCredential checks that whatever the headers hold, a credential is
// either refused or is a clean token taken verbatim from one of them.
func FuzzCredential(f *testing.F) {
	f.Add("Bearer abc", "")
	f.Add("", "abc")
	f.Add("Bearer abc", "abc")
	f.Add("bEaReR \t x", "")
	f.Add("Basic x", "y")
	f.Fuzz(func(t *testing.T, authz, apiKey string) {
		h := http.Header{}
		if authz != "" {
			h["Authorization"] = []string{authz}
		}
		if apiKey != "" {
			h["X-Api-Key"] = []string{apiKey}
		}
		tok, err := Credential(h, "X-API-Key")
		if err != nil {
			if tok != "" {
				t.Fatalf("token %q returned with error %v", tok, err)
			}
			return
		}
		if tok == "" || len(tok) > MaxCredentialLength || strings.ContainsAny(tok, " \t\r\n\"\\,;") {
			t.Fatalf("accepted a malformed token %q", tok)
		}
		if !strings.Contains(authz, tok) && !strings.Contains(apiKey, tok) {
			t.Fatalf("token %q is not from the headers", tok)
		}
	})
}

// FuzzEnvelopeID checks that only a string or number id is ever echoed.
func FuzzEnvelopeID(f *testing.F) {
	f.Add([]byte(`{"id":1}`))
	f.Add([]byte(`{"id":"a"}`))
	f.Add([]byte(`{"id":null}`))
	f.Add([]byte(`{"id":{"x":1}}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		id := EnvelopeID(body)
		if id == nil {
			return
		}
		if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
			t.Fatalf("echoed id %s", id)
		}
	})
}
