// The flame graph page: reads the profile document (see data.rs), draws it on a canvas, and
// answers hover, click (zoom), search, the reverse view and, for two profiles, the difference.
"use strict";
(function () {
  const started = performance.now();

  // The profile document: JSON, or gzip-compressed JSON in base64 for a large profile.
  async function readProfile() {
    const element = document.getElementById("profile-data");
    if (element.dataset.encoding !== "gzip-base64") return JSON.parse(element.textContent);
    if (typeof DecompressionStream === "undefined") {
      throw new Error("this browser cannot inflate the compressed profile (no DecompressionStream)");
    }
    const text = atob(element.textContent.trim());
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  readProfile().then(
    (data) => start(data, { parseMs: performance.now() - started }),
    (error) => {
      document.getElementById("title").textContent = "Cannot read the profile: " + error.message;
      console.error(error);
    },
  );

  function start(data, timings) {

    const ROW = 18; // px per frame row
    const MIN_WIDTH = 0.4; // frames narrower than this (CSS px) are not drawn, nor their subtrees
    const FONT = '12px "DejaVu Sans Mono", Menlo, Consolas, monospace';
    const strings = data.strings;
    const table = data.functions;
    const COLUMNS = 6; // name, kind, library, file, shade, line
    const kinds = data.kinds;
    const profiles = data.profiles;
    const diff = profiles.length === 2;
    const hasCpu = data.hasCpu;
    const functionCount = table.length / COLUMNS;
    const PLACEHOLDER = kinds.findIndex((k) => k.label === "placeholder");

    const nameOf = (f) => (f < 0 ? "all" : strings[table[COLUMNS * f]]);
    const kindOf = (f) => (f < 0 ? PLACEHOLDER : table[COLUMNS * f + 1]);
    const stringOr = (i) => (i < 0 ? null : strings[i]);
    const libraryOf = (f) => (f < 0 ? null : stringOr(table[COLUMNS * f + 2]));
    const fileOf = (f) => (f < 0 ? null : stringOr(table[COLUMNS * f + 3]));
    const shadeOf = (f) => (f < 0 ? 0 : table[COLUMNS * f + 4]);
    const lineOf = (f) => (f < 0 ? 0 : table[COLUMNS * f + 5]);

    // Measures: weights of profile p (0 = NEW or the only one, 1 = BASE) in CPU ns (2p) or in
    // samples (2p + 1).
    const measureCount = profiles.length * 2;
    const measure = (profile, unit) => profile * 2 + (unit === "cpu" ? 0 : 1);

    // ---- trees -----------------------------------------------------------------------------
    // A tree is flat arrays in pre-order: fn, depth, parent, line, end (the index after the
    // subtree), self[m] and total[m] per measure, start[m] (x offset, by measure, made lazily).

    function finish(t) {
      const n = t.fn.length;
      t.n = n;
      t.end = new Int32Array(n);
      const open = [];
      let maxDepth = 0;
      for (let i = 0; i < n; i++) {
        const d = t.depth[i];
        if (d > maxDepth) maxDepth = d;
        while (open.length && t.depth[open[open.length - 1]] >= d) t.end[open.pop()] = i;
        open.push(i);
      }
      while (open.length) t.end[open.pop()] = n;
      t.maxDepth = maxDepth;
      t.total = t.self.map((s) => {
        const total = Float64Array.from(s);
        for (let i = n - 1; i > 0; i--) total[t.parent[i]] += total[i];
        return total;
      });
      t.start = [];
      return t;
    }

    function rootFirstTree() {
      const nodes = data.nodes;
      const n = nodes.function.length;
      const fn = Int32Array.from(nodes.function);
      const depth = new Int32Array(n);
      const parent = new Int32Array(n);
      const line = new Int32Array(n);
      parent[0] = -1;
      const last = [0];
      for (let i = 1; i < n; i++) {
        depth[i] = depth[i - 1] + 1 - nodes.up[i];
        parent[i] = last[depth[i] - 1];
        last[depth[i]] = i;
        line[i] = lineOf(fn[i]);
      }
      for (let k = 0, i = 0; k < nodes.lines.length; k += 2) {
        i += nodes.lines[k];
        line[i] = nodes.lines[k + 1];
      }
      const self = [];
      for (let p = 0; p < profiles.length; p++) {
        const cpu = new Float64Array(n), samples = new Float64Array(n);
        const list = nodes.self[p];
        for (let k = 0, i = 0; k < list.length; k += 3) {
          i += list[k];
          samples[i] = list[k + 1];
          cpu[i] = list[k + 2] * data.cpuScaleNs;
        }
        self.push(cpu, samples);
      }
      return finish({ fn, depth, line, parent, self });
    }

    // (parent, function) → child, an open-addressing table of integers: building the reverse
    // tree of a large profile with a Map of number keys took seconds.
    function childTable() {
      let capacity = 1 << 16, size = 0, mask = capacity - 1;
      let parents = new Int32Array(capacity).fill(-1), fns = new Int32Array(capacity), values = new Int32Array(capacity);
      const slot = (p, f) => {
        const h = Math.imul(p ^ Math.imul(f + 1, 0x85ebca77), 0x9e3779b1);
        return (h ^ (h >>> 15)) & mask;
      };
      function grow() {
        const [oldParents, oldFns, oldValues] = [parents, fns, values];
        capacity *= 2;
        mask = capacity - 1;
        parents = new Int32Array(capacity).fill(-1);
        fns = new Int32Array(capacity);
        values = new Int32Array(capacity);
        for (let s = 0; s < oldParents.length; s++) {
          if (oldParents[s] < 0) continue;
          let t = slot(oldParents[s], oldFns[s]);
          while (parents[t] >= 0) t = (t + 1) & mask;
          parents[t] = oldParents[s];
          fns[t] = oldFns[s];
          values[t] = oldValues[s];
        }
      }
      return {
        // The child of p for f, or -1.
        get(p, f) {
          for (let s = slot(p, f); parents[s] >= 0; s = (s + 1) & mask) {
            if (parents[s] === p && fns[s] === f) return values[s];
          }
          return -1;
        },
        // Records c as the child of p for f (not there yet).
        put(p, f, c) {
          if (2 * (size + 1) > capacity) grow();
          let s = slot(p, f);
          while (parents[s] >= 0) s = (s + 1) & mask;
          parents[s] = p;
          fns[s] = f;
          values[s] = c;
          size++;
        },
      };
    }

    // The callee-first tree: every sample's stack read from its leaf, leaves merged at the top.
    function reverseTree(t) {
      const children = childTable();
      const fn = [-1], parent = [-1], line = [0];
      const self = [];
      for (let m = 0; m < measureCount; m++) self.push([0]);
      for (let i = 1; i < t.n; i++) {
        let any = false;
        for (let m = 0; m < measureCount; m++) if (t.self[m][i] !== 0) any = true;
        if (!any) continue;
        let r = 0;
        for (let j = i; j > 0; j = t.parent[j]) {
          const f = t.fn[j];
          let c = children.get(r, f);
          if (c < 0) {
            c = fn.length;
            children.put(r, f, c);
            fn.push(f);
            parent.push(r);
            line.push(t.line[j]);
            for (let m = 0; m < measureCount; m++) self[m].push(0);
          } else if (line[c] !== t.line[j]) {
            line[c] = -1;
          }
          r = c;
        }
        for (let m = 0; m < measureCount; m++) self[m][r] += t.self[m][i];
      }
      const built = performance.now();
      const tree = finish(preorder(fn, parent, line, self));
      timings.reverseOrderMs = performance.now() - built;
      return tree;
    }

    // Nodes given by parent links, in pre-order with children by function.
    function preorder(fn, parent, line, self) {
      const n = fn.length;
      const first = new Int32Array(n + 1);
      for (let i = 1; i < n; i++) first[parent[i] + 1]++;
      for (let i = 0; i < n; i++) first[i + 1] += first[i];
      const fill = first.slice(0, n);
      const children = new Int32Array(Math.max(n - 1, 0));
      for (let i = 1; i < n; i++) children[fill[parent[i]]++] = i;
      for (let p = 0; p < n; p++) {
        if (first[p + 1] - first[p] > 1) {
          children.subarray(first[p], first[p + 1]).sort((a, b) => fn[a] - fn[b]);
        }
      }
      const order = new Int32Array(n);
      const newIndex = new Int32Array(n);
      const stack = [0];
      let k = 0;
      while (stack.length) {
        const i = stack.pop();
        newIndex[i] = k;
        order[k++] = i;
        for (let c = first[i + 1] - 1; c >= first[i]; c--) stack.push(children[c]);
      }
      const out = {
        fn: new Int32Array(n),
        depth: new Int32Array(n),
        parent: new Int32Array(n),
        line: new Int32Array(n),
        self: self.map(() => new Float64Array(n)),
      };
      for (let k2 = 0; k2 < n; k2++) {
        const i = order[k2];
        out.fn[k2] = fn[i];
        out.line[k2] = line[i];
        out.parent[k2] = k2 === 0 ? -1 : newIndex[parent[i]];
        out.depth[k2] = k2 === 0 ? 0 : out.depth[out.parent[k2]] + 1;
        for (let m = 0; m < self.length; m++) out.self[m][k2] = self[m][i];
      }
      return out;
    }

    function startsOf(t, m) {
      if (!t.start[m]) {
        const start = new Float64Array(t.n);
        const used = new Float64Array(t.n);
        const total = t.total[m];
        for (let i = 1; i < t.n; i++) {
          const p = t.parent[i];
          start[i] = start[p] + used[p];
          used[p] += total[i];
        }
        t.start[m] = start;
      }
      return t.start[m];
    }

    // ---- state -------------------------------------------------------------------------------
    const trees = { tree: rootFirstTree(), reverse: null };
    const state = {
      view: "tree",
      unit: hasCpu ? data.unit : "samples",
      shape: 0,
      colour: diff ? "total" : "kind",
      zoom: 0,
      match: null, // Uint8Array by function, or null
    };
    const tree = () => trees[state.view];
    const widthMeasure = () => measure(state.shape, state.unit);

    // ---- formatting --------------------------------------------------------------------------
    const grouped = (n) => Math.round(n).toLocaleString("en-US");
    const seconds = (ns) => (ns / 1e9).toFixed(3) + " s";
    const percent = (part, whole) => (whole > 0 ? ((100 * part) / whole).toFixed(2) : "0.00") + "%";
    const points = (pp) => (pp > 0 ? "+" : pp < 0 ? "\u2212" : "\u00b1") + Math.abs(pp).toFixed(2) + " pp";
    function amount(ns, samples) {
      return hasCpu ? `${seconds(ns)} CPU, ${grouped(samples)} samples` : `${grouped(samples)} samples`;
    }

    // ---- colours -----------------------------------------------------------------------------
    const kindColours = kinds.map((k) => `rgb(${k.rgb[0]},${k.rgb[1]},${k.rgb[2]})`);
    const functionColours = new Array(functionCount);
    function frameColour(f) {
      if (f < 0) return "rgb(205,205,205)";
      let c = functionColours[f];
      if (c === undefined) {
        const rgb = kinds[kindOf(f)].rgb;
        const s = shadeOf(f);
        c = `rgb(${Math.max(rgb[0] - s, 0)},${Math.max(rgb[1] - s, 0)},${Math.max(rgb[2] - s, 0)})`;
        functionColours[f] = c;
      }
      return c;
    }
    const fadedColours = new Map();
    function faded(colour) {
      let f = fadedColours.get(colour);
      if (f === undefined) {
        const [r, g, b] = colour.match(/\d+/g).map(Number);
        const mix = (v) => Math.round(v + (246 - v) * 0.72);
        f = `rgb(${mix(r)},${mix(g)},${mix(b)})`;
        fadedColours.set(colour, f);
      }
      return f;
    }
    // The change of a node's share of its recording's total, in percentage points: of its total
    // (self and below) or of its self weight.
    function change(t, i, which) {
      const unitOffset = state.unit === "cpu" ? 0 : 1;
      const w = which === "self" ? t.self : t.total;
      const newTotal = t.total[unitOffset][0], baseTotal = t.total[2 + unitOffset][0];
      const share = (v, all) => (all > 0 ? (100 * v) / all : 0);
      return share(w[unitOffset][i], newTotal) - share(w[2 + unitOffset][i], baseTotal);
    }
    const largestChange = new Map();
    function largest(t) {
      const key = `${state.view}/${state.unit}/${state.colour}`;
      let v = largestChange.get(key);
      if (v === undefined) {
        v = 0;
        for (let i = 1; i < t.n; i++) v = Math.max(v, Math.abs(change(t, i, state.colour)));
        largestChange.set(key, v);
      }
      return v;
    }
    function changeColour(pp, max) {
      const x = max > 0 ? Math.min(Math.abs(pp) / max, 1) : 0;
      const to = pp > 0 ? [225, 50, 40] : [45, 95, 225];
      const mix = (a, b) => Math.round(a + (b - a) * Math.sqrt(x));
      return `rgb(${mix(238, to[0])},${mix(238, to[1])},${mix(238, to[2])})`;
    }
    function colourOf(t, i) {
      if (diff && state.colour !== "kind") return changeColour(change(t, i, state.colour), largest(t));
      return frameColour(t.fn[i]);
    }

    // ---- drawing -----------------------------------------------------------------------------
    const canvas = document.getElementById("flame");
    const ctx = canvas.getContext("2d", { alpha: false });
    const chart = document.getElementById("chart");
    let charWidth = 7.2;
    let cssWidth = 0;

    function resize() {
      const t = tree();
      const dpr = window.devicePixelRatio || 1;
      cssWidth = Math.max(chart.clientWidth - 24, 100);
      const cssHeight = (t.maxDepth + 1) * ROW;
      canvas.style.width = cssWidth + "px";
      canvas.style.height = cssHeight + "px";
      canvas.width = Math.round(cssWidth * dpr);
      canvas.height = Math.round(cssHeight * dpr);
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.font = FONT;
      ctx.textBaseline = "middle";
      charWidth = ctx.measureText("MMMMMMMMMM").width / 10;
    }

    // Calls visit(i, x, width) for every node drawn: the zoomed node's ancestors across the whole
    // width, then its subtree scaled to the width.
    function forEachDrawn(visit) {
      const t = tree();
      const m = widthMeasure();
      const total = t.total[m], start = startsOf(t, m);
      const z = state.zoom;
      if (!(total[z] > 0)) return;
      for (let a = t.parent[z]; a >= 0; a = t.parent[a]) visit(a, 0, cssWidth, true);
      const scale = cssWidth / total[z], origin = start[z];
      const end = t.end[z];
      for (let i = z; i < end; ) {
        const w = total[i] * scale;
        if (w < MIN_WIDTH) {
          i = t.end[i];
          continue;
        }
        visit(i, (start[i] - origin) * scale, w, false);
        i++;
      }
    }

    function label(name, width) {
      const room = Math.floor((width - 6) / charWidth);
      if (room < 3) return null;
      return name.length <= room ? name : name.slice(0, room - 1) + "\u2026";
    }

    function draw() {
      const t = tree();
      const drawStart = performance.now();
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      const searching = state.match !== null;
      let drawn = 0;
      forEachDrawn((i, x, w, ancestor) => {
        drawn++;
        const f = t.fn[i];
        const y = t.depth[i] * ROW;
        const hit = searching && f >= 0 && state.match[f] === 1;
        let colour = colourOf(t, i);
        if ((searching && !hit) || ancestor) colour = faded(colour);
        ctx.fillStyle = colour;
        ctx.fillRect(x, y, w > 2 ? w - 1 : w, ROW - 1);
        if (hit) {
          ctx.strokeStyle = "#8a1f8a";
          ctx.lineWidth = 2;
          ctx.strokeRect(x + 1, y + 1, Math.max(w - 3, 0.5), ROW - 3);
        }
        const text = label(nameOf(f), w);
        if (text !== null) {
          ctx.fillStyle = ancestor || (searching && !hit) ? "#666" : "#111";
          ctx.fillText(text, x + 3, y + ROW / 2);
        }
      });
      if (drawn === 0) {
        ctx.fillStyle = "#666";
        ctx.fillText(diff && state.shape === 1 ? "No samples in BASE here" : "No samples", 8, ROW / 2);
      }
      timings.lastDrawMs = performance.now() - drawStart;
      timings.framesDrawn = drawn;
    }

    // The node under (x, y) in canvas CSS pixels, or -1.
    function nodeAt(x, y) {
      const t = tree();
      const m = widthMeasure();
      const total = t.total[m], start = startsOf(t, m);
      const z = state.zoom;
      const row = Math.floor(y / ROW);
      if (row < 0 || x < 0 || x >= cssWidth || !(total[z] > 0)) return -1;
      if (row <= t.depth[z]) {
        let a = z;
        while (t.depth[a] > row) a = t.parent[a];
        return a;
      }
      const scale = cssWidth / total[z], origin = start[z];
      let i = z;
      while (t.depth[i] < row) {
        let found = -1;
        for (let c = i + 1; c < t.end[i]; c = t.end[c]) {
          const x0 = (start[c] - origin) * scale, w = total[c] * scale;
          if (w >= MIN_WIDTH && x >= x0 && x < x0 + w) {
            found = c;
            break;
          }
        }
        if (found < 0) return -1;
        i = found;
      }
      return i;
    }

    // ---- text around the graph ---------------------------------------------------------------
    function setTotals() {
      const el = document.getElementById("totals");
      el.textContent = "";
      profiles.forEach((p, k) => {
        const line = document.createElement("div");
        const parts = [];
        const who = diff ? (k === 0 ? "NEW " : "BASE ") : "";
        parts.push(`${who}${p.name}: ${amount(p.total[1], p.total[0])} in total`);
        if (p.source !== "jdk.CPUTimeSample") parts.push(`from ${p.source} (no CPU time: widths by samples)`);
        if (p.lost[0] > 0) {
          const unknown = p.lostCpuUnknown > 0 ? `, ${grouped(p.lostCpuUnknown)} of them without CPU time` : "";
          parts.push(`lost: ${amount(p.lost[1], p.lost[0])}${unknown}`);
        }
        const missing = [
          ["no Java stack", p.failed],
          ["native stack truncated", p.nativeTruncated],
          ["native frames unknown", p.nativeUnknown],
          ["Java stack truncated", p.javaTruncated],
        ].filter(([, w]) => w[0] > 0);
        if (missing.length) {
          parts.push("placeholders: " + missing.map(([what, w]) => `${what} ${grouped(w[0])} samples (${percent(w[0], p.total[0])})`).join(", "));
        }
        line.textContent = parts.join(" \u00b7 ");
        el.appendChild(line);
      });
      if (diff) {
        const t = trees.tree;
        const m = measure(0, state.unit), b = measure(1, state.unit);
        let count = 0, weight = 0;
        for (let i = 1; i < t.n; ) {
          if (t.total[m][i] === 0 && t.total[b][i] > 0) {
            count++;
            weight += t.total[b][i];
            i = t.end[i];
          } else i++;
        }
        const line = document.createElement("div");
        line.textContent = `Colours: change of each frame's share of its own recording's total (red: grew, blue: shrank). ` +
          (count > 0 ? `${grouped(count)} call paths only in BASE (${percent(weight, t.total[b][0])} of BASE): Shape BASE draws them, search finds them.` : "Every call path of BASE is in NEW.");
        el.appendChild(line);
      }
    }

    function setLegend() {
      const el = document.getElementById("legend");
      el.textContent = "";
      const item = (swatchClass, background, text) => {
        const span = document.createElement("span");
        span.className = "item";
        const sw = document.createElement("span");
        sw.className = swatchClass;
        if (background) sw.style.background = background;
        span.appendChild(sw);
        span.appendChild(document.createTextNode(text));
        el.appendChild(span);
        return span;
      };
      if (diff && state.colour !== "kind") {
        const max = largest(tree());
        const s = item("scale", null, `${points(-max)} \u2026 ${points(max)} of the total (${state.colour === "self" ? "self" : "self and callees"})`);
        s.dataset.kind = "change";
        return;
      }
      const present = new Set();
      for (let f = 0; f < functionCount; f++) present.add(kindOf(f));
      kinds.forEach((k, i) => {
        if (present.has(i)) item("swatch", kindColours[i], k.description).dataset.kind = k.label;
      });
    }

    function setCrumbs() {
      const el = document.getElementById("crumbs");
      el.textContent = "";
      const t = tree();
      if (state.zoom === 0) return;
      const path = [];
      for (let a = state.zoom; a >= 0; a = t.parent[a]) path.unshift(a);
      el.appendChild(document.createTextNode("Zoomed: "));
      path.forEach((a, k) => {
        if (k > 0) {
          const sep = document.createElement("span");
          sep.className = "sep";
          sep.textContent = "\u203a";
          el.appendChild(sep);
        }
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = nameOf(t.fn[a]);
        b.addEventListener("click", () => zoom(a));
        el.appendChild(b);
      });
    }

    // ---- search ------------------------------------------------------------------------------
    const searchBox = document.getElementById("search");
    const regexBox = document.getElementById("regex");
    const caseBox = document.getElementById("case");
    const matchLine = document.getElementById("match");

    function compileSearch() {
      const text = searchBox.value;
      searchBox.classList.remove("bad");
      if (text === "") return null;
      const pattern = regexBox.checked ? text : text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      let re;
      try {
        re = new RegExp(pattern, caseBox.checked ? "" : "i");
      } catch (e) {
        searchBox.classList.add("bad");
        return "invalid";
      }
      const match = new Uint8Array(functionCount);
      for (let f = 0; f < functionCount; f++) {
        const library = libraryOf(f);
        if (re.test(nameOf(f)) || (library !== null && re.test(library))) match[f] = 1;
      }
      return match;
    }

    // Weights of the samples under node `from` whose stack has a matching frame, each sample once.
    function matchedUnder(t, from) {
      const sums = new Float64Array(measureCount);
      for (let a = from; a > 0; a = t.parent[a]) {
        if (state.match[t.fn[a]] === 1) {
          for (let m = 0; m < measureCount; m++) sums[m] = t.total[m][from];
          return sums;
        }
      }
      for (let i = from + 1; i < t.end[from]; ) {
        if (state.match[t.fn[i]] === 1) {
          for (let m = 0; m < measureCount; m++) sums[m] += t.total[m][i];
          i = t.end[i];
        } else i++;
      }
      return sums;
    }

    function setMatch(invalid) {
      matchLine.textContent = "";
      for (const key of Object.keys(matchLine.dataset)) delete matchLine.dataset[key];
      if (invalid) {
        matchLine.textContent = "Not a valid regular expression.";
        return;
      }
      if (state.match === null) return;
      const t = tree();
      const sums = matchedUnder(t, 0);
      const zoomed = state.zoom !== 0 ? matchedUnder(t, state.zoom) : null;
      const u = state.unit === "cpu" ? 0 : 1;
      const parts = [];
      profiles.forEach((p, k) => {
        const m = 2 * k + u;
        const who = diff ? (k === 0 ? "NEW " : "BASE ") : "";
        let s = `${who}${percent(sums[m], t.total[m][0])} of all ${state.unit === "cpu" ? "CPU time" : "samples"} (${amount(sums[2 * k], sums[2 * k + 1])} of ${amount(t.total[2 * k][0], t.total[2 * k + 1][0])})`;
        if (zoomed !== null && t.total[m][state.zoom] > 0) s += `, ${percent(zoomed[m], t.total[m][state.zoom])} of the zoomed frame`;
        parts.push(s);
      });
      const b = document.createElement("b");
      b.textContent = "Matched: ";
      matchLine.appendChild(b);
      matchLine.appendChild(document.createTextNode(parts.join("; ")));
      matchLine.dataset.cpuNs = String(sums[0]);
      matchLine.dataset.samples = String(sums[1]);
      if (diff) {
        matchLine.dataset.baseCpuNs = String(sums[2]);
        matchLine.dataset.baseSamples = String(sums[3]);
      }
    }

    function search() {
      const match = compileSearch();
      state.match = match === "invalid" ? null : match;
      setMatch(match === "invalid");
      draw();
    }

    // ---- tooltip -----------------------------------------------------------------------------
    const tooltip = document.getElementById("tooltip");

    function describe(t, i) {
      const f = t.fn[i];
      const lines = [];
      const where = [];
      if (f >= 0) where.push(kinds[kindOf(f)].description);
      const library = libraryOf(f);
      if (library !== null) where.push(library);
      const file = fileOf(f);
      const line = t.line[i];
      if (file !== null) where.push(line > 0 ? `${file}:${line}` : line < 0 ? `${file} (several lines)` : file);
      else if (line > 0) where.push(`line ${line}`);
      else if (line < 0) where.push("several lines");
      const p = t.parent[i];
      profiles.forEach((prof, k) => {
        const cpu = t.total[2 * k][i], samples = t.total[2 * k + 1][i];
        const m = 2 * k + (state.unit === "cpu" ? 0 : 1);
        const who = diff ? (k === 0 ? "NEW:  " : "BASE: ") : "";
        let s = `${who}${amount(cpu, samples)} \u00b7 ${percent(t.total[m][i], t.total[m][0])} of total`;
        if (p >= 0) s += ` \u00b7 ${percent(t.total[m][i], t.total[m][p])} of parent`;
        const selfCpu = t.self[2 * k][i], selfSamples = t.self[2 * k + 1][i];
        if (selfSamples > 0 || selfCpu > 0) s += `\nself ${amount(selfCpu, selfSamples)} (${percent(t.self[m][i], t.total[m][0])} of total)`;
        lines.push(s);
      });
      if (diff) {
        lines.push(`change: ${points(change(t, i, "total"))} of the total, self ${points(change(t, i, "self"))} (shares of each recording's own total)`);
      }
      return { name: nameOf(f), where: where.join(" \u00b7 "), text: lines.join("\n") };
    }

    function showTooltip(i, clientX, clientY) {
      const d = describe(tree(), i);
      tooltip.textContent = "";
      const name = document.createElement("div");
      name.className = "name";
      name.textContent = d.name;
      tooltip.appendChild(name);
      if (d.where) {
        const where = document.createElement("div");
        where.className = "where";
        where.textContent = d.where;
        tooltip.appendChild(where);
      }
      const text = document.createElement("div");
      text.textContent = d.text;
      tooltip.appendChild(text);
      tooltip.hidden = false;
      const pad = 14;
      const r = tooltip.getBoundingClientRect();
      let x = clientX + pad, y = clientY + pad;
      if (x + r.width > window.innerWidth) x = Math.max(clientX - pad - r.width, 0);
      if (y + r.height > window.innerHeight) y = Math.max(clientY - pad - r.height, 0);
      tooltip.style.left = x + "px";
      tooltip.style.top = y + "px";
    }

    // ---- interaction -------------------------------------------------------------------------
    function zoom(i) {
      const t = tree();
      state.zoom = i >= 0 && i < t.n && t.total[widthMeasure()][i] > 0 ? i : 0;
      setCrumbs();
      setMatch(false);
      draw();
    }

    function setView(view) {
      if (view === state.view) return;
      if (view === "reverse" && trees.reverse === null) {
        const begun = performance.now();
        trees.reverse = reverseTree(trees.tree);
        timings.reverseBuildMs = performance.now() - begun;
        timings.reverseNodes = trees.reverse.n;
      }
      state.view = view;
      state.zoom = 0;
      resize();
      setCrumbs();
      setLegend();
      setMatch(false);
      draw();
    }

    const canvasPoint = (e) => {
      const r = canvas.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    canvas.addEventListener("mousemove", (e) => {
      const [x, y] = canvasPoint(e);
      const i = nodeAt(x, y);
      if (i < 0) tooltip.hidden = true;
      else showTooltip(i, e.clientX, e.clientY);
    });
    canvas.addEventListener("mouseleave", () => (tooltip.hidden = true));
    canvas.addEventListener("click", (e) => {
      const [x, y] = canvasPoint(e);
      const i = nodeAt(x, y);
      if (i >= 0) zoom(i);
    });
    document.getElementById("reset").addEventListener("click", () => zoom(0));

    // The button groups: one setting each (data-setting), one value per button (data-value).
    const apply = {
      view: (v) => setView(v),
      unit: (v) => {
        state.unit = v;
        zoom(state.zoom);
        setTotals();
        setLegend();
      },
      shape: (v) => {
        state.shape = Number(v);
        zoom(state.zoom);
      },
      colour: (v) => {
        state.colour = v;
        setLegend();
        draw();
      },
    };
    function showSettings() {
      for (const group of document.querySelectorAll(".group[data-setting]")) {
        for (const b of group.querySelectorAll("button")) {
          b.classList.toggle("on", String(state[group.dataset.setting]) === b.dataset.value);
        }
      }
    }
    for (const group of document.querySelectorAll(".group[data-setting]")) {
      const setting = group.dataset.setting;
      if (setting === "shape" || setting === "colour") group.hidden = !diff;
      for (const b of group.querySelectorAll("button")) {
        if (setting === "unit" && b.dataset.value === "cpu" && !hasCpu) b.disabled = true;
        b.addEventListener("click", () => {
          if (String(state[setting]) !== b.dataset.value) apply[setting](b.dataset.value);
          showSettings();
        });
      }
    }
    showSettings();
    let searchTimer = 0;
    searchBox.addEventListener("input", () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(search, functionCount > 20000 ? 150 : 0);
    });
    regexBox.addEventListener("change", search);
    caseBox.addEventListener("change", search);
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        if (document.activeElement === searchBox && searchBox.value !== "") {
          searchBox.value = "";
          search();
        } else {
          zoom(0);
        }
      } else if (e.key === "/" && document.activeElement !== searchBox) {
        e.preventDefault();
        searchBox.focus();
      }
    });
    let resizeTimer = 0;
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        resize();
        draw();
      }, 50);
    });

    // ---- start -------------------------------------------------------------------------------
    document.getElementById("title").textContent = data.title;
    setTotals();
    setLegend();
    resize();
    draw();
    timings.firstDrawMs = timings.lastDrawMs;
    timings.readyMs = performance.now() - started;
    timings.nodes = trees.tree.n;
    timings.functions = functionCount;

    // For scripts and tests: where a frame is drawn (in viewport CSS pixels), what is zoomed.
    window.flamegraph = {
      timings,
      frames(name) {
        const t = tree();
        const r = canvas.getBoundingClientRect();
        const out = [];
        forEachDrawn((i, x, w) => {
          if (nameOf(t.fn[i]) === name) {
            out.push({ x: r.left + x, y: r.top + t.depth[i] * ROW, width: w, height: ROW - 1, depth: t.depth[i] });
          }
        });
        return out;
      },
      zoomed: () => nameOf(tree().fn[state.zoom]),
      view: () => state.view,
    };
    document.body.dataset.ready = "true";
  }
})();
