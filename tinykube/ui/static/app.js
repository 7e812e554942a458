// tinykube's live picture: a model of elements by id, fed by Server-Sent Events (a snapshot, then diffs), drawn
// as SVG from scratch on every change (a sandbox has tens of elements, not thousands). No build step, no library.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const model = new Map();   // id -> element (node, pod, service, edge)
let meta = {};
let selected = null;       // id of the Service whose panel is open
let drawn = new Set();     // ids drawn last time (new ones fade in)
let detailsTimer = null;

// ---------------------------------------------------------------------------------------------------------------
// The stream

function connect() {
  const status = document.getElementById("status");
  const events = new EventSource("events");
  events.addEventListener("snapshot", (e) => {
    const data = JSON.parse(e.data);
    meta = data.meta;
    model.clear();
    for (const element of data.elements) model.set(element.id, element);
    document.getElementById("cluster").textContent =
      `${meta.cluster} · ${meta.dataplane === "netns" ? "netns sandbox" : "simulated pods"}` +
      (meta.proxyMode ? ` · proxy ${meta.proxyMode}` : "");
    status.dataset.state = "live";
    status.textContent = "live";
    render();
    if (selected) loadDetails();
  });
  events.addEventListener("diff", (e) => {
    const change = JSON.parse(e.data);
    for (const id of change.delete) model.delete(id);
    for (const element of change.put) model.set(element.id, element);
    render();
    const touched = change.delete.concat(change.put.map((el) => el.id));
    if (selected && touched.some((id) => id === selected || (model.get(id) || {}).service === selected ||
        id.startsWith("edge/" + selected.slice(4) + "/"))) {
      clearTimeout(detailsTimer);
      detailsTimer = setTimeout(loadDetails, 300);  // the rules follow the endpoints a moment later
    }
  });
  events.onerror = () => {  // EventSource reconnects by itself; the server sends a fresh snapshot then
    status.dataset.state = "reconnecting";
    status.textContent = "reconnecting…";
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Drawing

function el(name, attrs, parent, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function byKind(kind) {
  return [...model.values()].filter((e) => e.kind === kind).sort((a, b) => a.id.localeCompare(b.id));
}

function serviceLines(s) {
  const lines = [`${s.type} ${s.clusterIP && s.clusterIP !== "None" ? s.clusterIP : s.clusterIP === "None" ? "headless" : s.externalName}`];
  for (const p of s.ports) {
    let line = `${p.name ? p.name + " " : ""}${p.port}/${p.protocol} → ${p.targetPort}`;
    if (p.nodePort) line += `  node :${p.nodePort}`;
    lines.push(line);
  }
  for (const ip of s.loadBalancer) lines.push(`LB ${ip}`);
  if (s.externalTrafficPolicy === "Local") lines.push("externalTrafficPolicy: Local");
  return lines;
}

function render() {
  const svg = document.getElementById("picture");
  const width = Math.max(document.getElementById("canvas").clientWidth - 4, 900);
  svg.replaceChildren();
  const now = new Set();
  const fresh = (id) => { now.add(id); return drawn.size && !drawn.has(id) ? " appear" : ""; };
  const boxes = new Map();  // id -> {x, y, w, h}
  const margin = 14;

  // Services, in rows along the top
  const services = byKind("service");
  const svcW = 220;
  let x = margin, y = margin, rowH = 0;
  const svcLayer = el("g", {}, null);
  for (const s of services) {
    const lines = serviceLines(s);
    const h = 24 + lines.length * 14;
    if (x + svcW > width - margin) { x = margin; y += rowH + 12; rowH = 0; }
    const g = el("g", { class: "svc" + (s.id === selected ? " selected" : "") + fresh(s.id), "data-id": s.id,
                        "data-name": s.name, "data-namespace": s.namespace }, svcLayer);
    el("rect", { x, y, width: svcW, height: h, rx: 6 }, g);
    el("text", { x: x + 8, y: y + 16, class: "title" }, g, `${s.namespace}/${s.name}`);
    lines.forEach((line, i) => el("text", { x: x + 8, y: y + 31 + i * 14, class: "mono" }, g, line));
    g.addEventListener("click", () => select(s.id));
    boxes.set(s.id, { x, y, w: svcW, h });
    x += svcW + 12;
    rowH = Math.max(rowH, h);
  }
  y += rowH + (services.length ? 40 : 0);

  // The LAN and the hosts on it
  const lanLayer = el("g", { class: "lan" }, null);
  const hostsTop = meta.lan ? y + 34 + 34 : y;
  if (meta.lan) {
    el("rect", { x: margin, y, width: width - 2 * margin, height: 30, rx: 5 }, lanLayer);
    el("text", { x: margin + 10, y: y + 19, class: "title" }, lanLayer, `LAN ${meta.lan.bridge} ${meta.lan.cidr}`);
    const gw = el("g", { class: "gateway", "data-id": "addr/" + meta.lan.gateway }, lanLayer);
    el("rect", { x: margin + 180, y: y + 3, width: 320, height: 24, rx: 4 }, gw);
    el("text", { x: margin + 190, y: y + 19, class: "mono" }, gw,
       `${meta.lan.gateway}  apiserver :6443 · cluster DNS`);
    boxes.set("addr/" + meta.lan.gateway, { x: margin + 180, y: y + 3, w: 320, h: 24 });
  }
  const nodes = byKind("node");
  const pods = byKind("pod");
  const hosts = nodes.map((n) => ({ id: n.id, node: n, name: n.name }));
  if (pods.some((p) => !p.node || !model.has("node/" + p.node))) hosts.push({ id: "node/", name: "", node: null });
  const extW = meta.lan ? 170 : 0;
  const podW = 176, podH = 40, gap = 8;
  const count = Math.max(hosts.length, 1);
  const nodeW = Math.max(podW + 2 * gap, (width - 2 * margin - extW - (extW ? 16 : 0) - (count - 1) * 16) / count);
  const cols = Math.max(1, Math.floor((nodeW - gap) / (podW + gap)));
  const podsOf = (h) => pods.filter((p) => (h.node ? p.node === h.name : !p.node || !model.has("node/" + p.node)));
  const rows = Math.max(1, ...hosts.map((h) => Math.ceil(podsOf(h).length / cols)));
  const nodeH = 50 + rows * (podH + gap) + 20;
  const nodeLayer = el("g", {}, null);
  hosts.forEach((h, i) => {
    const nx = margin + i * (nodeW + 16);
    const g = el("g", { class: "node" + fresh(h.id), "data-id": h.id }, nodeLayer);
    if (meta.lan && h.node) el("line", { x1: nx + nodeW / 2, y1: y + 30, x2: nx + nodeW / 2, y2: hostsTop, class: "wire" }, lanLayer);
    el("rect", { x: nx, y: hostsTop, width: nodeW, height: nodeH, rx: 8 }, g);
    if (h.node) boxes.set(h.id, { x: nx, y: hostsTop, w: 120, h: 40 });
    if (h.node) {
      el("text", { x: nx + 10, y: hostsTop + 18, class: "title" }, g, `${h.name}${h.node.ready ? "" : " (not ready)"}`);
      el("text", { x: nx + 10, y: hostsTop + 34, class: "mono" }, g, `${h.node.ip}   pods ${h.node.podCIDR}`);
    } else {
      el("text", { x: nx + 10, y: hostsTop + 18, class: "title" }, g, "not on a node");
    }
    podsOf(h).forEach((p, j) => {
      const px = nx + gap + (j % cols) * (podW + gap), py = hostsTop + 46 + Math.floor(j / cols) * (podH + gap);
      const pg = el("g", { class: "pod" + fresh(p.id), "data-id": p.id, "data-name": p.name,
                           "data-ready": String(p.ready), "data-phase": p.phase,
                           "data-terminating": String(p.terminating) }, g);
      el("title", {}, pg, `${p.namespace}/${p.name} — ${p.phase}${p.ready ? ", ready" : ", not ready"}`);
      el("rect", { x: px, y: py, width: podW, height: podH, rx: 5 }, pg);
      el("circle", { cx: px + 11, cy: py + 13, r: 4 }, pg);
      el("text", { x: px + 20, y: py + 17 }, pg, p.name.length > 24 ? p.name.slice(0, 23) + "…" : p.name);
      el("text", { x: px + 20, y: py + 32, class: "mono" }, pg, `${p.ip || "no IP yet"}${p.namespace !== "default" ? "  " + p.namespace : ""}`);
      boxes.set(p.id, { x: px, y: py, w: podW, h: podH });
    });
  });
  if (meta.lan) {
    const ex = width - margin - extW;
    const g = el("g", { class: "ext", "data-id": "external" }, lanLayer);
    el("line", { x1: ex + extW / 2, y1: y + 30, x2: ex + extW / 2, y2: hostsTop, class: "wire" }, lanLayer);
    el("rect", { x: ex, y: hostsTop, width: extW, height: 46, rx: 8 }, g);
    el("text", { x: ex + 10, y: hostsTop + 18, class: "title" }, g, "external client");
    el("text", { x: ex + 10, y: hostsTop + 34, class: "mono" }, g, meta.lan.external);
    boxes.set("external", { x: ex, y: hostsTop, w: extW, h: 46 });
  }

  // Endpoint edges: Service → pod, solid when ready
  const edgeLayer = el("g", { "pointer-events": "none" }, null);
  for (const e of byKind("edge")) {
    const from = boxes.get(e.service), to = boxes.get(e.target);
    if (!from || !to) continue;
    const x1 = from.x + from.w / 2, y1 = from.y + from.h, x2 = to.x + to.w / 2, y2 = to.y;
    const dim = selected && e.service !== selected ? " dim" : "";
    el("path", { d: `M${x1},${y1} C${x1},${y1 + 60} ${x2},${y2 - 60} ${x2},${y2}`,
                 class: "edge" + (e.ready ? "" : " notready") + dim + fresh(e.id), "data-id": e.id }, edgeLayer);
  }

  const defs = el("defs", {}, null);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 12, markerHeight: 12,
                                markerUnits: "userSpaceOnUse", orient: "auto" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "trace-arrow" }, marker);
  svg.append(defs, lanLayer, nodeLayer, svcLayer, edgeLayer);
  drawTrace(svg, boxes, width);
  const height = hostsTop + (hosts.length || meta.lan ? nodeH : 0) + margin;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  drawn = now;
}

// ---------------------------------------------------------------------------------------------------------------
// The Service panel

function select(id) {
  selected = id;
  document.getElementById("panel").hidden = false;
  render();
  loadDetails();
}

async function loadDetails(node) {
  if (!selected) return;
  const [, namespace, name] = selected.split("/");
  const chosen = node || document.getElementById("rules-node").value || "";
  const query = chosen ? `?node=${encodeURIComponent(chosen)}` : "";
  const response = await fetch(`api/services/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}${query}`,
                               { credentials: "same-origin" });
  if (!response.ok) {
    document.getElementById("svc-summary").textContent = `${namespace}/${name}: ${response.status}`;
    return;
  }
  showDetails(await response.json());
}

function h(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

function showDetails(d) {
  const s = d.service;
  document.getElementById("svc-title").textContent = `${s.namespace}/${s.name}`;
  document.getElementById("svc-summary").textContent = serviceLines(s).join(" · ");

  const dns = document.querySelector("#dns .body");
  dns.replaceChildren();
  const names = h("p", "", "names");
  names.append("A pod resolves ");
  for (const n of d.dns.short) names.append(h("code", n));
  names.append("through its search path to:");
  dns.append(names);
  for (const q of d.dns.queries) {
    const line = h("div", "", "q");
    line.append(h("b", q.type), " " + q.name + "  ", h("span", q.rcode));
    dns.append(line);
    for (const rr of q.records) dns.append(h("div", rr, "rr"));
  }

  document.querySelector("#env .ns").textContent = d.env.namespace;
  const table = (pairs) => {
    const t = h("table");
    for (const [k, v] of pairs) {
      const tr = h("tr");
      tr.append(h("td", k, "k"), h("td", v));
      t.append(tr);
    }
    return t;
  };
  document.querySelector("#env .body").replaceChildren(
    d.env.own.length ? table(d.env.own) : h("p", "none: this Service has no ClusterIP"));
  document.querySelector("#env .count").textContent = d.env.all.length;
  document.querySelector("#env .all").replaceChildren(table(d.env.all));

  const select = document.getElementById("rules-node");
  select.replaceChildren(...d.nodes.map((n) => { const o = h("option", n); o.value = n; return o; }));
  select.value = d.node;
  document.querySelector("#rules .command").textContent = d.rules.command ? "# " + d.rules.command : "";
  const pre = document.querySelector("#rules .body");
  pre.replaceChildren();
  if (d.rules.error) pre.append(h("span", d.rules.error, "error"));
  let first = null;
  for (const line of d.rules.lines) {
    const span = h("span", line.text, line.hit ? "hit" : "");
    if (line.hit && !first) first = span;
    pre.append(span);
  }
  if (first) pre.scrollTop = first.offsetTop - pre.offsetTop - 40;

  const trace = document.getElementById("trace");
  trace.hidden = !meta.trace;  // `tinykube trace` (POST api/trace), shown when the server has it
  if (meta.trace) fillTraceChoices(s);
}

// ---------------------------------------------------------------------------------------------------------------
// Traces: one real connection through the kernel's rules (tinykube.trace), its path drawn on the picture

let traced = null;  // the last trace's hops: [{id, label}]

function fillTraceChoices(s) {
  const from = document.getElementById("trace-from"), to = document.getElementById("trace-to");
  const keep = from.value;
  const sources = byKind("pod").filter((p) => p.ip && p.phase === "Running").map((p) => [`${p.namespace}/${p.name}`, `pod ${p.namespace}/${p.name}`]);
  sources.push(...byKind("node").map((n) => [`node/${n.name}`, `node ${n.name}`]), ["external", "external client"]);
  from.replaceChildren(...sources.map(([v, t]) => { const o = h("option", t); o.value = v; return o; }));
  if (keep && sources.some(([v]) => v === keep)) from.value = keep;
  const targets = [];
  for (const p of s.ports) {
    if (s.clusterIP && s.clusterIP !== "None") targets.push(`${s.name}.${s.namespace}:${p.port}`);
    if (p.nodePort) for (const n of byKind("node")) targets.push(`${n.ip}:${p.nodePort}`);
    for (const ip of s.loadBalancer) targets.push(`${ip}:${p.port}`);
  }
  const wanted = to.value;
  to.replaceChildren(...targets.map((t) => { const o = h("option", t); o.value = t; return o; }));
  if (targets.includes(wanted)) to.value = wanted;
}

async function runTrace() {
  const out = document.getElementById("trace-out");
  const button = document.getElementById("trace-run");
  const target = document.getElementById("trace-to").value;
  const protocol = ((model.get(selected) || {}).ports || []).find((p) => target.endsWith(":" + (p.nodePort || p.port)) || target.endsWith(":" + p.port));
  out.hidden = false;
  out.textContent = "tracing…";
  button.disabled = true;
  try {
    const response = await fetch("api/trace", {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ from: document.getElementById("trace-from").value, to: target,
                             proto: protocol ? protocol.protocol.toLowerCase() : "tcp" }),
    });
    const result = await response.json();
    if (!response.ok) { out.textContent = result.message; return; }
    out.textContent = result.text;
    out.dataset.outcome = result.outcome;
    traced = result.path;
    render();
  } finally {
    button.disabled = false;
  }
}

function drawTrace(svg, boxes, width) {
  if (!traced) return;
  const layer = el("g", { class: "trace", "pointer-events": "none" }, svg);
  const points = traced.map((hop) => [hop, boxes.get(hop.id)]).filter(([, b]) => b);
  // A Service is left from its bottom edge (where its endpoint edges start); everything else is met at its top.
  const anchor = (hop, b) => [b.x + b.w / 2, hop.id.startsWith("svc/") ? b.y + b.h : b.y];
  for (let i = 1; i < points.length; i++) {
    const [x1, y1] = anchor(...points[i - 1]), [x2, y2] = anchor(...points[i]);
    const bend = Math.max(50, Math.abs(y2 - y1) / 2);
    const c1 = y1 > y2 ? y1 - bend : y1 + bend, c2 = y1 > y2 ? y2 + bend : y2 - bend;
    el("path", { d: `M${x1},${y1} C${x1},${c1} ${x2},${c2} ${x2},${y2}`, class: "trace-path",
                 "marker-end": "url(#arrow)" }, layer);
  }
  points.forEach(([hop, b], i) => {
    const [x, y] = anchor(hop, b);
    el("circle", { cx: x, cy: y, r: 5, class: "trace-hop", "data-id": hop.id }, layer);
    const right = x > width * 0.6;
    const below = hop.id.startsWith("svc/") || hop.id.startsWith("pod/");
    const ly = hop.id.startsWith("pod/") ? b.y + b.h + 16 : below ? y + 16 : y - 9;
    el("text", { x: right ? x - 10 : x + 10, y: ly, class: "trace-label", "text-anchor": right ? "end" : "start",
                 "paint-order": "stroke" }, layer, `${i + 1}. ${hop.label}`);
  });
}

document.getElementById("trace-run").addEventListener("click", runTrace);
document.getElementById("trace-clear").addEventListener("click", () => {
  traced = null;
  document.getElementById("trace-out").hidden = true;
  render();
});

document.getElementById("rules-node").addEventListener("change", (e) => loadDetails(e.target.value));
document.getElementById("close").addEventListener("click", () => {
  selected = null;
  document.getElementById("panel").hidden = true;
  render();
});
window.addEventListener("resize", () => render());
connect();
