/* spikelens HTML report: builds each run's uPlot charts when the run scrolls into view,
   draws findings as bands and markers, keeps the panels on one step axis, and moves a
   run's chart to a finding when it is clicked. Data: <script type="application/json"
   id="chart-N">, written by spikelens/report/chart_data.py. */
(function () {
  "use strict";
  const SEV = {error: "#d62728", warning: "#ff7f0e", info: "#7f7f7f"};
  const COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const SUPERSEDED = "#9a9a9a";
  const dpr = () => window.devicePixelRatio || 1;
  const runs = {};
  // a page written with --html-static draws every chart up front (headless capture, archiving)
  const EAGER = document.documentElement.dataset.static === "1";
  const api = window.spikelens = {runs: runs, build: build, zoomTo: zoomTo, setX: setX, filter: applyFilter,
                                  drawAll: drawAll, addMetric: addMetric};

  function decode(enc) {
    const bin = atob(enc.b);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const T = enc.t === "i4" ? Int32Array : enc.t === "f8" ? Float64Array : Float32Array;
    return Array.from(new T(bytes.buffer));
  }

  function fmt(v) {
    if (v == null || !isFinite(v)) return "—";
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
    return String(Number(v.toPrecision(5)));
  }
  const fmtStep = v => v == null ? "—" : Math.round(v).toLocaleString("en-US");

  // ------------------------------------------------------------------ data

  const pair = o => o ? [decode(o.x), decode(o.y)] : null;

  function decodeSeries(s) {
    const live = pair(s.live), sup = pair(s.superseded);
    const liveDetail = pair(s.live.detail), supDetail = s.superseded ? pair(s.superseded.detail) : null;
    return {name: s.name, role: s.role, bad: s.bad, positive: s.positive, coarse: {live: live, sup: sup},
            live: merge(live, liveDetail), sup: sup && merge(sup, supDetail), detailed: !!(liveDetail || supDetail)};
  }

  function load(id) {
    const el = document.getElementById("chart-" + id);
    const d = JSON.parse(el.textContent);
    d.panels.forEach(p => { p.series = p.series.map(decodeSeries); });
    d.zoom_only = (d.zoom_only || []).map(decodeSeries);
    return d;
  }

  function merge(a, b) {
    // two [xs, ys] pairs as one, in step order
    if (!b || !b[0].length) return a;
    const pts = a[0].map((x, i) => [x, a[1][i]]).concat(b[0].map((x, i) => [x, b[1][i]]));
    pts.sort((p, q) => p[0] - q[0]);
    return [pts.map(p => p[0]), pts.map(p => p[1])];
  }

  /* One panel's aligned table: x, then per metric its live column and (when it has
     any) its superseded column; the smoothed columns are appended by the caller.
     `fine`: with the extra points inside the finding windows (drawn once zoomed in). */
  function table(series, fine) {
    const parts = [];
    const cols = [];
    series.forEach((s, i) => {
      const src = fine ? s : s.coarse;
      parts.push(src.live); cols.push({metric: i, kind: "live"});
      if (s.sup) { parts.push(src.sup); cols.push({metric: i, kind: "sup"}); }
    });
    return {data: uPlot.join(parts), cols: cols};
  }

  function smooth(col, w) {
    // TensorBoard's debiased exponential moving average, over the points drawn
    const out = new Array(col.length);
    let last = 0, n = 0;
    for (let i = 0; i < col.length; i++) {
      const v = col[i];
      if (v == null) { out[i] = undefined; continue; }
      last = last * w + (1 - w) * v; n++;
      out[i] = last / (1 - Math.pow(w, n));
    }
    return out;
  }

  // ------------------------------------------------------------------ drawing

  function belongs(f, st, p) {
    if (f.line) return true;
    const names = p.series.map(s => s.name);
    if (f.metric && names.includes(f.metric)) return true;
    if (p.title !== "loss" || !f.metric) return p.title === "loss";
    return !st.data.panels.some(q => q !== p && q.series.some(s => s.name === f.metric));
  }

  function bandsHook(st, p, findings) {
    return u => {
      const ctx = u.ctx, b = u.bbox;
      ctx.save();
      ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
      ctx.setLineDash([2 * dpr(), 3 * dpr()]); ctx.strokeStyle = "#666"; ctx.lineWidth = dpr();
      for (const s of st.data.segments) {
        const x = Math.round(u.valToPos(s, "x", true)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x, b.top); ctx.lineTo(x, b.top + b.height); ctx.stroke();
      }
      for (const f of findings) {
        if (f.sev === "info" && !f.heads && f.id !== st.selected) continue;  // a note the verdict names: banded
        if (p && !belongs(f, st, p)) continue;
        const color = SEV[f.sev] || SEV.info;
        const a = u.valToPos(f.x0, "x", true), z = u.valToPos(f.x1, "x", true);
        const sel = f.id === st.selected;
        if (f.line) {
          ctx.setLineDash([5 * dpr(), 3 * dpr()]); ctx.strokeStyle = color; ctx.lineWidth = (sel ? 2.5 : 1.5) * dpr();
          ctx.beginPath(); ctx.moveTo(a, b.top); ctx.lineTo(a, b.top + b.height); ctx.stroke();
          continue;
        }
        ctx.globalAlpha = sel ? 0.28 : 0.13; ctx.fillStyle = color;
        ctx.fillRect(a, b.top, Math.max(z - a, 3 * dpr()), b.height);
        ctx.globalAlpha = sel ? 1 : 0.6;
        ctx.fillRect(a, b.top, (sel ? 2 : 1) * dpr(), b.height);
        ctx.globalAlpha = 1;
      }
      ctx.restore();
    };
  }

  function marksHook(st, p, series, findings) {
    return u => {
      const ctx = u.ctx, b = u.bbox;
      ctx.save();
      ctx.beginPath(); ctx.rect(b.left, b.top, b.width, b.height); ctx.clip();
      // NaN / inf: red ticks along the bottom
      ctx.strokeStyle = "#d62728"; ctx.lineWidth = 1.5 * dpr();
      for (const s of series) for (const x of s.bad) {
        const px = u.valToPos(x, "x", true);
        ctx.beginPath(); ctx.moveTo(px, b.top + b.height); ctx.lineTo(px, b.top + b.height - 9 * dpr()); ctx.stroke();
      }
      // labels over the bands, stacked in up to three rows, left out when no row has room
      if (p && p.title === "loss") {
        ctx.font = `${11 * dpr()}px system-ui, sans-serif`; ctx.textBaseline = "top"; ctx.textAlign = "left";
        const ends = [-1e9, -1e9, -1e9];
        const shown = findings.filter(f => (f.sev !== "info" || f.heads || f.id === st.selected) && belongs(f, st, p))
          .sort((x, y) => x.x0 - y.x0);
        for (const f of shown) {
          const x = u.valToPos(f.x0, "x", true) + 3 * dpr();
          if (x < b.left - 2 || x > b.left + b.width) continue;
          const w = ctx.measureText(f.kind).width;
          const row = ends.findIndex(e => x > e);
          if (row < 0) continue;
          ends[row] = x + w + 6 * dpr();
          const y = b.top + 3 * dpr() + row * 14 * dpr();
          ctx.fillStyle = "rgba(255,255,255,0.8)"; ctx.fillRect(x - 1, y - 1, w + 2, 13 * dpr());
          ctx.fillStyle = SEV[f.sev] || SEV.info; ctx.fillText(f.kind, x, y);
        }
      }
      ctx.restore();
    };
  }

  // ------------------------------------------------------------------ charts

  function panelOpts(st, p, width, height, log) {
    const cols = p.cols;
    const series = [{label: "step", value: (u, v) => fmtStep(v)}];
    cols.forEach(c => {
      const color = COLORS[c.metric % COLORS.length];
      const name = p.series[c.metric].name;
      if (c.kind === "live") {
        series.push({label: name, width: 1.2, spanGaps: true, value: (u, v) => fmt(v),
          stroke: () => (c.smoothable && st.smooth > 0) ? color + "55" : color,
          points: {show: false}});
      } else if (c.kind === "sup") {
        series.push({label: name + " (superseded)", width: 0, stroke: SUPERSEDED, fill: null, value: (u, v) => fmt(v),
          paths: () => null, points: {show: true, space: 0, size: 3, fill: SUPERSEDED, stroke: SUPERSEDED}});
      } else {
        series.push({label: name + " (smoothed)", width: 2, spanGaps: true, stroke: color, value: (u, v) => fmt(v),
          show: st.smooth > 0, points: {show: false}});
      }
    });
    const base = p.title === "loss scale" ? 2 : 10;
    return {
      width: width, height: height,
      cursor: {sync: {key: "run" + st.id}, drag: {x: true, y: false}},
      scales: {x: {time: false}, y: log ? {distr: 3, log: base} : {}},
      legend: {live: true},
      series: series,
      axes: [{values: (u, splits) => splits.map(v => compact(v))},
             {size: 70, space: p.title === "loss" ? 30 : 15,
              values: (u, splits) => splits.map(v => v == null ? "" : fmt(v))}],
      hooks: {drawAxes: [bandsHook(st, p, st.data.findings)], draw: [marksHook(st, p, p.series, st.data.findings)],
              setScale: [(u, key) => { if (key === "x") { syncX(st, u); levelOfDetail(st, p, u); } }]},
      plugins: [interaction(st)],
    };
  }

  function compact(v) {
    if (v == null) return "";
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toPrecision(3).replace(/\.?0+$/, "") + "M";
    if (a >= 1e4) return (v / 1e3).toPrecision(3).replace(/\.?0+$/, "") + "k";
    return String(Number(v.toPrecision(6)));
  }

  function interaction(st) {
    return {hooks: {ready: [u => {
      u.over.addEventListener("wheel", e => {
        if (!(e.altKey || e.ctrlKey || e.metaKey)) return;
        e.preventDefault();
        const x = u.posToVal(e.offsetX, "x"), mn = u.scales.x.min, mx = u.scales.x.max;
        const k = e.deltaY < 0 ? 0.75 : 1 / 0.75;
        setX(st.id, x - (x - mn) * k, x + (mx - x) * k);
      }, {passive: false});
      // shift-drag or middle-drag pans (caught on the root, before uPlot starts a selection)
      u.root.addEventListener("mousedown", e => {
        if (!(e.shiftKey || e.button === 1) || !u.over.contains(e.target)) return;
        e.preventDefault(); e.stopPropagation();
        const x0 = e.clientX, mn = u.scales.x.min, mx = u.scales.x.max;
        const per = (mx - mn) / (u.bbox.width / dpr());
        const move = ev => { const dx = (ev.clientX - x0) * per; setX(st.id, mn - dx, mx - dx, true); };
        const up = () => { document.removeEventListener("mousemove", move); document.removeEventListener("mouseup", up); };
        document.addEventListener("mousemove", move); document.addEventListener("mouseup", up);
      }, true);
    }]}};
  }

  function syncX(st, src) {
    if (st.syncing) return;
    st.syncing = true;
    const mn = src.scales.x.min, mx = src.scales.x.max;
    for (const p of st.panels) if (p.chart && p.chart !== src) p.chart.setScale("x", {min: mn, max: mx});
    st.syncing = false;
  }

  function setX(id, mn, mx, keepWidth) {
    const st = runs[id];
    if (!st || !st.panels.length) return;
    const lo = st.data.first, hi = st.data.last;
    if (keepWidth) {
      const w = mx - mn;
      if (mn < lo) { mn = lo; mx = lo + w; }
      if (mx > hi) { mx = hi; mn = hi - w; }
    }
    mn = Math.max(lo, mn); mx = Math.min(hi, mx);
    if (!(mx > mn)) { mn = lo; mx = hi > lo ? hi : lo + 1; }
    st.panels[0].chart.setScale("x", {min: mn, max: mx});
  }

  function chartWidth(el) { return Math.max(300, el.clientWidth - 4); }

  const FINE_BELOW = 0.35;
  /* Zoomed in to less than this share of the run, a panel draws the finding windows'
     extra points too; the whole run is drawn from the per-bucket extremes alone. */

  function makePanel(st, p, el, log) {
    const height = p.title === "loss" ? 300 : 130;
    p.fine = false;
    p.detailed = p.series.some(s => s.detailed);
    p.cols = table(p.series, false).cols.map(c => Object.assign(c, {smoothable: p.title === "loss"}));
    if (p.title === "loss") {
      p.series.forEach((s, i) => {
        const ci = 1 + p.cols.findIndex(c => c.metric === i && c.kind === "live");
        p.cols.push({metric: i, kind: "smooth", source: ci});
      });
    }
    p.data = panelData(st, p);
    return new uPlot(panelOpts(st, p, chartWidth(el), height, log), p.data, el);
  }

  function panelData(st, p) {
    const data = table(p.series, p.fine).data;
    p.cols.forEach(c => { if (c.kind === "smooth") data.push(new Array(data[0].length)); });
    p.data = data;
    refreshSmooth(st, p);
    return data;
  }

  function levelOfDetail(st, p, u) {
    if (!p.detailed) return;
    const fine = (u.scales.x.max - u.scales.x.min) < FINE_BELOW * (st.data.last - st.data.first);
    if (fine === p.fine) return;
    p.fine = fine;
    const data = panelData(st, p), mn = u.scales.x.min, mx = u.scales.x.max;
    queueMicrotask(() => { u.setData(data, false); u.setScale("x", {min: mn, max: mx}); });
  }

  function refreshSmooth(st, p) {
    if (p.title !== "loss") return;
    p.cols.forEach((c, k) => {
      if (c.kind === "smooth") p.data[k + 1] = st.smooth > 0 ? smooth(p.data[c.source], st.smooth) : new Array(p.data[0].length);
    });
  }

  function build(id) {
    const st = runs[id] || (runs[id] = {id: id, built: false});
    if (st.built) return st;
    st.built = true;
    st.section = document.getElementById("run-" + id);
    st.data = load(id);
    st.smooth = st.data.smooth || 0; st.selected = null;  // the default follows the run's noise
    st.panels = st.data.panels;
    const box = st.section.querySelector(".charts");
    box.textContent = "";
    const lossPanel = st.panels.find(p => p.title === "loss");
    st.log = !!(lossPanel && lossPanel.positive && lossLogDefault(lossPanel));
    const logBox = st.section.querySelector(".log-toggle");
    logBox.checked = st.log; logBox.disabled = !(lossPanel && lossPanel.positive);
    if (!st.panels.length) {
      box.innerHTML = '<p class="note">no loss, grad-norm, LR or loss-scale metric to draw (the chart picker adds any other)</p>';
      box.style.minHeight = "0";
    }
    for (const p of st.panels) {
      // loss scale halves and doubles: log 2; grad norm and LR read best linear in a zoom
      const log = p.title === "loss" ? st.log : (p.positive && p.title === "loss scale");
      placePanel(st, p, box, log);
    }
    wireControls(st);
    const slider = st.section.querySelector(".smooth");
    slider.value = String(st.smooth);
    slider.nextElementSibling.textContent = st.smooth ? st.smooth + " (from the run's noise)" : "0";
    buildZooms(st);
    return st;
  }

  function placePanel(st, p, box, log) {
    const title = document.createElement("div");
    title.className = "panel-title"; title.textContent = p.label || p.title;
    const el = document.createElement("div");
    el.className = "panel"; el.dataset.panel = p.title;
    box.append(title, el);
    p.el = el;
    p.chart = makePanel(st, p, el, log);
  }

  /* The metric picker: any metric the run logged that no panel draws becomes a chart of its
     own, on the run's step axis, with its findings as bands. Its decimated points sit in
     <script id="more-N">, parsed the first time one is added. */
  function addMetric(id, name) {
    const st = build(id);
    if (st.panels.some(p => p.series.some(s => s.name === name))) return null;
    if (!st.more) {
      const el = document.getElementById("more-" + id);
      st.more = el ? JSON.parse(el.textContent).series.map(decodeSeries) : [];
    }
    const s = st.more.find(x => x.name === name);
    if (!s) return null;
    const p = {title: name, label: name + " (" + s.role + ")", series: [s], positive: s.positive, added: true};
    const box = st.section.querySelector(".charts");
    const note = box.querySelector(".note");
    if (note) { note.remove(); box.style.minHeight = ""; }
    const ref = st.panels[0] && st.panels[0].chart;
    st.panels.push(p);
    placePanel(st, p, box, false);
    if (ref) p.chart.setScale("x", {min: ref.scales.x.min, max: ref.scales.x.max});
    const opt = [...st.section.querySelectorAll("select.add-metric option")].find(o => o.value === name);
    if (opt) { opt.disabled = true; opt.textContent += " — added"; }
    return p;
  }

  function drawAll() {
    // printing or a headless capture: every chart and zoom drawn now, not when scrolled to
    document.querySelectorAll(".charts[data-run]").forEach(b => build(Number(b.dataset.run)));
    for (const st of Object.values(runs)) {
      if (st.built) st.section.querySelectorAll(".zoom[data-zoom]").forEach(el => buildZoom(st, el));
    }
  }

  function lossLogDefault(p) {
    // log when the loss spans more than ~3x (an early fall would flatten the rest)
    let mn = Infinity, mx = -Infinity;
    for (const s of p.series) for (const v of s.live[1]) { if (v < mn) mn = v; if (v > mx) mx = v; }
    return mn > 0 && mx / mn > 3;
  }

  function wireControls(st) {
    const sec = st.section;
    const slider = sec.querySelector(".smooth"), out = slider.nextElementSibling;
    slider.addEventListener("input", () => {
      st.smooth = Number(slider.value); out.textContent = slider.value;
      const p = st.panels.find(q => q.title === "loss");
      if (!p) return;
      refreshSmooth(st, p);
      p.cols.forEach((c, k) => { if (c.kind === "smooth") p.chart.setSeries(k + 1, {show: st.smooth > 0}); });
      p.chart.setData(p.data, false);
    });
    sec.querySelector(".log-toggle").addEventListener("change", e => {
      st.log = e.target.checked;
      const p = st.panels.find(q => q.title === "loss");
      if (!p) return;
      const mn = p.chart.scales.x.min, mx = p.chart.scales.x.max;
      p.chart.destroy();
      p.chart = new uPlot(panelOpts(st, p, chartWidth(p.el), 300, st.log), p.data, p.el);
      p.chart.setScale("x", {min: mn, max: mx});
    });
    sec.querySelector(".reset").addEventListener("click", () => setX(st.id, st.data.first, st.data.last));
  }

  // ------------------------------------------------------------------ finding zooms

  function seriesFor(st, metric) {
    for (const p of st.panels) for (const s of p.series) if (s.name === metric) return s;
    return st.data.zoom_only.find(s => s.name === metric) || null;
  }

  function slice(pair, lo, hi) {
    const xs = [], ys = [];
    for (let i = 0; i < pair[0].length; i++) {
      const x = pair[0][i];
      if (x >= lo && x <= hi) { xs.push(x); ys.push(pair[1][i]); }
    }
    return [xs, ys];
  }

  function buildZooms(st) {
    // each card's chart is drawn as the card comes near the viewport (a run can have hundreds)
    const els = st.section.querySelectorAll(".zoom[data-zoom]");
    if (EAGER || !("IntersectionObserver" in window)) { els.forEach(el => buildZoom(st, el)); return; }
    const io = new IntersectionObserver(entries => {
      for (const en of entries) if (en.isIntersecting) { io.unobserve(en.target); buildZoom(st, en.target); }
    }, {rootMargin: "400px 0px"});
    els.forEach(el => io.observe(el));
  }

  function buildZoom(st, el) {
    if (el.dataset.drawn) return;
    el.dataset.drawn = "1";
    const f = st.data.findings.find(v => v.id === el.dataset.zoom);
    if (!f) return;
    const main = st.data.main;
    const s = (f.metric && seriesFor(st, f.metric)) || (main && seriesFor(st, main)) ||
      (st.panels[0] && st.panels[0].series[0]);
    if (!s) return;
    const parts = [slice(s.live, f.lo, f.hi)];
    const series = [{label: "step", value: (u, v) => fmtStep(v)},
      {label: s.name, stroke: COLORS[0], width: 1.5, spanGaps: true, value: (u, v) => fmt(v),
       points: {show: parts[0][0].length < 120, size: 4}}];
    if (s.sup) {
      parts.push(slice(s.sup, f.lo, f.hi));
      series.push({label: "superseded", width: 0, stroke: SUPERSEDED, value: (u, v) => fmt(v), paths: () => null,
        points: {show: true, space: 0, size: 3, fill: SUPERSEDED, stroke: SUPERSEDED}});
    }
    const axes = [{values: (u, sp) => sp.map(v => compact(v))},
                  {size: 56, values: (u, sp) => sp.map(v => v == null ? "" : fmt(v))}];
    const grads = st.panels.find(p => p.title === "grad norm");
    if (grads && (s.role === "loss" || s.role === "eval_loss")) {  // the usual precursor, on its own axis
      const g = grads.series[0];
      parts.push(slice(g.live, f.lo, f.hi));
      series.push({label: g.name, scale: "g", stroke: "#8a8a8a", width: 1, dash: [4, 3], spanGaps: true,
        value: (u, v) => fmt(v), points: {show: false}});
      axes.push({scale: "g", side: 1, size: 50, grid: {show: false}, stroke: "#8a8a8a",
        values: (u, sp) => sp.map(v => v == null ? "" : fmt(v))});
    }
    if (!parts.some(q => q[0].length)) { el.innerHTML = '<p class="note">no finite point of ' + escapeText(s.name) + " in this stretch</p>"; return; }
    const width = Math.max(300, el.clientWidth - 4);
    const fake = {id: st.id, data: {segments: st.data.segments, findings: [f]}, selected: f.id};
    el.chart = new uPlot({
      width: width, height: 210, series: series, legend: {live: true},
      cursor: {drag: {x: false, y: false}},
      scales: {x: {time: false, range: [f.lo, f.hi]}},
      axes: axes,
      hooks: {drawAxes: [bandsHook(fake, null, [f])], draw: [marksHook(fake, null, [s], [f])]},
    }, uPlot.join(parts), el);
  }

  function escapeText(t) { const d = document.createElement("div"); d.textContent = t; return d.innerHTML; }

  // ------------------------------------------------------------------ navigation

  function zoomTo(fid, scroll) {
    const id = Number(fid.slice(1).split("-")[0]);
    const sec = document.getElementById("run-" + id);
    if (!sec) return;
    sec.hidden = false;
    const st = build(id);
    const f = st.data.findings.find(v => v.id === fid);
    st.selected = fid;
    document.querySelectorAll(".finding.selected").forEach(el => el.classList.remove("selected"));
    const card = document.getElementById(fid);
    if (card && card.classList.contains("finding")) card.classList.add("selected");
    if (f) setX(id, f.lo, f.hi);
    for (const p of st.panels) p.chart.redraw(false);
    if (scroll !== false) {
      sec.scrollIntoView({block: "start"});  // html's scroll-padding keeps it clear of the filter bar
    }
  }

  document.addEventListener("change", e => {
    const pick = e.target.closest && e.target.closest("select.add-metric");
    if (!pick || !pick.value) return;
    const sec = pick.closest("section.run");
    addMetric(Number(sec.dataset.run), pick.value);
    pick.value = "";
  });

  document.addEventListener("click", e => {
    const kind = e.target.closest("button.kind");
    if (kind) { document.getElementById("f-kind").value = kind.dataset.kind; applyFilter(); return; }
    const open = e.target.closest("[data-open]");
    if (open) {
      const box = document.getElementById(open.dataset.open);
      if (box) { box.open = true; build(Number(box.id.split("-")[1])); }
      return;
    }
    const go = e.target.closest("[data-goto]");
    if (!go) return;
    e.preventDefault();
    zoomTo(go.dataset.goto);
    history.replaceState(null, "", "#" + go.dataset.goto);
  });

  // ------------------------------------------------------------------ filter

  function applyFilter() {
    const sev = document.getElementById("f-sev").value;
    const kind = document.getElementById("f-kind").value;
    const name = document.getElementById("f-name").value.trim().toLowerCase();
    let shown = 0, total = 0;
    document.querySelectorAll("tr[data-run], section[data-run]").forEach(el => {
      const d = el.dataset;
      const ok = (sev === "all" || (sev === "attention" ? d.sev !== "ok" : d.sev === sev)) &&
        (!kind || d.kinds.split(" ").includes(kind)) && (!name || d.name.includes(name));
      el.hidden = !ok;
      if (el.tagName === "TR") { total++; if (ok) shown++; }
    });
    document.getElementById("f-count").textContent = shown + " of " + total + " runs";
  }

  function init() {
    const filters = document.getElementById("filters");
    if (filters) {
      ["f-sev", "f-kind"].forEach(i => document.getElementById(i).addEventListener("change", applyFilter));
      document.getElementById("f-name").addEventListener("input", applyFilter);
      applyFilter();  // a browser that restored the filter's fields on reload gets what they say
    }
    const boxes = document.querySelectorAll(".charts[data-run]");
    window.addEventListener("beforeprint", drawAll);
    if (window.matchMedia) {
      const print = window.matchMedia("print");
      const onPrint = e => { if (e.matches) drawAll(); };
      if (print.addEventListener) print.addEventListener("change", onPrint); else if (print.addListener) print.addListener(onPrint);
    }
    if (EAGER) {
      drawAll();
    } else if ("IntersectionObserver" in window) {
      const io = new IntersectionObserver(entries => {
        for (const en of entries) if (en.isIntersecting) { io.unobserve(en.target); build(Number(en.target.dataset.run)); }
      }, {rootMargin: "600px 0px"});
      boxes.forEach(b => io.observe(b));
    } else {
      boxes.forEach(b => build(Number(b.dataset.run)));
    }
    let timer = null;
    window.addEventListener("resize", () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        for (const st of Object.values(runs)) if (st.built) for (const p of st.panels) {
          p.chart.setSize({width: chartWidth(p.el), height: p.chart.height});
        }
      }, 150);
    });
    const hash = location.hash.slice(1);
    if (/^f\d+-\d+$/.test(hash)) zoomTo(hash);
  }

  init();
})();
