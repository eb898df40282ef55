// hangar dashboard: Try. The form (rendered by the gateway from the tool's
// input schema, the prompt's arguments or the template's variables) is
// read into arguments here and sent to /mcp as any 2026-07-28 client
// sends a request: the MCP-Protocol-Version, Mcp-Method and Mcp-Name
// headers, _meta's protocol version, and the caller's credentials, so the
// gateway's scopes, servers, policy and audit apply as to every client.
// The answer is shown as a person reads it; whatever the server sent is
// set as textContent, drawn on a canvas (images), or printed as JSON.
"use strict";
(function () {
  const PROTOCOL = "2026-07-28";
  const $ = (id) => document.getElementById(id);
  const ui = () => window.hangarUI;
  let seq = 0;
  let running = null; // the AbortController of the call under way

  // headerValue is v as an HTTP header carries it: as is when it is
  // plain ASCII, else base64 in the =?base64?…?= wrapper (SEP-2243).
  function headerValue(v) {
    const plain = /^[\x20-\x7e]*$/.test(v) && !/^[ \t]|[ \t]$/.test(v) && !/^=\?base64\?.*\?=$/.test(v);
    if (plain) return v;
    const bytes = new TextEncoder().encode(v);
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    return "=?base64?" + btoa(bin) + "?=";
  }

  // rpc sends one request to /mcp and reads its answer, a JSON body or an
  // event stream; progress notifications go to onProgress as they come.
  // It answers {result}, or {error, code} for a JSON-RPC error or a
  // refused request.
  async function rpc(method, name, args, onProgress, signal) {
    const id = ++seq;
    const params = method === "resources/read" ? { uri: name } : { name: name, arguments: args || {} };
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": PROTOCOL,
      "io.modelcontextprotocol/clientCapabilities": {},
      "io.modelcontextprotocol/clientInfo": { name: "hangar-dashboard", version: "1" },
    };
    if (onProgress) params._meta.progressToken = "dashboard-" + id;
    const resp = await fetch("/mcp", {
      method: "POST", cache: "no-store", credentials: "omit", signal: signal,
      headers: ui().headers({
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL, "Mcp-Method": method, "Mcp-Name": headerValue(name),
      }),
      body: JSON.stringify({ jsonrpc: "2.0", id: id, method: method, params: params }),
    });
    const type = resp.headers.get("Content-Type") || "";
    let answer = null;
    if (type.startsWith("text/event-stream")) {
      await ui().sseEvents(resp, (_, data) => {
        const msg = exact(data);
        if (msg.method === "notifications/progress" && onProgress) onProgress(msg.params || {});
        else if (msg.id === id) answer = msg;
      });
    } else if (type.includes("json")) {
      answer = exact(await resp.text());
    } else {
      return { error: await ui().refusal(resp), code: resp.status };
    }
    if (!answer) return { error: "the answer ended without a result (HTTP " + resp.status + ")" };
    if (answer.error) return { error: answer.error.message, code: answer.error.code, data: answer.error.data };
    return { result: answer.result };
  }

  // open fetches the form for a [data-try] button and shows the dialog.
  async function open(b) {
    const q = new URLSearchParams();
    for (const k of ["server", "tool", "prompt", "template", "resource", "callable"]) {
      if (b.dataset[k] !== undefined && k !== "try") q.set(k, b.dataset[k]);
    }
    const dlg = $("try");
    const body = $("try-body");
    body.textContent = "Loading…";
    result().hidden = true;
    $("try-title").textContent = b.getAttribute("aria-label") || "Try";
    if (!dlg.open) dlg.showModal();
    const resp = await ui().call("/ui/api/try?" + q.toString());
    if (!resp.ok) {
      body.textContent = "Not shown: " + await ui().refusal(resp);
      return;
    }
    body.innerHTML = await resp.text(); // the gateway's escaped HTML
    const form = $("try-form");
    if (!form) return;
    if (form.hasAttribute("data-raw-only")) setRaw(form, true);
    const first = form.querySelector(".fields input, .fields select, .fields textarea") || $("try-run");
    if (first) first.focus();
    if (b.hasAttribute("data-autorun")) form.requestSubmit();
  }

  function result() { return $("try-result"); }

  // fieldValue is one input's argument: undefined leaves it out.
  function fieldValue(el) {
    const v = el.value;
    switch (el.dataset.type) {
      case "string":
        return v === "" && !el.required ? undefined : v;
      case "number":
      case "integer": {
        if (v === "") return undefined;
        const n = Number(v);
        if (!Number.isFinite(n) || (el.dataset.type === "integer" && !Number.isInteger(n))) {
          throw new Error(el.dataset.name + ": " + JSON.stringify(v) + " is not " + (el.dataset.type === "integer" ? "a whole number" : "a number"));
        }
        return n;
      }
      case "boolean":
      case "enum":
        return v === "" ? undefined : JSON.parse(v);
      case "json":
        if (v.trim() === "") return undefined;
        try { return JSON.parse(v); } catch (e) { throw new Error(el.dataset.name + ": not JSON (" + e.message + ")"); }
    }
    return v;
  }

  function formArgs(form) {
    const args = {};
    for (const el of form.querySelectorAll(".fields [data-type]")) {
      const v = fieldValue(el);
      if (v === undefined) {
        if (el.required) throw new Error(el.dataset.name + " is required");
        continue;
      }
      args[el.dataset.name] = v;
    }
    return args;
  }

  function rawArgs(form) {
    const text = form.querySelector("#try-raw").value.trim() || "{}";
    let v;
    try { v = JSON.parse(text); } catch (e) { throw new Error("The arguments are not JSON: " + e.message); }
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("The arguments must be a JSON object");
    return v;
  }

  function isRaw(form) { return !form.querySelector(".raw").hidden; }

  // setRaw switches between the fields and the JSON text, carrying what
  // was typed across.
  function setRaw(form, on) {
    const raw = form.querySelector(".raw");
    const fields = form.querySelector(".fields");
    const btn = form.querySelector("[data-raw]");
    const err = form.querySelector(".form-error");
    err.hidden = true;
    try {
      if (on) {
        form.querySelector("#try-raw").value = JSON.stringify(formArgs(form), null, 2);
      } else {
        const args = rawArgs(form);
        for (const el of form.querySelectorAll(".fields [data-type]")) {
          const v = args[el.dataset.name];
          if (v === undefined) { el.value = ""; continue; }
          el.value = el.dataset.type === "string" ? String(v) :
            el.dataset.type === "json" ? JSON.stringify(v, null, 2) :
            (el.dataset.type === "enum" || el.dataset.type === "boolean") ? JSON.stringify(v) : String(v);
        }
      }
    } catch (e) {
      if (!on) { err.textContent = e.message; err.hidden = false; return; }
    }
    raw.hidden = !on;
    fields.hidden = on;
    if (btn) {
      btn.setAttribute("aria-pressed", on ? "true" : "false");
      btn.textContent = on ? "Form" : "Raw JSON";
    }
  }

  // expand fills a URI template's variables ({x}, {+x}, {?x,y}).
  function expand(template, vars) {
    return template.replace(/\{([+#./;?&]?)([^}]+)\}/g, (_, op, names) => {
      const list = names.split(",").map((n) => n.replace(/[*]$|:\d+$/, ""));
      const enc = (v) => (op === "+" || op === "#") ? encodeURI(String(v)) : encodeURIComponent(String(v));
      const have = list.filter((n) => vars[n] !== undefined && vars[n] !== "");
      if (op === "?" || op === "&") {
        return have.length ? op + have.map((n) => n + "=" + enc(vars[n])).join("&") : "";
      }
      const sep = op === "." ? "." : op === "/" ? "/" : op === ";" ? ";" : ",";
      const prefix = op === "+" ? "" : op;
      return have.length ? prefix + have.map((n) => enc(vars[n])).join(sep) : "";
    });
  }

  async function run(form) {
    const err = form.querySelector(".form-error");
    err.hidden = true;
    let args;
    try {
      args = isRaw(form) ? rawArgs(form) : formArgs(form);
    } catch (e) {
      err.textContent = e.message;
      err.hidden = false;
      return;
    }
    const kind = form.dataset.kind;
    let method = form.dataset.method, name = form.dataset.call, sent = args;
    if (kind === "template") name = expand(form.dataset.target, args);
    if (form.dataset.via === "hangar_call") {
      sent = { calls: [{ mcp_server: form.dataset.server, tool: form.dataset.target, arguments: args }] };
    }
    if (running) running.abort();
    const ctl = new AbortController();
    running = ctl;
    const out = result();
    out.hidden = false;
    out.className = "result running";
    out.textContent = "";
    const head = el("div", "result-head");
    const status = el("span", "status", "Running…");
    const elapsed = el("span", "elapsed", "");
    head.append(status, elapsed);
    const prog = el("div", "progress");
    prog.hidden = true;
    const bar = document.createElement("progress");
    const steps = document.createElement("ol");
    steps.id = "try-progress";
    prog.append(bar, steps);
    const items = el("div", "items");
    items.id = "try-items";
    out.append(head, prog, items);
    const run = $("try-run");
    run.disabled = true;
    const began = performance.now();
    const tick = setInterval(() => { elapsed.textContent = Math.round(performance.now() - began) + " ms"; }, 100);
    let answer;
    try {
      answer = await rpc(method, name, sent, method === "tools/call" ? (p) => {
        prog.hidden = false;
        if (typeof p.total === "number" && p.total > 0) { bar.max = p.total; bar.value = p.progress || 0; } else bar.removeAttribute("value");
        const li = document.createElement("li");
        const at = el("span", "at", String(p.progress ?? "?") + (p.total ? "/" + p.total : ""));
        li.append(at, p.message ? " " + p.message : "");
        steps.appendChild(li);
      } : null, ctl.signal);
    } catch (e) {
      answer = { error: ctl.signal.aborted ? "cancelled" : e.message };
    } finally {
      clearInterval(tick);
      run.disabled = false;
      if (running === ctl) running = null;
    }
    const ms = Math.round(performance.now() - began);
    elapsed.textContent = ms + " ms";
    out.dataset.ms = String(ms);
    if (answer.error !== undefined) {
      out.className = "result failed";
      // Seed 004's codes: the gateway refused the request.
      const refused = [-32001, -32002, -32003].includes(answer.code);
      status.textContent = (refused ? "Refused by the gateway" : "Failed") + (answer.code ? " (" + answer.code + ")" : "");
      items.appendChild(textItem("Error", answer.error + (answer.data ? "\n" + JSON.stringify(answer.data, null, 2) : ""), "error"));
      return;
    }
    let res = answer.result || {};
    if (form.dataset.via === "hangar_call") res = unwrapBatch(res);
    const failed = res.isError === true;
    out.className = "result " + (failed ? "failed" : "done");
    status.textContent = failed ? "The tool answered an error" : "Done";
    render(kind, res, items, failed);
  }

  // unwrapBatch is the one call's result of a hangar_call answer: its
  // structured content, its one text (or JSON), or its content items.
  function unwrapBatch(res) {
    let one;
    try {
      one = (exact(((res.content || [])[0] || {}).text).results || [])[0];
    } catch (_) {
      return res;
    }
    if (!one) return res;
    if (!one.success) return { isError: true, content: [{ type: "text", text: (one.error_type ? one.error_type + ": " : "") + (one.error || "failed") }] };
    const r = one.result;
    if (Array.isArray(r) && r.every((c) => c && typeof c.type === "string")) return { content: r };
    if (typeof r === "string") return { content: [{ type: "text", text: r }] };
    return { content: [], structuredContent: r };
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function textItem(label, text, cls) {
    const d = el("div", "item " + (cls || ""));
    d.append(el("div", "label", label));
    const pre = el("pre", "", text);
    d.append(pre);
    return d;
  }

  function jsonItem(label, v, cls) { return textItem(label, JSON.stringify(v, null, 2), "json " + (cls || "")); }

  // exact parses JSON keeping numbers a double cannot hold as they were
  // written (JSON.rawJSON): a result's 12345678901234567890123 is shown
  // as sent, not as 1.2345678901234568e+22.
  function exact(text) {
    if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
    return JSON.parse(text, (k, v, ctx) =>
      typeof v === "number" && ctx && typeof ctx.source === "string" && String(v) !== ctx.source ? JSON.rawJSON(ctx.source) : v);
  }

  const IMAGES = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"];

  // imageItem draws base64 image data on a canvas: an <img> would need a
  // data: or blob: source, which the CSP does not allow.
  function imageItem(label, data, mime) {
    const d = el("div", "item image");
    d.append(el("div", "label", label + " · " + mime));
    if (!IMAGES.includes(mime)) {
      d.append(el("div", "box", "(" + mime + ": not drawn)"));
      return d;
    }
    const canvas = document.createElement("canvas");
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", label);
    d.append(canvas);
    try {
      const bin = atob(data);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      createImageBitmap(new Blob([bytes], { type: mime })).then((bmp) => {
        canvas.width = bmp.width;
        canvas.height = bmp.height;
        canvas.getContext("2d").drawImage(bmp, 0, 0);
        canvas.dataset.drawn = bmp.width + "x" + bmp.height;
        if (bmp.width < 64) canvas.classList.add("small-image");
      }).catch((e) => { d.append(el("div", "box", "not drawn: " + e.message)); });
    } catch (e) {
      d.append(el("div", "box", "not drawn: " + e.message));
    }
    return d;
  }

  function linkItem(c) {
    const d = el("div", "item link");
    d.append(el("div", "label", "Resource link"));
    const box = el("div", "box link-card");
    box.append(el("b", "", c.name || c.title || "resource"), el("span", "uri", c.uri || ""));
    if (c.mimeType) box.append(el("span", "tag", c.mimeType));
    if (c.description) box.append(el("div", "sub", c.description));
    d.append(box);
    return d;
  }

  function resourceItem(label, r) {
    if (typeof r.text === "string") return textItem(label + (r.uri ? " · " + r.uri : "") + (r.mimeType ? " · " + r.mimeType : ""), r.text);
    if (typeof r.blob === "string") {
      if (IMAGES.includes(r.mimeType)) return imageItem(label + " · " + (r.uri || ""), r.blob, r.mimeType);
      return textItem(label + " · " + (r.uri || ""), "(" + (r.mimeType || "binary") + ", " + Math.floor(r.blob.length * 3 / 4) + " bytes)");
    }
    return jsonItem(label, r);
  }

  function contentItem(c, i, failed) {
    const label = (failed ? "Error" : "Content") + " " + (i + 1);
    switch (c.type) {
      case "text": return textItem(label + " · text", c.text, failed ? "error" : "text");
      case "image": return imageItem(label + " · image", c.data, c.mimeType);
      case "audio": return textItem(label + " · audio", "(" + c.mimeType + ", " + Math.floor((c.data || "").length * 3 / 4) + " bytes)");
      case "resource_link": return linkItem(c);
      case "resource": return resourceItem(label + " · embedded resource", c.resource || {});
    }
    return jsonItem(label + " · " + c.type, c);
  }

  function render(kind, res, items, failed) {
    if (kind === "prompt") {
      if (res.description) items.append(textItem("Description", res.description));
      (res.messages || []).forEach((m, i) => {
        const c = m.content || {};
        const item = contentItem(c, i, false);
        item.querySelector(".label").textContent = "Message " + (i + 1) + " · " + m.role;
        items.append(item);
      });
      return;
    }
    if (kind === "resource" || kind === "template") {
      (res.contents || []).forEach((r, i) => items.append(resourceItem("Contents " + (i + 1), r)));
      if (!(res.contents || []).length) items.append(textItem("Contents", "(empty)"));
      return;
    }
    (res.content || []).forEach((c, i) => items.append(contentItem(c, i, failed)));
    if (res.structuredContent !== undefined) items.append(jsonItem("Structured content", res.structuredContent, "structured"));
    if (!(res.content || []).length && res.structuredContent === undefined) items.append(jsonItem("Result", res));
  }

  document.addEventListener("DOMContentLoaded", () => {
    const dlg = $("try");
    document.addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-try]");
      if (b) { open(b).catch((e) => { $("try-body").textContent = e.message; }); return; }
      if (ev.target.closest("#try [data-close]")) dlg.close();
      const r = ev.target.closest("#try [data-raw]");
      if (r) setRaw(r.form, r.getAttribute("aria-pressed") !== "true");
    });
    dlg.addEventListener("submit", (ev) => {
      if (ev.target.id !== "try-form") return;
      ev.preventDefault();
      run(ev.target);
    });
    dlg.addEventListener("close", () => { if (running) running.abort(); });
    // A click on the backdrop closes it.
    dlg.addEventListener("click", (ev) => { if (ev.target === dlg) dlg.close(); });
  });

  window.hangarTry = { rpc: (method, name, args) => rpc(method, name, args, null) };
})();
