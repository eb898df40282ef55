package dashboard

import "encoding/json"

// shellPage is the one HTML page of /ui/, written once from the pages
// table: the header with the nav, the places the parts go, the Try
// dialog, and the table itself for app.js (data-pages).
func shellPage() []byte {
	table, err := json.Marshal(pages)
	if err != nil {
		panic("dashboard: the pages table: " + err.Error())
	}
	f := &frag{}
	f.M(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>hangar</title>
<link rel="stylesheet" href="/ui/app.css">
<script src="/ui/app.js" defer></script>
<script src="/ui/try.js" defer></script>
</head>
<body>
<a class="skip" href="#view">Skip to content</a>
<header>
<div class="bar">
<a class="brand" href="#servers" aria-label="hangar: servers"><span class="logo" aria-hidden="true"></span>hangar</a>
<form id="search" role="search" hidden>
<label class="sr" for="search-q">Find tools</label>
<input id="search-q" type="search" placeholder="Find tools…" autocomplete="off" aria-controls="search-results" aria-expanded="false">
<div id="search-results" class="popup" hidden></div>
</form>
<span id="live" class="live off" title="live updates from /events">offline</span>
<span id="who" class="who" hidden></span>
<button type="button" id="signin" class="ghost" hidden>Use a token</button>
<button type="button" id="signout" class="ghost" hidden>Forget token</button>
</div>
<nav id="nav" aria-label="Pages">`)
	for _, p := range pages {
		if p.Nav == "" {
			continue
		}
		f.M(`<a href="#`)
		f.URLPart(p.Name)
		f.M(`"`)
		f.Attr(` data-view`, p.Name)
		f.M(`>`)
		f.Text(p.Nav)
		f.M(`</a>`)
	}
	f.M(`</nav>
</header>
<main>
<form id="login" class="card" hidden>
<h2>Sign in</h2>
<p id="login-why" class="hint"></p>
<label for="token">Bearer token</label>
<div class="row"><input id="token" type="password" autocomplete="off" required><button type="submit" class="primary">Use token</button><button type="button" id="login-cancel" class="ghost" hidden>Cancel</button></div>
<p class="hint">The token is kept in this tab only (sessionStorage) and sent as an Authorization header.</p>
</form>
<div id="notice" role="status"></div>
<div id="view"`)
	f.Attr(` data-pages`, string(table))
	f.M(` tabindex="-1"></div>
</main>
<dialog id="try" aria-labelledby="try-title">
<div class="dialog-head"><h2 id="try-title">Try</h2><button type="button" class="ghost close" data-close aria-label="Close">✕</button></div>
<div id="try-body"></div>
<section id="try-result" class="result" aria-live="polite" hidden></section>
</dialog>
</body>
</html>
`)
	return f.Bytes()
}
