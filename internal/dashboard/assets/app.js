// hangar dashboard: the shell's script. Every view is HTML rendered (and
// escaped) by the gateway; this script fetches it, routes on the URL
// fragment, keeps each part current (on /events, or every traffic step)
// and feeds a server's live log. Provider-controlled text that arrives as
// data (log lines, search matches) is only ever set as textContent.
//
// Credentials: none until the gateway asks for one. The first request
// goes without (or with the token this tab holds); only a 401 brings up
// the token box. A token is kept in this tab's sessionStorage and only
// ever sent as an Authorization header: never in a URL or a cookie.
"use strict";
(function () {
  const KEY = "hangar.token";
  const $ = (id) => document.getElementById(id);
  const PAGES = {};
  let me = null;       // /ui/api/me: who the gateway takes us for
  let events = null;   // the AbortController of the /events reader
  let following = "";  // the server whose log /events carries
  let pending = 0;     // a refresh is scheduled
  let trafficTimer = 0;
  let log = null;      // the live log panel of the server page
  const shown = new WeakMap(); // part element → the HTML it shows

  // A login link /ui/#token=… brings the token in the fragment, which no
  // request carries; it is moved to sessionStorage and removed from the
  // address bar and the history.
  function takeTokenFromLink() {
    const h = location.hash;
    if (!h.startsWith("#token=")) return false;
    const tok = decodeURIComponent(h.slice("#token=".length));
    if (tok) sessionStorage.setItem(KEY, tok);
    history.replaceState(null, "", location.pathname + location.search + "#servers");
    return !!tok;
  }

  function token() { return sessionStorage.getItem(KEY) || ""; }

  function notice(text, cls) {
    const n = $("notice");
    n.textContent = "";
    if (!text) return;
    const p = document.createElement("p");
    p.className = cls || "";
    p.textContent = text;
    n.appendChild(p);
  }

  // refusal is the seed-004 error of a refused request, as text, else
  // the body's first line (an origin refusal is plain text).
  async function refusal(resp) {
    const text = await resp.text();
    try {
      const body = JSON.parse(text);
      if (body && body.error) return body.error.message + " (" + body.error.code + ")";
    } catch (_) { /* not JSON */ }
    const line = text.split("\n")[0].trim();
    return line ? resp.status + ": " + line.slice(0, 300) : resp.status + " " + resp.statusText;
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const t = token();
    if (t) h["Authorization"] = "Bearer " + t;
    return h;
  }

  async function call(path, opts) {
    const o = Object.assign({}, opts || {});
    o.headers = headers(o.headers);
    o.cache = "no-store";
    o.credentials = "omit";
    const resp = await fetch(path, o);
    if (resp.status === 401) {
      const why = await refusal(resp);
      const had = token() !== "";
      sessionStorage.removeItem(KEY);
      showLogin(had ? "The token was refused: " + why : "This gateway needs a token: " + why);
      throw new Error("unauthenticated");
    }
    return resp;
  }

  async function fill(el, path) {
    const resp = await call(path);
    if (!resp.ok) {
      el.textContent = "Not shown: " + await refusal(resp);
      return;
    }
    // Server-rendered, escaped HTML; the CSP runs no inline script.
    // The same HTML again is left alone: focus and scroll stay.
    const html = await resp.text();
    if (shown.get(el) !== html) {
      el.innerHTML = html;
      shown.set(el, html);
    }
    // A part with nothing to show (nothing pending) is not shown.
    el.parentElement.hidden = html.trim() === "";
  }

  // route is the current page and the server it is about.
  function route() {
    const h = location.hash.replace(/^#/, "") || "servers";
    if (h.startsWith("server/")) return { page: PAGES.server, id: decodeURIComponent(h.slice("server/".length)) };
    return { page: PAGES[h] || PAGES.servers, id: "" };
  }

  function partPath(part, id) { return "/ui/api/" + part.frag.split("{id}").join(encodeURIComponent(id)); }

  async function show() {
    const r = route();
    for (const a of document.querySelectorAll("#nav a")) {
      const on = a.dataset.view === r.page.name;
      a.classList.toggle("active", on);
      if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    const view = $("view");
    view.textContent = "";
    log = null;
    r.page.parts.forEach((p, i) => {
      const s = document.createElement("section");
      s.className = "part";
      if (p.title) {
        const h = document.createElement("h2");
        h.textContent = p.title;
        s.appendChild(h);
      }
      if (p.live === "log") {
        log = logPanel(r.id);
        s.appendChild(log.el);
      } else {
        const d = document.createElement("div");
        d.id = "part-" + i;
        d.dataset.live = p.live;
        d.dataset.path = partPath(p, r.id);
        s.appendChild(d);
      }
      view.appendChild(s);
    });
    document.title = (r.id ? r.id + " · " : "") + "hangar";
    await refresh("");
    follow(r.id);
  }

  // refresh fetches the parts that stay current on kind ("" for all).
  async function refresh(kind) {
    const parts = document.querySelectorAll("#view [data-path]");
    await Promise.all(Array.from(parts).map((el) => {
      if (kind && !el.dataset.live.split(" ").includes(kind)) return null;
      return fill(el, el.dataset.path).catch(() => {});
    }));
  }

  function scheduleRefresh() {
    if (pending) return;
    pending = setTimeout(() => { pending = 0; refresh("events"); }, 150);
  }

  function startTrafficTimer() {
    clearInterval(trafficTimer);
    const every = Math.max(1000, (me && me.step_ms) || 5000);
    trafficTimer = setInterval(() => { if (!document.hidden) refresh("traffic"); }, every);
  }

  // follow makes /events carry server's log (none for ""): the stream is
  // opened again with ?follow=.
  function follow(server) {
    if (server === following && events) return;
    following = server;
    if (events) events.abort();
    readEvents();
  }

  // readEvents reads /events with the header (EventSource cannot send
  // it): a change refreshes the view, a log line goes to the log panel.
  // It reconnects after a drop, more slowly each time, and stops on a
  // refusal.
  async function readEvents() {
    let delay = 1000;
    const ctl = new AbortController();
    events = ctl;
    const path = "/events" + (following ? "?follow=" + encodeURIComponent(following) : "");
    for (;;) {
      try {
        const resp = await call(path, { signal: ctl.signal, headers: { "Accept": "text/event-stream" } });
        if (!resp.ok) {
          live(false, "no live updates: " + await refusal(resp));
          return;
        }
        live(true);
        delay = 1000;
        if (log) log.clear(); // the stream sends the log again from its start
        await sseEvents(resp, frame);
      } catch (e) {
        if (ctl.signal.aborted || e.message === "unauthenticated") return;
      }
      if (ctl.signal.aborted) return;
      live(false);
      await new Promise((res) => setTimeout(res, delay));
      if (ctl.signal.aborted) return;
      delay = Math.min(delay * 2, 30000);
      scheduleRefresh(); // what changed while the stream was down
    }
  }

  // sseEvents reads an event stream's body to its end and calls onEvent
  // with each event's name and data (events without data are skipped).
  async function sseEvents(resp, onEvent) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    const take = (block) => {
      let event = "", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (data) onEvent(event, data);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        take(buf.slice(0, i));
        buf = buf.slice(i + 2);
      }
    }
    if (buf.trim()) take(buf);
  }

  function frame(event, data) {
    if (event === "hangar/log") {
      try { if (log) log.add(JSON.parse(data).params); } catch (_) { /* not ours */ }
      return;
    }
    const el = $("live");
    el.dataset.events = String(Number(el.dataset.events || 0) + 1);
    scheduleRefresh();
  }

  function live(on, why) {
    const el = $("live");
    el.className = "live " + (on ? "on" : "off");
    el.textContent = on ? "live" : "offline";
    el.title = why || "live updates from /events";
  }

  // logPanel is a server's live log: its audit entries and stderr lines
  // as they come, with a filter box.
  function logPanel(server) {
    const el = document.createElement("div");
    el.className = "log";
    el.id = "log";
    el.dataset.server = server;
    const bar = document.createElement("div");
    bar.className = "log-bar";
    const label = document.createElement("label");
    label.className = "sr";
    label.htmlFor = "log-filter";
    label.textContent = "Filter the log";
    const input = document.createElement("input");
    input.type = "search";
    input.id = "log-filter";
    input.placeholder = "Filter: text, tool, identity, stderr, audit, denied…";
    const count = document.createElement("span");
    count.className = "count";
    count.setAttribute("aria-live", "polite");
    bar.append(label, input, count);
    const list = document.createElement("ol");
    list.className = "log-lines";
    list.id = "log-lines";
    list.setAttribute("aria-label", "Log of " + server);
    el.append(bar, list);
    const MAX = 1000;
    let n = 0;

    function matches(li) {
      const q = input.value.trim().toLowerCase();
      return !q || q.split(/\s+/).every((w) => li.dataset.text.includes(w));
    }
    function counted() {
      const shown = list.querySelectorAll("li:not([hidden])").length;
      count.textContent = input.value.trim() ? shown + " of " + n + " lines" : n + " lines";
    }
    input.addEventListener("input", () => {
      for (const li of list.children) li.hidden = !matches(li);
      counted();
    });
    counted();

    function add(l) {
      if (!l || l.server !== server) return;
      const li = document.createElement("li");
      const t = document.createElement("span");
      t.className = "t";
      t.textContent = l.at ? new Date(l.at).toLocaleTimeString() : "";
      const k = document.createElement("span");
      k.className = "k k-" + l.kind;
      k.textContent = l.kind;
      const x = document.createElement("span");
      x.className = "x";
      li.dataset.kind = l.kind;
      if (l.kind === "audit" && l.audit) {
        const a = l.audit;
        const parts = [a.identity, a.action, a.tool, a.allowed ? (a.outcome || "allowed") : "denied",
          a.rule ? "rule " + a.rule : "", a.reason, a.duration_ms ? a.duration_ms.toFixed(1) + " ms" : ""];
        x.textContent = parts.filter(Boolean).join(" · ");
        if (!a.allowed) li.classList.add("denied");
        else if (a.outcome && a.outcome !== "ok") li.classList.add("failed");
      } else {
        x.textContent = l.text || "";
      }
      li.append(t, k, x);
      li.dataset.text = (l.kind + " " + x.textContent + (li.classList.contains("denied") ? " denied" : "")).toLowerCase();
      li.hidden = !matches(li);
      const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
      list.appendChild(li);
      n++;
      while (list.children.length > MAX) { list.removeChild(list.firstChild); n--; }
      if (atEnd) list.scrollTop = list.scrollHeight;
      counted();
    }
    function clear() { list.textContent = ""; n = 0; counted(); }
    return { el, add, clear };
  }

  // act runs an action (approve, reject, disconnect) on a server and
  // shows its answer; the views change when /events says so, and are
  // fetched again at once (a disconnect changes what no event tells).
  const DOING = { approve: "Approving ", reject: "Rejecting ", disconnect: "Disconnecting from " };
  async function act(verb, id) {
    notice(DOING[verb] + id + "…");
    const resp = await call("/ui/api/" + verb + "/" + encodeURIComponent(id), { method: "POST" });
    if (resp.status === 403) {
      notice("Refused: " + await refusal(resp), "warn refusal");
      return;
    }
    if (!(resp.headers.get("Content-Type") || "").startsWith("text/html")) {
      notice("Not done: " + await refusal(resp), "warn");
      return;
    }
    $("notice").innerHTML = await resp.text();
    scheduleRefresh();
  }

  // The header's search box: hangar_find_tools through /mcp where the
  // gateway has it (front_door.discovery: search), else a filter of the
  // caller's tools (/ui/api/tools).
  let searchSeq = 0;
  async function search(q) {
    const box = $("search-results");
    const seq = ++searchSeq;
    if (!q.trim()) { closeSearch(); return; }
    let matches = [], error = "";
    try {
      if (me && me.search) {
        const out = await window.hangarTry.rpc("tools/call", "hangar_find_tools", { query: q, limit: 20 });
        if (out.error) error = out.error;
        else {
          const text = ((out.result.content || [])[0] || {}).text || "{}";
          if (out.result.isError) error = text;
          else matches = (JSON.parse(text).matches || []).map((m) => ({ name: m.name, server: m.server, description: m.description }));
        }
      } else {
        const resp = await call("/ui/api/tools?q=" + encodeURIComponent(q));
        if (!resp.ok) error = await refusal(resp);
        else matches = (await resp.json()).matches || [];
      }
    } catch (e) {
      if (e.message === "unauthenticated") return;
      error = e.message;
    }
    if (seq !== searchSeq) return;
    box.textContent = "";
    const head = document.createElement("div");
    head.className = "m-head";
    head.textContent = error ? "Search failed: " + error :
      (matches.length ? matches.length + " tool" + (matches.length > 1 ? "s" : "") : "No tool matches") +
      (me && me.search ? " (hangar_find_tools)" : " (filter: the gateway has no search index)");
    box.appendChild(head);
    const ul = document.createElement("ul");
    for (const m of matches) {
      const li = document.createElement("li");
      li.dataset.server = m.server;
      const main = document.createElement("div");
      main.className = "m-main";
      const name = document.createElement("a");
      name.className = "m-name";
      name.href = "#server/" + encodeURIComponent(m.server);
      name.textContent = (m.name || m.tool) + " · " + m.server;
      const desc = document.createElement("div");
      desc.className = "m-desc";
      desc.textContent = m.description || "";
      main.append(name, desc);
      const b = document.createElement("button");
      b.type = "button";
      b.className = "small";
      b.textContent = "Try";
      b.dataset.try = "";
      b.dataset.server = m.server;
      if (m.tool) b.dataset.tool = m.tool; else b.dataset.callable = m.name;
      b.setAttribute("aria-label", "Try " + (m.name || m.tool));
      li.append(main, b);
      ul.appendChild(li);
    }
    box.appendChild(ul);
    box.hidden = false;
    $("search-q").setAttribute("aria-expanded", "true");
  }

  function closeSearch() {
    $("search-results").hidden = true;
    $("search-q").setAttribute("aria-expanded", "false");
  }

  function showLogin(why) {
    if (events) events.abort();
    events = null;
    live(false, "signed out");
    clearInterval(trafficTimer);
    $("login").hidden = false;
    $("login-why").textContent = why || "";
    $("login-cancel").hidden = !me;
    $("signout").hidden = true;
    $("signin").hidden = true;
    $("view").textContent = "";
    $("token").focus();
  }

  // start asks the gateway who we are; a 401 brings up the token box.
  async function start() {
    let resp;
    try {
      resp = await call("/ui/api/me");
    } catch (_) { return; }
    if (!resp.ok) {
      const why = await refusal(resp);
      showLogin("This credential cannot read the dashboard: " + why);
      return;
    }
    me = await resp.json();
    $("login").hidden = true;
    $("signout").hidden = !token();
    $("signin").hidden = !!token();
    const who = $("who");
    who.textContent = "";
    const b = document.createElement("b");
    b.textContent = me.name;
    who.append(b, " · " + (me.scopes || []).map((s) => s.replace("hangar:", "")).join(", ") +
      ((me.servers || []).length ? " · " + me.servers.join(", ") : ""));
    who.title = me.kind + ": " + (me.scopes || []).join(", ");
    who.hidden = false;
    $("search").hidden = false;
    $("search-q").placeholder = me.search ? "Find tools (hangar_find_tools)…" : "Filter tools…";
    startTrafficTimer();
    await show();
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const p of JSON.parse($("view").dataset.pages)) PAGES[p.name] = p;
    takeTokenFromLink();
    $("login").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const v = $("token").value.trim();
      $("token").value = "";
      if (!v) return;
      sessionStorage.setItem(KEY, v);
      notice("");
      following = null;
      start();
    });
    $("login-cancel").addEventListener("click", () => { start(); });
    $("signin").addEventListener("click", () => showLogin("Sign in with a token to act as someone other than " + (me ? me.name : "you") + "."));
    $("signout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      following = null;
      start();
    });
    let debounce = 0;
    $("search").addEventListener("submit", (ev) => { ev.preventDefault(); clearTimeout(debounce); search($("search-q").value); });
    $("search-q").addEventListener("input", () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => search($("search-q").value), 250);
    });
    document.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && !$("search-results").hidden) { closeSearch(); $("search-q").focus(); }
      if (ev.key === "/" && document.activeElement === document.body && !$("search").hidden) { ev.preventDefault(); $("search-q").focus(); }
    });
    document.addEventListener("click", (ev) => {
      const a = ev.target.closest("button[data-approve]");
      if (a) act("approve", a.dataset.approve).catch(() => {});
      const r = ev.target.closest("button[data-reject]");
      if (r) act("reject", r.dataset.reject).catch(() => {});
      const c = ev.target.closest("button[data-disconnect]");
      if (c) act("disconnect", c.dataset.disconnect).catch(() => {});
      if (!ev.target.closest("#search")) closeSearch();
      if (ev.target.closest("#search-results a")) closeSearch();
    });
    window.addEventListener("hashchange", () => {
      if (takeTokenFromLink()) { following = null; start(); }
      else if (me) show();
    });
    start();
  });

  // What try.js shares.
  window.hangarUI = { headers, refusal, call, showLogin, token, sseEvents };
})();
