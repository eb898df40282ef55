// hangar dashboard. The token lives in this tab's sessionStorage and is
// only ever sent as an Authorization header: never in a URL or a cookie.
// Every view is HTML rendered (and escaped) by the gateway; this script
// only fetches it with the header, routes on the URL fragment and
// refreshes the view when /events reports a change.
"use strict";
(function () {
  const KEY = "hangar.token";
  const $ = (id) => document.getElementById(id);
  let events = null; // the AbortController of the /events reader
  let pending = 0;   // a refresh is scheduled

  // A login link /ui/#token=… brings the token in the fragment, which no
  // request carries; it is moved to sessionStorage and removed from the
  // address bar and the history.
  function takeTokenFromLink() {
    const h = location.hash;
    if (!h.startsWith("#token=")) return;
    const tok = decodeURIComponent(h.slice("#token=".length));
    if (tok) sessionStorage.setItem(KEY, tok);
    history.replaceState(null, "", location.pathname + location.search + "#servers");
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

  async function call(path, opts) {
    const o = opts || {};
    o.headers = Object.assign({ "Authorization": "Bearer " + token() }, o.headers || {});
    o.cache = "no-store";
    o.credentials = "omit";
    const resp = await fetch(path, o);
    if (resp.status === 401) {
      sessionStorage.removeItem(KEY);
      notice("The token was refused: " + await refusal(resp), "warn");
      showLogin();
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
    el.innerHTML = await resp.text();
  }

  function section(title, id) {
    const s = document.createElement("section");
    const h = document.createElement("h2");
    h.textContent = title;
    const d = document.createElement("div");
    d.id = id;
    s.append(h, d);
    return s;
  }

  // route is the current view: its fragments, by element id.
  function route() {
    const h = location.hash.replace(/^#/, "") || "servers";
    if (h.startsWith("server/")) {
      const id = decodeURIComponent(h.slice("server/".length));
      return { name: "server", parts: [["Server", "frag-server", "/ui/api/server/" + encodeURIComponent(id)]] };
    }
    switch (h) {
      case "pending": return { name: h, parts: [["Pending discoveries and quarantine", "frag-pending", "/ui/api/pending"]] };
      case "installs": return { name: h, parts: [["Installed servers", "frag-installs", "/ui/api/installs"]] };
      case "refusals": return { name: h, parts: [["Recent refusals", "frag-refusals", "/ui/api/refusals"]] };
      default: return { name: "servers", parts: [
        ["Waiting for approval", "frag-pending", "/ui/api/pending"],
        ["Servers", "frag-servers", "/ui/api/servers"]] };
    }
  }

  async function show() {
    const r = route();
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("active", a.dataset.view === r.name);
    }
    const view = $("view");
    view.textContent = "";
    for (const [title, id] of r.parts) view.appendChild(section(title, id));
    await refresh();
  }

  async function refresh() {
    const r = route();
    await Promise.all(r.parts.map(([, id, path]) => {
      const el = $(id);
      return el ? fill(el, path).catch(() => {}) : null;
    }));
  }

  function scheduleRefresh() {
    if (pending) return;
    pending = setTimeout(() => { pending = 0; refresh(); }, 150);
  }

  // readEvents reads /events with the header (EventSource cannot send
  // it) and refreshes the view on every event; it reconnects after a
  // drop, more slowly each time, and stops on a refusal.
  async function readEvents() {
    let delay = 1000;
    for (;;) {
      const ctl = new AbortController();
      events = ctl;
      try {
        const resp = await call("/events", { signal: ctl.signal, headers: { "Accept": "text/event-stream" } });
        if (!resp.ok) {
          live(false, "no live updates: " + await refusal(resp));
          return;
        }
        live(true);
        delay = 1000;
        const reader = resp.body.getReader();
        const dec = new TextDecoder();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += dec.decode(value, { stream: true });
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            if (/^data:/m.test(block)) {
              const el = $("live");
              el.dataset.events = String(Number(el.dataset.events || 0) + 1);
              scheduleRefresh();
            }
          }
        }
      } catch (e) {
        if (ctl.signal.aborted || e.message === "unauthenticated") return;
      }
      live(false);
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 30000);
      scheduleRefresh(); // what changed while the stream was down
    }
  }

  function live(on, why) {
    const el = $("live");
    el.className = "live " + (on ? "on" : "off");
    el.textContent = on ? "live" : "offline";
    el.title = why || "live updates from /events";
  }

  // act runs an action (approve, reject) on a server and shows its
  // answer; the views change when /events says so.
  async function act(verb, id) {
    notice((verb === "reject" ? "Rejecting " : "Approving ") + id + "…");
    const resp = await call("/ui/api/" + verb + "/" + encodeURIComponent(id), { method: "POST" });
    if (resp.status === 403) {
      notice("Refused: " + await refusal(resp), "warn refusal");
      return;
    }
    if (!(resp.headers.get("Content-Type") || "").startsWith("text/html")) {
      notice("Not done: " + await refusal(resp), "warn");
      return;
    }
    const box = $("notice");
    box.innerHTML = await resp.text();
  }

  function showLogin() {
    if (events) events.abort();
    $("login").hidden = false;
    $("signout").hidden = true;
    $("view").textContent = "";
  }

  function start() {
    $("login").hidden = true;
    $("signout").hidden = false;
    show();
    readEvents();
  }

  document.addEventListener("DOMContentLoaded", () => {
    takeTokenFromLink();
    $("login").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const v = $("token").value.trim();
      $("token").value = "";
      if (!v) return;
      sessionStorage.setItem(KEY, v);
      notice("");
      start();
    });
    $("signout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      showLogin();
    });
    document.addEventListener("click", (ev) => {
      const a = ev.target.closest("button[data-approve]");
      if (a) act("approve", a.dataset.approve).catch(() => {});
      const r = ev.target.closest("button[data-reject]");
      if (r) act("reject", r.dataset.reject).catch(() => {});
    });
    window.addEventListener("hashchange", () => {
      takeTokenFromLink();
      if (token()) show();
    });
    if (token()) start(); else showLogin();
  });
})();
