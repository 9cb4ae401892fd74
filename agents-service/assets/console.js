// The web console's script. It builds every node with `el` (text goes in through
// `textContent`, never `innerHTML`), talks only to this service's `/v1` API, and sends
// `X-Agents-Console: 1` with every request, which the service requires of a
// cookie-authenticated request that changes something.
"use strict";

(function () {
  const HEADER = { "x-agents-console": "1" };

  /** An element with attributes and children; strings become text nodes. */
  // What a record that keeps its arguments' names and keyed digests, not their values, says.
  const VALUES_OMITTED = "values omitted";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }

  /** A JSON request to the API; a refusal throws its message. */
  async function api(path, options) {
    const opts = Object.assign({ credentials: "same-origin" }, options || {});
    opts.headers = Object.assign({}, HEADER, opts.body ? { "content-type": "application/json" } : {}, opts.headers || {});
    const r = await fetch(path, opts);
    let body = null;
    try { body = await r.json(); } catch (_) { body = null; }
    if (!r.ok) {
      const m = body && body.error ? body.error.message + " (" + body.error.code + ")" : "HTTP " + r.status;
      const err = new Error(m);
      err.code = body && body.error ? body.error.code : null;
      err.body = body;
      throw err;
    }
    return body;
  }

  function show(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  function short(hash) {
    return hash ? String(hash).slice(0, 12) + "…" : "";
  }

  // --- sign in / out ------------------------------------------------------------------

  function loginPage() {
    const form = document.getElementById("login-form");
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      let request;
      if (form.dataset.login === "token") {
        // Sent once, in the header the service's authenticator reads; never stored.
        const token = document.getElementById("token").value.trim();
        request = { method: "POST", body: "{}", headers: { authorization: "Bearer " + token } };
      } else {
        const chosen = form.querySelector("input[name=person]:checked");
        request = { method: "POST", body: JSON.stringify({ person: Number(chosen.value) }) };
      }
      try {
        const r = await api("/console/login", request);
        sessionStorage.clear();
        location.assign(r.to);
      } catch (err) {
        document.getElementById("login-error").textContent = err.message;
      }
    });
  }

  function logoutButton() {
    const b = document.getElementById("logout");
    if (!b) return;
    b.addEventListener("click", async () => {
      const r = await api("/console/logout", { method: "POST", body: "{}" });
      sessionStorage.clear();
      location.assign(r.to);
    });
  }

  // --- the chat -----------------------------------------------------------------------

  function appPage() {
    const log = document.getElementById("log");
    const form = document.getElementById("chat-form");
    const input = document.getElementById("message");
    const agent = document.getElementById("agent");
    const decisions = document.getElementById("decisions");
    const noDecisions = document.getElementById("no-decisions");
    const auditLive = document.getElementById("audit-live");
    const auditRun = document.getElementById("audit-run");
    // Per tab: the chat's session, the current run and the last event seen of it.
    if (!sessionStorage.getItem("session")) {
      // `getRandomValues` also works outside a secure context (unlike `randomUUID`).
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      sessionStorage.setItem("session", "console-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""));
    }
    let source = null;
    let bubble = null;
    let poll = null;
    // The node runs of the current run, when it is a composite's run tree: their records are
    // the tree's too.
    const nodeRuns = new Set();

    function say(cls, text) {
      const li = el("li", { class: cls, text });
      log.append(li);
      li.scrollIntoView({ block: "nearest" });
      return li;
    }

    function onEvent(kind, data) {
      switch (kind) {
        case "token":
          if (!bubble) bubble = say("assistant", "");
          bubble.textContent += data.text;
          break;
        case "message":
          if (!bubble) bubble = say("assistant", "");
          bubble.textContent = data.text;
          bubble = null;
          break;
        case "tool_call": {
          bubble = null;
          const details = el("details", {}, el("summary", { text: "Tool call: " + data.tool }),
            el("pre", { text: JSON.stringify(data.args, null, 2) }));
          log.append(el("li", { class: "tool", "data-call": data.call_id }, details));
          break;
        }
        case "confirm_required":
          say("note", "Waiting for your decision: " + data.title);
          refreshDecisions();
          break;
        case "tool_result":
          say("tool", data.tool + ": " + data.status);
          refreshDecisions();
          break;
        case "tool_denied":
          say("tool", data.tool + " denied: " + data.reason);
          break;
        case "handoff": {
          const r = data.record || {};
          log.append(el("li", { class: "handoff" }, el("strong", { text: "Handed over: " + r.tool }),
            el("div", { text: r.description || "" })));
          break;
        }
        case "done":
          say("note", "Run " + data.status + ".");
          endRun();
          break;
        case "error":
          say("note error", data.message);
          break;
        case "budget_threshold":
          say("note", "Budget: the " + data.scope + " cap is " + Math.round(data.fraction * 100) + " % spent.");
          break;
        case "skill_chosen":
          say("note", "Working within skill " + data.skill + " (chosen by the " + data.by + ").");
          break;
        case "gap":
          say("note", "Some events were missed; the audit records follow.");
          break;
        case "knowledge_loaded": {
          // Which passages of the agent's documents this turn gave the model (ids, no text).
          const items = (data.passages || []).map((p) => el("li", {
            text: p.source + (p.path ? "/" + p.path : "") + " lines " + (p.lines || []).join("–") + " (" + p.chunk + ")",
          }));
          log.append(el("li", { class: "knowledge" }, el("details", {},
            el("summary", { text: "Passages used: " + items.length }), el("ul", {}, ...items))));
          break;
        }
        case "end":
        case "idle":
          endRun();
          break;
        case "node":
          onNode(data);
          break;
        default:
          break;
      }
      refreshAudit();
    }

    // An event of a node of a composite's run tree: the node's own event, shown with the
    // node's path. A node's `done` ends the node, not the tree (the tree's own `done` does).
    function onNode(data) {
      const inner = data.event || {};
      const path = String(data.node || "");
      if (data.node_run_id) nodeRuns.add(String(data.node_run_id));
      switch (inner.type) {
        case "confirm_required":
          say("note", "Waiting for your decision: " + inner.title + " (node " + path + ")");
          refreshDecisions();
          break;
        case "tool_call":
          say("tool", path + ": tool call " + inner.tool);
          break;
        case "tool_result":
          say("tool", path + ": " + inner.tool + ": " + inner.status);
          refreshDecisions();
          break;
        case "tool_denied":
          say("tool", path + ": " + inner.tool + " denied: " + inner.reason);
          break;
        case "message":
          say("assistant node", path + ": " + inner.text);
          break;
        case "error":
          say("note error", path + ": " + inner.message);
          break;
        case "done":
          say("note", "Node " + path + " " + inner.status + ".");
          break;
        default:
          break;
      }
    }

    function endRun() {
      if (source) { source.close(); source = null; }
      if (poll) { clearInterval(poll); poll = null; }
      refreshAudit();
      refreshDecisions();
    }

    // From the run's first event the service still holds (after a reload too, so the page
    // shows the whole run); the browser resumes a dropped stream with `Last-Event-ID` itself.
    function follow(runId) {
      if (source) source.close();
      source = new EventSource("/v1/runs/" + encodeURIComponent(runId) + "/events");
      const kinds = ["status", "token", "tool_call", "confirm_required", "tool_result", "tool_denied", "handoff",
        "message", "done", "error", "gap", "end", "idle", "record", "budget_threshold", "skill_chosen", "knowledge_loaded",
        "node"];
      for (const kind of kinds) {
        source.addEventListener(kind, (e) => {
          let data = {};
          try { data = JSON.parse(e.data); } catch (_) { data = {}; }
          onEvent(kind, data);
        });
      }
      source.onerror = () => { if (source && source.readyState === EventSource.CLOSED) endRun(); };
      auditRun.textContent = "run " + runId;
      if (!poll) poll = setInterval(refreshAudit, 1500);
      refreshAudit();
    }

    async function refreshAudit() {
      const runId = sessionStorage.getItem("run");
      if (!runId) return;
      try {
        const pages = await Promise.all([runId, ...nodeRuns].map((id) =>
          api("/v1/audit?run=" + encodeURIComponent(id) + "&limit=200")));
        const records = pages.flatMap((p) => p.records).sort((a, b) => a.seq - b.seq);
        const omitted = new Set(pages.flatMap((p) => p.values_omitted || []));
        auditLive.replaceChildren(...records.map((rec) => el("li", { "data-status": rec.status },
          el("span", { class: "status st-" + rec.status, text: rec.status }), " ",
          el("span", { text: rec.tool || "run" }), " ",
          rec.node && rec.node.parent_run_id ? el("span", { class: "hint node-path", text: rec.node.path }) : null, " ",
          omitted.has(rec.seq) ? el("span", { class: "hint omitted", text: VALUES_OMITTED }) : null, " ",
          el("span", { class: "mono", title: "manifest " + rec.manifest_sha256, text: "manifest " + short(rec.manifest_sha256) }),
          rec.reason ? el("div", { class: "hint", text: rec.reason }) : null)));
      } catch (err) {
        auditLive.replaceChildren(el("li", { class: "error", text: err.message }));
      }
    }

    function card(d) {
      const id = "card-" + d.call_id;
      const args = d.decider_arguments && typeof d.decider_arguments === "object" ? d.decider_arguments : {};
      // Where each argument's values came from (the runtime's origins): an argument with a
      // value from content the user did not write is marked; the card's warning says it in
      // the runtime's own words (`why`).
      const origins = d.origins && Array.isArray(d.origins.args) ? d.origins.args : [];
      const untrusted = new Set(["tool_result", "imported", "document"]);
      const flagged = (k) => origins.some((o) => untrusted.has(o.origin && o.origin.from) &&
        (o.pointer === "/" + k || o.pointer.startsWith("/" + k + "/")));
      const rows = [];
      for (const [k, v] of Object.entries(args)) {
        const mark = flagged(k) ? { class: "flagged", "data-flagged": "true" } : {};
        rows.push(el("dt", { text: k, ...mark }), el("dd", { text: show(v), ...mark }));
      }
      const warning = d.why
        ? el("p", { class: "warning", role: "note", id: id + "-warning", text: "Check before deciding: " + d.why + "." })
        : null;
      const reason = el("input", { id: id + "-reason", "aria-label": "Reason for rejecting " + d.title, placeholder: "Reason (optional)" });
      const change = el("input", { id: id + "-change", "aria-label": "Change to ask for instead of " + d.title,
        placeholder: "e.g. five days, not seven" });
      const status = el("p", { class: "error", role: "alert" });
      const approve = el("button", { type: "button", class: "approve", text: "Approve" });
      const reject = el("button", { type: "button", class: "danger reject", text: "Reject" });
      const ask = el("button", { type: "button", class: "change", text: "Ask for this change" });
      const buttons = [approve, reject, ask];
      // A proposal the application asks a second confirmation of: the first approval runs
      // nothing; the service answers with the warning, shown in a second dialog whose one
      // button affirms it, and only that approval (carrying the warning's digest) runs it.
      const secondNote = d.acknowledge
        ? el("p", { class: "hint second-note", text: "Needs a second confirmation: approving once runs nothing." })
        : null;
      const secondBox = el("div", { class: "second-confirmation", hidden: true });
      function askSecond(ack) {
        const ok = el("button", { type: "button", class: "acknowledge", text: ack.phrase });
        ok.addEventListener("click", () => decide({ verdict: "approve", acknowledge: ack.digest }));
        buttons.push(ok);
        secondBox.replaceChildren(
          el("div", { role: "alertdialog", "aria-modal": "false", "aria-labelledby": id + "-second-h", "aria-describedby": id + "-second-w" },
            el("h4", { id: id + "-second-h", text: "Second confirmation" }),
            el("p", { class: "warning", id: id + "-second-w",
              text: "You approved once; nothing ran. Check before it runs: " + ack.warning + "." }),
            el("div", { class: "buttons" }, ok)));
        secondBox.hidden = false;
        approve.hidden = true;
        ok.focus();
      }
      async function decide(body) {
        buttons.forEach((b) => { b.disabled = true; });
        try {
          await api("/v1/decisions/" + encodeURIComponent(d.call_id), { method: "POST", body: JSON.stringify(body) });
          node.remove();
          refreshDecisions();
          refreshAudit();
          return true;
        } catch (err) {
          buttons.forEach((b) => { b.disabled = false; });
          if (err.code === "acknowledgement_required" && err.body && err.body.acknowledgement) {
            status.textContent = "";
            askSecond(err.body.acknowledgement);
            refreshAudit();
            return false;
          }
          status.textContent = err.message;
          return false;
        }
      }
      approve.addEventListener("click", () => decide({ verdict: "approve" }));
      reject.addEventListener("click", () => {
        const text = reason.value.trim();
        decide(text ? { verdict: "reject", reason: text } : { verdict: "reject" });
      });
      // "Yes, but five days": this proposal is rejected with the person's words as its reason,
      // and the words go to the agent as their next message in the same conversation. What
      // comes back is a new proposal with its own call and its own decision; nothing approves
      // the old one.
      ask.addEventListener("click", async () => {
        const text = change.value.trim();
        if (!text) { status.textContent = "Say what to change."; change.focus(); return; }
        if (!(await decide({ verdict: "reject", reason: "change requested: " + text }))) return;
        await runEnded(d.run_id);
        say("user", text);
        await startRun(d.agent, text, d.session_id || sessionStorage.getItem("session"));
      });
      const node = el("article", { class: "card", id, "aria-labelledby": id + "-h", "data-call": d.call_id, "data-tool": d.tool },
        el("h3", { id: id + "-h", text: d.title }),
        el("span", { class: "risk risk-" + d.risk, text: "risk: " + d.risk }), " ",
        el("code", { text: d.tool }),
        warning,
        secondNote,
        el("dl", {}, ...rows),
        d.node ? el("p", { class: "node-path", "data-node": d.node, text: "Node " + d.node + " of a composite's run" }) : null,
        el("p", { class: "hint", text: "Proposed " + d.proposed_at + " by " + d.agent }),
        secondBox,
        el("div", { class: "buttons" }, approve, reason, reject),
        // A node's agent is not asked on its own: a change is asked of the whole composite.
        d.node ? null : el("div", { class: "buttons" }, change, ask),
        status);
      return node;
    }

    async function refreshDecisions() {
      try {
        const r = await api("/v1/decisions");
        decisions.replaceChildren(...r.decisions.map(card));
        noDecisions.hidden = r.decisions.length > 0;
        // A proposal of a run this tab has not followed (another tab, before a restart).
        const mine = sessionStorage.getItem("run");
        const other = r.decisions.find((d) => d.run_id !== mine);
        if (!mine && other) {
          sessionStorage.setItem("run", other.run_id);
          refreshAudit();
        }
      } catch (err) {
        decisions.replaceChildren(el("p", { class: "error", text: err.message }));
      }
    }

    /** Waits (at most about 30 s) until run `runId` no longer runs, or is unknown here. */
    async function runEnded(runId) {
      for (let i = 0; i < 150; i++) {
        try {
          const r = await api("/v1/runs/" + encodeURIComponent(runId));
          if (r.status !== "running") return;
        } catch (_) {
          return;
        }
        await new Promise((done) => setTimeout(done, 200));
      }
    }

    async function startRun(agentName, text, session) {
      bubble = null;
      try {
        const r = await api("/v1/runs", { method: "POST", body: JSON.stringify({
          agent: agentName, input: text, session_id: session }) });
        sessionStorage.setItem("run", r.run_id);
        nodeRuns.clear();
        auditLive.replaceChildren();
        follow(r.run_id);
      } catch (err) {
        say("note error", err.message);
      }
    }

    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = "";
      say("user", text);
      await startRun(agent.value, text, sessionStorage.getItem("session"));
    });

    // After a reload: the decisions waiting, and the current run's stream from where it was.
    refreshDecisions();
    const current = sessionStorage.getItem("run");
    if (current) follow(current);
  }

  // --- the reviewers' audit view ------------------------------------------------------

  function auditPage() {
    const form = document.getElementById("search");
    const tbody = document.querySelector("#records tbody");
    const more = document.getElementById("more");
    const result = document.getElementById("search-result");
    let found = [];
    let next = null;

    function query(after) {
      const params = new URLSearchParams();
      for (const [k, v] of new FormData(form).entries()) {
        if (String(v).trim()) params.set(k, String(v).trim());
      }
      if (after !== null && after !== undefined) params.set("after", String(after));
      params.set("limit", "500");
      return "/v1/audit?" + params.toString();
    }

    // Only the latest search may fill the table: an earlier answer that arrives late (the
    // unfiltered list asked for on load, say) must not replace or join a later one's rows.
    let latest = 0;
    async function search(after) {
      const asked = ++latest;
      const url = query(after);
      tbody.setAttribute("aria-busy", "true");
      try {
        const r = await api(url);
        if (asked !== latest) return;
        if (after === null) { found = []; tbody.replaceChildren(); }
        found.push(...r.records);
        const omitted = new Set(r.values_omitted || []);
        for (const rec of r.records) {
          tbody.append(el("tr", { "data-status": rec.status },
            el("td", { class: "nowrap", text: rec.seq }), el("td", { text: rec.ts }), el("td", { text: rec.user_id }),
            el("td", { text: rec.tool || "" }), el("td", { class: "status st-" + rec.status, text: rec.status }),
            el("td", {}, omitted.has(rec.seq) ? el("span", { class: "hint omitted", text: VALUES_OMITTED + " " }) : null,
              rec.reason || ""), el("td", { class: "mono", text: rec.run_id }),
            el("td", { class: "mono", title: rec.manifest_sha256, text: short(rec.manifest_sha256) })));
        }
        next = r.next_after;
        more.hidden = next === null || next === undefined;
        result.textContent = found.length + " record(s)";
        tbody.dataset.query = url;
        tbody.setAttribute("aria-busy", "false");
      } catch (err) {
        if (asked !== latest) return;
        result.textContent = err.message;
        tbody.setAttribute("aria-busy", "false");
      }
    }

    form.addEventListener("submit", (e) => { e.preventDefault(); search(null); });
    more.addEventListener("click", () => search(next));
    document.getElementById("verify").addEventListener("click", async () => {
      const out = document.getElementById("verify-result");
      try {
        const v = await api("/v1/audit/verify");
        const severe = v.severe || { total: 0, by_kind: {} };
        const kinds = Object.entries(severe.by_kind).map(([k, n]) => k + ": " + n).join(", ");
        out.replaceChildren(
          v.ok
            ? el("span", { class: "ok", text: "Chain verified: " + v.records + " record(s) of " + v.org + (v.head ? ", latest #" + v.head.seq + " hash " + short(v.head.hash) : "") + ". " + (v.guarantee || "") })
            : el("span", { class: "broken", text: "Chain broken (" + v.kind + "): " + v.message }),
          el("span", {
            id: "severe-result",
            class: severe.total ? "broken" : "ok",
            text: " Severe failures: " + severe.total + (kinds ? " (" + kinds + ")" : "") + ".",
          }));
      } catch (err) {
        out.textContent = err.message;
      }
    });
    document.getElementById("export").addEventListener("click", () => {
      const text = found.map((r) => JSON.stringify(r)).join("\n") + (found.length ? "\n" : "");
      const url = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
      const a = el("a", { href: url, download: "audit.jsonl" });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    });
    search(null);
  }

  document.addEventListener("DOMContentLoaded", () => {
    logoutButton();
    const page = document.body.dataset.page;
    if (page === "login") loginPage();
    else if (page === "app") appPage();
    else if (page === "audit") auditPage();
  });
})();
