// The trace viewer of a Weft report. No network, no framework: the page carries
//   #weft-index  [[task id, profile, turns, "mcps", rollouts, passed, reference], ...]
//   #weft-blobs  ["<base64 gzip JSON>", ...]  one per index row, decoded only when opened:
//     {id, objective, profile, mcps, order, nodes:[{id, mcp, task, intent, chain, inputs, checks}],
//      edges:[[source, target, kind, fields]], bindings:[{name, entity, value, refs}], final,
//      rollouts:[{id, view, harness, model, ref, reward, passed, final, error, retries,
//                 discarded, messages:[{r, c, tc:[[id, name, args]], id}],
//                 ledger:[{mcp, seq, tool, args, err, kind, mut, sv, call, res}],
//                 segments:[{node, start, end, attempts, ledger, outcome, diff}]}]}
//   outcomes are [[check id, kind, passed, reason], ...].
//   diff (null in traces without one): {since, trunc, max, err, mcps:{mcp:{
//     tables:{table:{ins:[[key, row]], upd:[[key, old row, new row, [changed cols]]],
//                    del:[[key, row]], n:{inserts, updates, deletes}, om}},
//     new:[table], dropped:[table],
//     files:{add:[[path, size, text, link]], mod:[[path, size, text, link, size, text, link]],
//            rm:[[path, size, text, link]]}}}}
// Deep links: #task=<id>&rollout=<id>.
"use strict";
(function () {
  const $ = (sel) => document.querySelector(sel);
  const index = JSON.parse($("#weft-index").textContent);
  let blobs = null; // parsed on first use: the load path never touches them
  const cache = new Map();

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "onclick") node.addEventListener("click", v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  const badge = (text, cls) => el("span", { class: "badge " + (cls || "") }, text);
  const passBadge = (ok) => badge(ok ? "PASS" : "FAIL", ok ? "pass" : "fail");
  const refBadge = (ref) => (ref ? badge("reference", "ref") : null);

  async function loadTask(i) {
    if (cache.has(i)) return cache.get(i);
    if (blobs === null) blobs = JSON.parse($("#weft-blobs").textContent);
    const bytes = Uint8Array.from(atob(blobs[i]), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const task = JSON.parse(await new Response(stream).text());
    cache.set(i, task);
    return task;
  }

  // ----------------------------------------------------------------- task list
  const list = $("#task-list");
  const filter = $("#task-filter");
  let selected = -1;

  function renderList() {
    const q = filter.value.trim().toLowerCase();
    const frag = document.createDocumentFragment();
    let shown = 0;
    index.forEach((row, i) => {
      const [id, profile, turns, mcps, n, passed, ref] = row;
      if (q && !(id + " " + profile + " " + mcps).toLowerCase().includes(q)) return;
      shown += 1;
      frag.append(
        el(
          "button",
          {
            class: "task-item" + (i === selected ? " selected" : ""),
            "data-task": id,
            "data-index": i,
            onclick: () => openTask(i),
          },
          el("b", { text: id }),
          el("small", { text: `${profile} · ${turns} turns · ${mcps}` }),
          el("small", { text: `${passed}/${n} rollouts pass` + (ref ? ` · ${ref} reference` : "") })
        )
      );
    });
    list.replaceChildren(frag);
    $("#task-count").textContent = `${shown} of ${index.length} tasks`;
  }
  filter.addEventListener("input", renderList);

  // ----------------------------------------------------------------- task graph
  function dagSvg(task) {
    const ids = task.nodes.map((n) => n.id);
    const depth = Object.fromEntries(ids.map((id) => [id, 0]));
    const order = task.order && task.order.length ? task.order : ids;
    for (let pass = 0; pass < ids.length; pass++) {
      for (const [s, t] of task.edges) {
        if (s in depth && t in depth && depth[t] < depth[s] + 1) depth[t] = depth[s] + 1;
      }
    }
    const rows = {};
    const pos = {};
    for (const id of order) {
      const d = depth[id] || 0;
      rows[d] = (rows[d] || 0) + 1;
      pos[id] = [d, rows[d] - 1];
    }
    const W = 170, H = 54, GX = 60, GY = 18;
    const cols = Math.max(...Object.keys(rows).map(Number), 0) + 1;
    const maxRows = Math.max(...Object.values(rows), 1);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    const width = cols * (W + GX), height = maxRows * (H + GY);
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("width", String(width));
    svg.setAttribute("class", "dag");
    const mk = (tag, attrs, text) => {
      const n = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
      if (text !== undefined) n.textContent = text;
      svg.append(n);
      return n;
    };
    const xy = (id) => [pos[id][0] * (W + GX), pos[id][1] * (H + GY) + GY / 2];
    for (const [s, t, kind, fields] of task.edges) {
      if (!(s in pos && t in pos)) continue;
      const [x1, y1] = xy(s), [x2, y2] = xy(t);
      const line = mk("line", {
        x1: x1 + W, y1: y1 + H / 2, x2: x2, y2: y2 + H / 2, class: "edge " + kind,
      });
      mk("title", {}, `${s} → ${t} (${kind}) ${fields.join(", ")}`);
      line.append(svg.lastChild);
    }
    for (const n of task.nodes) {
      if (!(n.id in pos)) continue;
      const [x, y] = xy(n.id);
      const g = mk("g", { class: "node", transform: `translate(${x},${y})` });
      for (const [tag, attrs, text] of [
        ["rect", { width: W, height: H, rx: 6 }],
        ["text", { x: 8, y: 18, class: "nid" }, `${n.id} · ${n.mcp}`],
        ["text", { x: 8, y: 36 }, n.chain.join(" → ").slice(0, 28)],
        ["title", {}, n.intent],
      ]) {
        const c = document.createElementNS(ns, tag);
        for (const [k, v] of Object.entries(attrs)) c.setAttribute(k, String(v));
        if (text !== undefined) c.textContent = text;
        g.append(c);
      }
    }
    return svg;
  }

  function table(head, rows) {
    return el(
      "table",
      {},
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c)))))
    );
  }

  function renderTask(i, task) {
    const pane = $("#task-pane");
    const parts = [el("h2", { text: task.id })];
    if (task.missing) {
      parts.push(el("p", { class: "missing" }, task.missing));
    } else {
      parts.push(
        el("p", {}, el("b", { text: task.profile }), ` · ${task.mcps.join(", ")} · ${task.objective}`),
        el("h3", { text: "Graph" }),
        el("div", { class: "dag-wrap" }, dagSvg(task)),
        table(
          ["node", "MCP", "intent", "tool chain", "inputs", "checks"],
          task.nodes.map((n) => [
            n.id,
            n.mcp,
            n.intent,
            n.chain.join(" → "),
            el(
              "ul",
              {},
              n.inputs.map((inp) =>
                el("li", {}, `${inp.name} ← ${inp.source}` +
                  (inp.from ? ` (${inp.from})` : "") + (inp.value ? ` = ${inp.value}` : ""))
              )
            ),
            el("ul", {}, n.checks.map(([id, kind, d]) => el("li", { text: `${id} ${kind}` + (d ? `: ${d}` : "") }))),
          ])
        ),
        el("h3", { text: "Edges" }),
        task.edges.length
          ? table(["from", "to", "kind", "fields"], task.edges.map(([s, t, k, f]) => [s, t, k, f.join(", ")]))
          : el("p", { class: "muted", text: "no edges: the atomic tasks are independent" }),
        el("h3", { text: "Entity bindings" }),
        task.bindings.length
          ? table(
              ["binding", "entity", "values", "lives in"],
              task.bindings.map((b) => [
                b.name,
                b.entity,
                el("code", { text: JSON.stringify(b.value) }),
                Object.entries(b.refs).map(([m, t]) => `${m}.${t}`).join(", "),
              ])
            )
          : el("p", { class: "muted", text: "no entity bindings" })
      );
    }
    parts.push(el("h3", { text: `Rollouts (${task.rollouts.length})` }));
    parts.push(
      task.rollouts.length
        ? table(
            ["rollout", "view", "harness", "model", "reward", "final", "retries", ""],
            task.rollouts.map((r, k) => [
              r.id,
              r.view,
              r.harness,
              el("span", {}, r.model, " ", refBadge(r.ref)),
              r.reward.toFixed(2),
              r.final ? passBadge(r.passed) : badge("none", "fail"),
              String(r.retries + r.discarded.length),
              el("button", { class: "open-rollout", "data-rollout": r.id, onclick: () => openRollout(i, k) }, "open"),
            ])
          )
        : el("p", { class: "muted", text: "no rollouts of this task in this run" })
    );
    parts.push(el("div", { id: "rollout-pane" }));
    pane.replaceChildren(...parts);
    pane.dataset.task = task.id;
  }

  // ----------------------------------------------------------------- one rollout
  function checks(outcomes) {
    if (!outcomes) return el("p", { class: "fail", text: "no checkpoint outcome recorded" });
    const failed = outcomes.filter((o) => !o[2]);
    const passed = outcomes.filter((o) => o[2]);
    return el(
      "div",
      { class: "checks" },
      failed.map(([id, kind, , reason]) => el("div", { class: "check failed" }, `✗ ${id} (${kind}): ${reason}`)),
      passed.length
        ? el(
            "details",
            {},
            el("summary", { text: `${passed.length} check(s) passed` }),
            passed.map(([id, kind, , reason]) => el("div", { class: "check passed" }, `✓ ${id} (${kind}): ${reason}`))
          )
        : null
    );
  }

  function message(m) {
    const body = [];
    if (m.c) body.push(el("pre", { text: m.c }));
    for (const [id, name, args] of m.tc || []) {
      body.push(el("div", { class: "tool-call" }, el("b", { text: name }), el("code", { text: args }), el("small", { text: id })));
    }
    const who = m.r === "tool" ? `tool result (${m.id})` : m.r;
    return el("div", { class: "msg " + m.r }, el("div", { class: "role", text: who }), body);
  }

  function stateChanges(r, seg) {
    const seqs = seg.ledger || {};
    const entries = r.ledger.filter((e) => (seqs[e.mcp] || []).includes(e.seq));
    const muts = entries.filter((e) => e.mut);
    const errs = entries.filter((e) => e.err);
    return el(
      "div",
      { class: "state" },
      el("div", { class: "role", text: `state changes (${muts.length} of ${entries.length} call(s) wrote)` }),
      muts.map((e) =>
        el("div", { class: "mut" }, `${e.mcp}.${e.tool} ${e.args} → state v${e.sv}`, e.res ? el("pre", { text: e.res }) : null)
      ),
      errs.map((e) => el("div", { class: "check failed" }, `tool error: ${e.mcp}.${e.tool} (${e.kind || "error"})`)),
      muts.length ? null : el("small", { class: "muted", text: "this turn changed no state" })
    );
  }

  // A turn's row-level state diff (MegaMCP's, since the previous checkpoint): per MCP and table,
  // one row per inserted / updated / deleted key; an updated row shows old → new in the cells
  // that changed, highlighted.
  const cellText = (v) => (v === null || v === undefined ? "NULL" : typeof v === "string" ? v : JSON.stringify(v));

  function diffTable(mcp, name, t) {
    const cols = [];
    const addCols = (row) => { for (const c of Object.keys(row)) if (!cols.includes(c)) cols.push(c); };
    t.ins.forEach(([, r]) => addCols(r));
    t.upd.forEach(([, o, n]) => { addCols(o); addCols(n); });
    t.del.forEach(([, r]) => addCols(r));
    const plain = (kind, sign, k, r) =>
      el("tr", { class: kind }, el("td", { text: sign }), el("td", { text: k }), cols.map((c) => el("td", { text: c in r ? cellText(r[c]) : "" })));
    const rows = [
      ...t.ins.map(([k, r]) => plain("ins", "+", k, r)),
      ...t.upd.map(([k, o, n, changed]) =>
        el("tr", { class: "upd" }, el("td", { text: "~" }), el("td", { text: k }),
          cols.map((c) => changed.includes(c)
            ? el("td", { class: "chg" }, el("del", { text: cellText(o[c]) }), " → ", el("ins", { text: cellText(n[c]) }))
            : el("td", { text: cellText(n[c]) })))),
      ...t.del.map(([k, r]) => plain("del", "−", k, r)),
    ];
    return el("div", { class: "diff-table", "data-mcp": mcp, "data-table": name },
      el("div", { class: "diff-head" }, el("b", { text: `${mcp} · ${name}` }),
        ` +${t.n.inserts} inserted · ~${t.n.updates} updated · −${t.n.deletes} deleted`),
      rows.length
        ? el("table", { class: "diff" },
            el("thead", {}, el("tr", {}, el("th", { text: "" }), el("th", { text: "key" }), cols.map((c) => el("th", { text: c })))),
            el("tbody", {}, rows))
        : null,
      t.om ? el("small", { class: "muted", text: `${t.om} more changed row(s) not recorded (the per-turn cap)` }) : null);
  }

  function diffFiles(mcp, f) {
    const items = [
      ...f.add.map(([p, size, text, link]) => el("li", { class: "ins" }, `+ ${p} (${link ? "→ " + link : size + " B"})`, text !== null ? el("pre", { text }) : null)),
      ...f.mod.map(([p, os, ot, , ns, nt]) => el("li", { class: "upd" }, `~ ${p} (${os} B → ${ns} B)`,
        ot !== null || nt !== null ? el("div", { class: "chg" }, el("del", {}, el("pre", { text: ot ?? "(binary or large)" })), el("ins", {}, el("pre", { text: nt ?? "(binary or large)" }))) : null)),
      ...f.rm.map(([p, size]) => el("li", { class: "del" }, `− ${p} (${size} B)`)),
    ];
    return items.length ? el("div", { class: "diff-files", "data-mcp": mcp }, el("b", { text: `${mcp} · workspace files` }), el("ul", {}, items)) : null;
  }

  function stateDiff(seg) {
    const d = seg.diff;
    if (!d) {
      return el("div", { class: "state-diff none" }, el("small", { class: "muted",
        text: "no row-level diff recorded for this turn (a trace from before Trace schema 3, or the host's diff was off)" }));
    }
    if (d.err) return el("div", { class: "state-diff" }, el("div", { class: "check failed", text: "state diff unavailable: " + d.err }));
    const parts = [];
    for (const [mcp, m] of Object.entries(d.mcps)) {
      if (m.new.length || m.dropped.length) {
        parts.push(el("div", { class: "muted" }, `${mcp}: tables created ${m.new.join(", ") || "none"}; dropped ${m.dropped.join(", ") || "none"}`));
      }
      for (const [name, t] of Object.entries(m.tables)) parts.push(diffTable(mcp, name, t));
      parts.push(diffFiles(mcp, m.files));
    }
    return el("div", { class: "state-diff", "data-since": d.since },
      el("div", { class: "role", text: `row-level state diff, since ${d.since === "initial" ? "the initial state" : "checkpoint " + d.since}` }),
      parts.length ? parts : el("small", { class: "muted", text: "no row or file changed" }),
      d.trunc ? el("div", { class: "notice", text: `Capped at ${d.max} rows per turn: the counts include the rows left out.` }) : null);
  }

  function renderRollout(task, k) {
    const r = task.rollouts[k];
    const node = Object.fromEntries((task.nodes || []).map((n) => [n.id, n]));
    const parts = [
      el("h3", {}, `Rollout ${r.id} `, refBadge(r.ref)),
      el("p", {}, `${r.view} · ${r.harness} · ${r.model} · reward ${r.reward.toFixed(2)} · final `, r.final ? passBadge(r.passed) : badge("none", "fail")),
    ];
    if (r.ref) parts.push(el("p", { class: "muted", text: "Reference run: the policy reads the answer key, so its outcomes check the pipeline, not a model." }));
    if (r.error) parts.push(el("p", { class: "fail", text: "error: " + r.error }));
    if (r.retries || r.discarded.length) {
      parts.push(
        el("div", { class: "retries" }, `${r.retries} infrastructure retr${r.retries === 1 ? "y" : "ies"}; ${r.discarded.length} discarded attempt(s)`,
          el("ul", {}, r.discarded.map((d) => el("li", { text: `${d.messages} messages, ${d.infrastructure_retries} retries: ${d.error || "no error recorded"}` }))))
      );
    }
    const first = r.segments.length ? Math.min(...r.segments.map((s) => s.start)) : r.messages.length;
    if (first > 0) {
      parts.push(el("section", { class: "turn" }, el("h4", { text: "Before the first atomic turn" }), r.messages.slice(0, first).map(message)));
    }
    let covered = first;
    r.segments.forEach((seg, t) => {
      const n = node[seg.node];
      const ok = seg.outcome ? seg.outcome.every((o) => o[2]) : false;
      const msgs = r.messages.slice(Math.max(seg.start, covered), seg.end);
      covered = Math.max(covered, seg.end);
      parts.push(
        el(
          "section",
          { class: "turn " + (ok ? "ok" : "bad"), "data-node": seg.node },
          el("h4", {}, `Turn ${t + 1} · ${seg.node}` + (n ? ` · ${n.mcp} · ${n.intent}` : ""), " ", passBadge(ok),
            seg.attempts > 1 ? badge(`${seg.attempts} attempts`, "warn") : null),
          checks(seg.outcome),
          msgs.map(message),
          stateChanges(r, seg),
          stateDiff(seg)
        )
      );
    });
    if (covered < r.messages.length) {
      parts.push(el("section", { class: "turn" }, el("h4", { text: "After the last checkpoint" }), r.messages.slice(covered).map(message)));
    }
    if (!r.segments.length) parts.push(el("p", { class: "fail", text: "no atomic turn was recorded for this rollout" }));
    parts.push(el("h4", { text: "Final verification" }), checks(r.final));
    const pane = $("#rollout-pane");
    pane.replaceChildren(...parts);
    pane.dataset.rollout = r.id;
    pane.scrollIntoView({ block: "start" });
  }

  // ----------------------------------------------------------------- navigation
  function select(i) {
    // Only the highlight moves; rebuilding a 1,000-row list on every click would not be free.
    for (const b of list.querySelectorAll(".task-item.selected")) b.classList.remove("selected");
    selected = i;
    const row = list.querySelector(`.task-item[data-index="${i}"]`);
    if (row) row.classList.add("selected");
  }

  async function openTask(i, rolloutId) {
    select(i);
    const task = await loadTask(i);
    renderTask(i, task);
    const k = rolloutId ? task.rollouts.findIndex((r) => r.id === rolloutId) : -1;
    if (k >= 0) renderRollout(task, k);
    history.replaceState(null, "", `#task=${encodeURIComponent(task.id)}` + (k >= 0 ? `&rollout=${encodeURIComponent(rolloutId)}` : ""));
  }
  async function openRollout(i, k) {
    const task = await loadTask(i);
    renderRollout(task, k);
    history.replaceState(null, "", `#task=${encodeURIComponent(task.id)}&rollout=${encodeURIComponent(task.rollouts[k].id)}`);
  }

  renderList();
  const hash = new URLSearchParams(location.hash.slice(1));
  const wanted = hash.get("task");
  const done = () => { document.body.dataset.viewerReady = "1"; };
  if (wanted) {
    const i = index.findIndex((row) => row[0] === wanted);
    if (i >= 0) {
      openTask(i, hash.get("rollout")).then(() => {
        document.getElementById("traces").scrollIntoView();
        done();
      });
    } else done();
  } else done();
})();
