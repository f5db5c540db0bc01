// memhint memory summary webview. Plain JS, no framework, no remote content: the extension posts a view
// model (src/extension/webview/messages.ts) and this script draws it with DOM and SVG.
// @ts-check
(function () {
  'use strict';
  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const app = /** @type {HTMLElement} */ (document.getElementById('app'));
  const SVG = 'http://www.w3.org/2000/svg';

  /** @type {{model: any, sort: {key: string, descending: boolean}}} */
  let state = vscode.getState() || readInitial();
  let toast = null;

  function readInitial() {
    const el = document.getElementById('memhint-initial');
    try {
      return el ? JSON.parse(el.textContent || '') : { model: null, sort: { key: 'peak', descending: true } };
    } catch {
      return { model: null, sort: { key: 'peak', descending: true } };
    }
  }

  // A report in the page wins over a stale saved state (the page is rebuilt when the report changes).
  const initial = readInitial();
  // The reader's other choices (open sections, table sorts, compared figures, scroll place) survive too.
  if (initial.model) state = Object.assign({}, vscode.getState() || {}, { model: initial.model, sort: (vscode.getState() || initial).sort || initial.sort });

  const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function bytes(n, signed) {
    if (n === null || n === undefined || !isFinite(n)) return '—';
    const sign = n < 0 ? '-' : signed && n > 0 ? '+' : '';
    let v = Math.abs(n);
    let u = 0;
    while (v >= 1024 && u < UNITS.length - 1) {
      v /= 1024;
      u++;
    }
    if (u === 0) return sign + Math.round(v) + ' B';
    let t = v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
    if (t.indexOf('.') >= 0) t = t.replace(/\.?0+$/, '');
    return sign + t + ' ' + UNITS[u];
  }
  function ms(n) {
    if (n === null || n === undefined) return '—';
    return n < 1000 ? Math.round(n) + ' ms' : (n / 1000).toFixed(2).replace(/\.?0+$/, '') + ' s';
  }

  /** Tiny element builder: h('td', {class: 'num'}, 'text', child). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return el;
  }
  function s(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function section(id, title, ...body) {
    return h('section', { id: 'section-' + id, 'aria-labelledby': 'h-' + id }, h('h2', { id: 'h-' + id }, title), ...body);
  }

  function reveal(file, line) {
    vscode.postMessage({ type: 'reveal', file, line });
  }

  // ---- timeline ---------------------------------------------------------------------------------
  function timeline(model) {
    const tl = model.timeline;
    // Drawn at the panel's own width so labels keep their size in a narrow side panel.
    const W = Math.max(420, Math.min(1400, Math.floor(app.clientWidth || 900)));
    const H = W < 640 ? 220 : 260;
    const pad = { l: 70, r: 16, t: 12, b: 30 };
    const end = Math.max(tl.endMs, 1);
    const top = Math.max(tl.maxBytes, 1) * 1.08;
    const x = (t) => pad.l + (t / end) * (W - pad.l - pad.r);
    const y = (v) => H - pad.b - (v / top) * (H - pad.t - pad.b);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'timeline', role: 'img', 'aria-label': 'Live memory over time' });

    // Step labels are skipped where they would run into the previous one (short steps side by side):
    // each step's rectangle still names it in its tooltip.
    let labelsEnd = -Infinity;
    const CHAR_W = 6.6; // 11px UI font: a generous average glyph width
    tl.steps.forEach((st, i) => {
      const r = s('rect', { x: x(st.startMs), y: pad.t, width: Math.max(1, x(st.endMs) - x(st.startMs)), height: H - pad.t - pad.b, class: st.warmup ? 'step warmup' : 'step ' + (i % 2 ? 'odd' : 'even') });
      const title = s('title', {});
      title.textContent = (st.warmup ? 'warmup ' : 'step ') + st.step + ': ' + ms(st.endMs - st.startMs);
      r.appendChild(title);
      svg.appendChild(r);
      const text = (st.warmup ? 'w' : '#') + st.step;
      const lx = x(st.startMs) + 3;
      if (lx < labelsEnd + 4 || lx + text.length * CHAR_W > W - pad.r) return;
      const label = s('text', { x: lx, y: pad.t + 11, class: 'step-label' });
      label.textContent = text;
      svg.appendChild(label);
      labelsEnd = lx + text.length * CHAR_W;
    });
    for (let i = 0; i <= 4; i++) {
      const v = (top / 4) * i;
      svg.appendChild(s('line', { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: 'grid' }));
      const t = s('text', { x: pad.l - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' });
      t.textContent = bytes(v);
      svg.appendChild(t);
    }
    for (let i = 0; i <= 5; i++) {
      const t = (end / 5) * i;
      // The last label ends at the plot's right edge instead of centring past it (it was cut off).
      const label = s('text', { x: x(t), y: H - 10, class: 'axis', 'text-anchor': i === 5 ? 'end' : 'middle' });
      label.textContent = ms(t);
      svg.appendChild(label);
    }
    const series = [];
    function line(points, cls, name, step) {
      if (!points || points.length === 0) return;
      let d = '';
      let prevY = null;
      for (const [t, v] of points) {
        // Live memory is a step function: hold the level until the next event.
        if (step && prevY !== null) d += `L${x(t).toFixed(1)},${prevY.toFixed(1)}`;
        const py = y(v);
        d += (d === '' ? 'M' : 'L') + `${x(t).toFixed(1)},${py.toFixed(1)}`;
        prevY = py;
      }
      svg.appendChild(s('path', { d, class: 'series ' + cls }));
      series.push({ cls, name });
    }
    line(tl.allocator, 'allocator', 'live tensors (allocator)', true);
    if (tl.cuda) {
      line(tl.cuda.reserved, 'cuda-reserved', 'CUDA reserved', true);
      line(tl.cuda.allocated, 'cuda-allocated', 'CUDA allocated', true);
    }
    if (tl.os) {
      line(tl.os.rss, 'rss', 'process RSS (' + tl.os.source + ')', false);
      line(tl.os.gpu, 'gpu', 'GPU used (' + tl.os.source + ')', false);
    }
    if (tl.peak) {
      const c = s('circle', { cx: x(tl.peak.atMs), cy: y(tl.peak.bytes), r: 4, class: 'peak' });
      const title = s('title', {});
      title.textContent = 'peak ' + bytes(tl.peak.bytes) + ' at ' + ms(tl.peak.atMs);
      c.appendChild(title);
      svg.appendChild(c);
    }
    const legend = h('ul', { class: 'legend' }, series.map((se) => h('li', {}, h('span', { class: 'swatch ' + se.cls }), se.name)), tl.steps.length ? h('li', {}, h('span', { class: 'swatch step-swatch' }), 'step boundaries') : null);
    return section('timeline', 'Live memory', tl.allocator.length ? svg : h('p', { class: 'muted' }, 'No allocation events were recorded.'), legend);
  }

  // ---- per-line table ----------------------------------------------------------------------------
  const COLUMNS = [
    { key: 'location', label: 'Line', num: false },
    { key: 'calls', label: 'Calls', num: true, fmt: (v) => String(v) },
    { key: 'allocated', label: 'Allocated', num: true, fmt: (v) => bytes(v) },
    { key: 'net', label: 'Net', num: true, fmt: (v) => bytes(v, true) },
    { key: 'peak', label: 'Peak', num: true, fmt: (v) => bytes(v) },
    { key: 'savedForBackward', label: 'Saved for bwd', num: true, fmt: (v) => bytes(v) },
    { key: 'backward', label: 'Backward', num: true, fmt: (v) => bytes(v) },
    { key: 'liveAtPeak', label: 'Live at peak', num: true, fmt: (v) => bytes(v) },
    { key: 'leakPerStep', label: 'Leak/step', num: true, fmt: (v) => (v ? bytes(v) : '') },
  ];

  function sortedLines(model) {
    const { key, descending } = state.sort;
    const rows = model.lines.slice();
    rows.sort((a, b) => {
      let c;
      if (key === 'location') c = a.displayFile.localeCompare(b.displayFile) || a.line - b.line;
      else c = (a[key] || 0) - (b[key] || 0) || a.line - b.line;
      return descending ? -c : c;
    });
    return rows;
  }

  /** Rows that only add noise: frames that never ran in the steps (calls 0) and rows with every figure 0. */
  function isNoise(r) {
    return r.calls === 0 || COLUMNS.every((c) => !c.num || c.key === 'calls' || !r[c.key]);
  }

  function lineTable(model) {
    const all = sortedLines(model);
    const hidden = all.filter(isNoise).length;
    const rows = state.showAll ? all : all.filter((r) => !isNoise(r));
    const head = h(
      'tr',
      {},
      // The code second, where it cannot scroll off a narrow panel.
      COLUMNS.slice(0, 1).concat([null], COLUMNS.slice(1)).map((c) => {
        if (c === null) return h('th', { scope: 'col' }, 'Code');
        const active = state.sort.key === c.key;
        const sortLabel = active ? (state.sort.descending ? 'descending' : 'ascending') : 'none';
        return h(
          'th',
          { class: c.num ? 'num' : '', 'aria-sort': sortLabel, scope: 'col' },
          h('button', { class: 'sort', 'data-key': c.key, onclick: () => setSort(c.key) }, c.label, active ? (state.sort.descending ? ' ▼' : ' ▲') : ''),
        );
      }),
    );
    const body = rows.map((r) =>
      h(
        'tr',
        { class: 'row', tabindex: 0, title: 'Go to ' + r.displayFile + ':' + r.line, onclick: () => reveal(r.file, r.line), onkeydown: (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), reveal(r.file, r.line)) },
        COLUMNS.map((c) => (c.key === 'location' ? [h('td', { class: 'loc' }, r.displayFile + ':' + r.line), h('td', { class: 'code' }, h('code', {}, r.code))] : h('td', { class: 'num' + (c.key === 'leakPerStep' && r[c.key] ? ' bad' : '') }, c.fmt(r[c.key])))),
      ),
    );
    const toggle = hidden
      ? h('p', { class: 'muted' }, h('label', {}, h('input', { type: 'checkbox', id: 'show-all-rows', checked: !!state.showAll, onchange: (e) => { state = Object.assign({}, state, { showAll: e.target.checked }); render(); } }), ' Show ' + hidden + ' row' + (hidden === 1 ? '' : 's') + ' with no memory or no calls in the steps'))
      : null;
    return section(
      'lines',
      'Per line (per step, inclusive of callees)',
      rows.length ? h('div', { class: 'scroll' }, h('table', { class: 'lines' }, h('thead', {}, head), h('tbody', {}, body))) : h('p', { class: 'muted' }, 'No line of your files allocated memory.'),
      toggle,
    );
  }

  function setSort(key) {
    const same = state.sort.key === key;
    state = Object.assign({}, state, { sort: { key, descending: same ? !state.sort.descending : key !== 'location' } });
    render();
  }

  // ---- live at peak --------------------------------------------------------------------------------
  function peakSection(model) {
    const total = model.peakByKind.reduce((a, k) => a + k.bytes, 0);
    const bars = model.peakByKind.map((k) =>
      h('div', { class: 'kind' }, h('span', { class: 'kind-name' }, k.kind.replace('_', ' ')), h('span', { class: 'bar' }, h('span', { class: 'fill kind-' + k.kind, style: null, 'data-w': total ? Math.max(1, Math.round((k.bytes / total) * 100)) : 0 })), h('span', { class: 'num' }, bytes(k.bytes))),
    );
    const top = model.peakTopLines.map((l) =>
      h('tr', { class: 'row', tabindex: 0, onclick: () => reveal(l.file, l.line), onkeydown: (e) => e.key === 'Enter' && reveal(l.file, l.line) }, h('td', { class: 'loc' }, l.displayFile + ':' + l.line), h('td', { class: 'num' }, bytes(l.bytes)), h('td', {}, l.byKind.map((k) => k.kind.replace('_', ' ') + ' ' + bytes(k.bytes)).join(', '))),
    );
    return section(
      'peak',
      'Live at the peak' + (model.headline.peakBytes !== null ? ' (' + bytes(model.headline.peakBytes) + ')' : ''),
      bars.length ? h('div', { class: 'kinds' }, bars) : h('p', { class: 'muted' }, 'No step completed, so there is no peak snapshot.'),
      top.length ? h('table', { class: 'small' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Allocated at'), h('th', { class: 'num', scope: 'col' }, 'Live'), h('th', { scope: 'col' }, 'Kinds'))), h('tbody', {}, top)) : null,
    );
  }

  function leaksSection(model) {
    if (!model.leaks.length) return null;
    return section(
      'leaks',
      'Memory kept across steps',
      h('div', { class: 'scroll' }, h('table', { class: 'small leaks' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Line'), h('th', { class: 'num', scope: 'col' }, 'Per step'), h('th', { class: 'num', scope: 'col' }, 'Graph nodes/step'), h('th', { scope: 'col' }, 'Why'), h('th', { scope: 'col' }, 'Code'))),
        h('tbody', {}, model.leaks.map((l) => h('tr', { class: 'row', tabindex: 0, onclick: () => reveal(l.file, l.line), onkeydown: (e) => e.key === 'Enter' && reveal(l.file, l.line) }, h('td', { class: 'loc' }, l.displayFile + ':' + l.line), h('td', { class: 'num' + (l.bytesPerStep > 0 ? ' bad' : '') }, bytes(l.bytesPerStep)), h('td', { class: 'num' + (l.graphNodesPerStep > 0 ? ' bad' : '') }, String(l.graphNodesPerStep)), h('td', { class: 'why' }, (l.reason === 'autograd_graph' ? 'keeps an autograd graph' : 'storage survives the next step') + (l.heldBy ? ' — held by ' + l.heldBy : '')), h('td', { class: 'code' }, h('code', {}, l.code))))))),
    );
  }

  function cudaSection(model) {
    const c = model.cuda;
    if (!c) return null;
    const facts = [
      ['allocated', c.allocated],
      ['reserved', c.reserved],
      ['max allocated', c.maxAllocated],
      ['max reserved', c.maxReserved],
      ['fragmentation (reserved − allocated)', c.fragmentation],
    ];
    return section(
      'cuda',
      'CUDA caching allocator',
      h('table', { class: 'small' }, h('tbody', {}, facts.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', { class: 'num' }, bytes(v)))))),
      h('details', {}, h('summary', {}, 'memory_stats()'), h('table', { class: 'small' }, h('tbody', {}, c.stats.map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, h('code', {}, k)), h('td', { class: 'num' }, /bytes/.test(k) ? bytes(v) : String(v))))))),
      h('details', { open: true }, h('summary', {}, 'memory_summary()'), h('pre', { class: 'summary-text' }, c.summary)),
    );
  }

  // ---- per-module tree (report.modules) -------------------------------------------------------------
  const MODULE_COLUMNS = [
    { key: 'liveAtPeak', label: 'Live at peak' },
    { key: 'params', label: 'Params' },
    { key: 'grads', label: 'Grads' },
    { key: 'optimizer', label: 'Optimizer' },
    { key: 'saved', label: 'Saved' },
    { key: 'forwardAlloc', label: 'Forward' },
    { key: 'backwardAlloc', label: 'Backward' },
  ];

  /** Rows in tree order, siblings sorted by the chosen figure; children of collapsed rows left out. */
  function visibleModules(model) {
    const key = (state.moduleSort && state.moduleSort.key) || 'liveAtPeak';
    const children = new Map();
    for (const r of model.modules) {
      const list = children.get(r.parent) || [];
      list.push(r);
      children.set(r.parent, list);
    }
    // Expanded: what the reader opened; by default the roots and their direct children show.
    const open = state.modulesOpen || {};
    const out = [];
    const walk = (parent) => {
      const list = (children.get(parent) || []).slice().sort((a, b) => (b[key] || 0) - (a[key] || 0));
      for (const r of list) {
        const hasChildren = children.has(r.id);
        const expanded = r.id in open ? open[r.id] : r.depth < 1;
        out.push({ row: r, hasChildren, expanded });
        if (hasChildren && expanded) walk(r.id);
      }
    };
    walk(null);
    return out;
  }

  function toggleModule(id, expanded) {
    state = Object.assign({}, state, { modulesOpen: Object.assign({}, state.modulesOpen || {}, { [id]: !expanded }) });
    render();
  }

  function modulesSection(model) {
    if (!model.modules || !model.modules.length) return null;
    const key = (state.moduleSort && state.moduleSort.key) || 'liveAtPeak';
    const head = h('tr', {}, h('th', { scope: 'col' }, 'Module'), h('th', { scope: 'col' }, 'Class'), h('th', { class: 'num', scope: 'col' }, 'Calls'),
      MODULE_COLUMNS.map((c) => h('th', { class: 'num', scope: 'col', 'aria-sort': key === c.key ? 'descending' : 'none' }, h('button', { class: 'sort', 'data-module-key': c.key, onclick: () => { state = Object.assign({}, state, { moduleSort: { key: c.key } }); render(); } }, c.label, key === c.key ? ' \u25bc' : ''))));
    const body = visibleModules(model).map(({ row, hasChildren, expanded }) =>
      h('tr', { class: 'module depth-' + Math.min(row.depth, 8), 'data-id': row.id },
        h('td', { class: 'module-name' },
          h('span', { class: 'indent', 'data-depth': row.depth }),
          hasChildren ? h('button', { class: 'twisty', 'aria-expanded': String(expanded), 'aria-label': (expanded ? 'Collapse ' : 'Expand ') + row.name, onclick: () => toggleModule(row.id, expanded) }, expanded ? '\u25be' : '\u25b8') : h('span', { class: 'twisty-space' }),
          h('code', {}, row.name)),
        h('td', { class: 'muted' }, row.type),
        h('td', { class: 'num' }, String(row.calls)),
        MODULE_COLUMNS.map((c) => h('td', { class: 'num' }, bytes(row[c.key])))));
    return section('modules', 'Per module (per step; parameters, gradients and optimizer state at the end of the step)',
      h('div', { class: 'scroll' }, h('table', { class: 'modules' }, h('thead', {}, head), h('tbody', {}, body))));
  }

  // ---- collapsible sections and sortable tables (the sections after the per-module tree) -------------
  /** A section whose body folds under its heading; open or closed as the reader left it (state.open). */
  function collapsible(id, title, defaultOpen, ...body) {
    const open = state.open && id in state.open ? state.open[id] : defaultOpen;
    const details = h('details', { class: 'fold', open: open ? 'open' : null }, h('summary', {}, h('h2', { id: 'h-' + id }, title)), ...body);
    // The toggle event also fires for the initial `open`: only a change from what was drawn is recorded.
    details.addEventListener('toggle', () => {
      if (details.open === (state.open && id in state.open ? state.open[id] : defaultOpen)) return;
      state = Object.assign({}, state, { open: Object.assign({}, state.open || {}, { [id]: details.open }) });
      vscode.setState(state);
    });
    return h('section', { id: 'section-' + id, 'aria-labelledby': 'h-' + id }, details);
  }

  /**
   * A table sorted by any column on click (again: the other direction), its sort kept in
   * state.tableSort[id]. Columns: {key, label, num, value(row) for sorting, cell(row), cls(row)}.
   * Rows with `file` and `line` reveal the line on click or Enter.
   */
  function sortableTable(id, columns, rows, defaultSort) {
    // defaultSort null: the rows keep their order and no column sorts (a table read top to bottom).
    const sort = (state.tableSort && state.tableSort[id]) || defaultSort || { key: null, descending: false };
    const col = columns.find((c) => c.key === sort.key) || columns[0];
    const value = (c, r) => (c.value ? c.value(r) : r[c.key]);
    const sorted = defaultSort === null ? rows.slice() : rows.slice().sort((a, b) => {
      const va = value(col, a);
      const vb = value(col, b);
      // Missing figures (null: not in that report) sort last either way.
      if (va === null || va === undefined) return vb === null || vb === undefined ? 0 : 1;
      if (vb === null || vb === undefined) return -1;
      const c = typeof va === 'number' && typeof vb === 'number' ? va - vb : String(va).localeCompare(String(vb));
      return sort.descending ? -c : c;
    });
    const head = h('tr', {}, columns.map((c) => {
      const active = defaultSort !== null && c.key === col.key;
      return h('th', { class: c.num ? 'num' : '', scope: 'col', 'aria-sort': active ? (sort.descending ? 'descending' : 'ascending') : 'none' },
        defaultSort === null ? c.label : h('button', { class: 'sort', 'data-table': id, 'data-key': c.key, onclick: () => setTableSort(id, c.key, active ? !sort.descending : !!c.num) }, c.label, active ? (sort.descending ? ' \u25bc' : ' \u25b2') : ''));
    }));
    const body = sorted.map((r) => {
      const cells = columns.map((c) => h('td', { class: [c.num ? 'num' : '', c.cls ? c.cls(r) : ''].filter(Boolean).join(' ') || null }, c.cell ? c.cell(r) : String(r[c.key])));
      if (r.file === undefined) return h('tr', {}, cells);
      return h('tr', { class: 'row', tabindex: 0, title: 'Go to ' + r.displayFile + ':' + r.line, onclick: () => reveal(r.file, r.line), onkeydown: (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), reveal(r.file, r.line)) }, cells);
    });
    return h('div', { class: 'scroll' }, h('table', { class: 'sortable ' + id, id: 'table-' + id }, h('thead', {}, head), h('tbody', {}, body)));
  }

  function setTableSort(id, key, descending) {
    state = Object.assign({}, state, { tableSort: Object.assign({}, state.tableSort || {}, { [id]: { key, descending } }) });
    render();
  }

  const locCell = (r) => r.displayFile + ':' + r.line;
  // Sorts by file, then by line as a number (`:9` before `:10`).
  const locValue = (r) => r.displayFile + ':' + String(r.line).padStart(8, '0');
  const codeCell = (r) => h('code', {}, r.code);

  // ---- DataLoader workers (report.dataLoaders) -----------------------------------------------------
  function workersSection(model) {
    if (!model.loaders || !model.loaders.length) return null;
    const grows = model.loaders.some((l) => l.grows);
    const loaders = model.loaders.map((l, i) => h('div', { class: 'loader' + (l.grows ? ' grows' : ''), 'data-loader': i },
      h('p', {}, h('button', { class: 'link', onclick: () => reveal(l.file, l.line) }, l.displayFile + ':' + l.line), ' ', h('code', {}, l.code), ' \u2014 ' + l.datasetType + ', ' + l.numWorkers + ' worker' + (l.numWorkers === 1 ? '' : 's')),
      h('p', { class: l.grows ? 'bad-text' : 'muted' },
        (l.grows ? 'Grows ' : 'Changes ') + bytes(l.ussGrowthPerStep, true) + ' per step (USS, all workers)' + (l.grows ? ': copy-on-read of the Dataset\u2019s Python objects; keep samples in numpy arrays or tensors.' : '.'),
        l.ussByStep.length ? ' At the end of each step: ' + l.ussByStep.map((v, k) => bytes(v) + ' (PSS ' + bytes(l.pssByStep[k]) + ')').join(', ') + '.' : ''),
      l.workers.length ? sortableTable('workers-' + i, [
        { key: 'worker', label: 'Worker', num: true },
        { key: 'pid', label: 'PID', num: true },
        { key: 'ussFirst', label: 'USS first', num: true, cell: (r) => bytes(r.ussFirst) },
        { key: 'ussLast', label: 'USS last', num: true, cell: (r) => bytes(r.ussLast) },
        { key: 'ussMax', label: 'USS max', num: true, cell: (r) => bytes(r.ussMax) },
        { key: 'ussGrowth', label: 'USS growth', num: true, cell: (r) => bytes(r.ussGrowth, true), cls: (r) => (l.grows && r.ussGrowth > 0 ? 'bad' : '') },
        { key: 'pssLast', label: 'PSS last', num: true, cell: (r) => bytes(r.pssLast) },
        { key: 'samples', label: 'Samples', num: true },
      ], l.workers, { key: 'worker', descending: false }) : h('p', { class: 'muted' }, 'No worker was sampled.')));
    return collapsible('workers', 'DataLoader workers (their own memory: USS private, PSS with a share of shared pages; never RSS)', grows, loaders);
  }

  // ---- forward graphs no backward() used (report.noBackwardGraphs) ------------------------------------
  function noGradSection(model) {
    if (!model.noGrad || !model.noGrad.length) return null;
    return collapsible('nograd', 'Graphs no backward() used (' + model.noGrad.length + ')', true,
      h('p', { class: 'muted' }, 'These statements built an autograd graph in the step and nothing ran backward through it: the graph and the activations it saved stay alive while the result lives. Run them under torch.no_grad() or torch.inference_mode().'),
      sortableTable('nograd', [
        { key: 'location', label: 'Line', value: locValue, cell: locCell, cls: () => 'loc' },
        { key: 'code', label: 'Code', cell: codeCell, cls: () => 'code' },
        { key: 'bytesKeptPerStep', label: 'Saved activations/step', num: true, cell: (r) => bytes(r.bytesKeptPerStep), cls: (r) => (r.bytesKeptPerStep > 0 ? 'bad' : '') },
        { key: 'nodesPerStep', label: 'Graph nodes/step', num: true },
        { key: 'steps', label: 'Steps', num: true },
      ], model.noGrad, { key: 'bytesKeptPerStep', descending: true }));
  }

  // ---- kernel workspaces (report.kernelWorkspaces) -------------------------------------------------
  function kernelsSection(model) {
    const k = model.kernels;
    if (!k) return null;
    const why = k.backend === 'cuda'
      ? 'Their kernels allocate workspaces inside the op (convolution, cuDNN RNN): the tracked figures leave them out, the CUDA allocator\u2019s rise while the line ran includes them.'
      : k.backend === 'meta'
        ? 'Their kernels allocate workspaces inside the op (convolution, cuDNN RNN): the prediction leaves them out; on the GPU they come on top of these lines\u2019 figures.'
        : 'Their kernels allocate workspaces inside the op (convolution, oneDNN RNN): on CPU these lines\u2019 allocation volume and peaks are under-counted (13\u201355% against torch.profiler on ResNet and LSTM).';
    const columns = [
      { key: 'location', label: 'Line', value: locValue, cell: locCell, cls: () => 'loc' },
      { key: 'code', label: 'Code', cell: codeCell, cls: () => 'code' },
      { key: 'ops', label: 'Ops', value: (r) => r.ops.join(' '), cell: (r) => r.ops.join(', ') },
      { key: 'callsPerStep', label: 'Calls/step', num: true },
      { key: 'trackedPerStep', label: 'Tracked alloc/step', num: true, cell: (r) => bytes(r.trackedPerStep) },
    ];
    if (k.lines.some((r) => r.cudaMaxRise !== null)) columns.push({ key: 'cudaMaxRise', label: 'CUDA max rise', num: true, cell: (r) => bytes(r.cudaMaxRise) });
    return collapsible('kernels', 'Memory inside kernels (' + k.lines.length + ' line' + (k.lines.length === 1 ? '' : 's') + ')', false,
      h('p', { class: 'muted' }, why),
      sortableTable('kernels', columns, k.lines, { key: 'trackedPerStep', descending: true }));
  }

  // ---- predicted vs measured (a predict report and a profile of the same step) -------------------------
  const COMPARE_LINE = [['allocated', 'Allocated/step'], ['peak', 'Peak'], ['savedForBackward', 'Saved for bwd'], ['backward', 'Backward'], ['liveAtPeak', 'Live at peak']];
  const COMPARE_MODULE = [['liveAtPeak', 'Live at peak'], ['params', 'Params'], ['grads', 'Grads'], ['optimizer', 'Optimizer'], ['saved', 'Saved'], ['forwardAlloc', 'Forward'], ['backwardAlloc', 'Backward']];

  /** "+12%" of the measured figure; '' when there is nothing to relate to. */
  function relative(f) {
    if (f.difference === null || !f.measured) return '';
    return (f.difference > 0 ? '+' : '') + Math.round((f.difference / f.measured) * 100) + '%';
  }
  /** Off enough to matter: a fifth of the measured figure and at least 64 KiB (allocator rounding and
   *  small temporaries differ between CPU and CUDA by design). */
  function offCls(f) {
    if (f.difference === null) return '';
    return Math.abs(f.difference) >= 65536 && Math.abs(f.difference) >= 0.2 * Math.abs(f.measured || 0) ? 'bad' : '';
  }
  function pairColumns(pick) {
    return [
      { key: 'predicted', label: 'Predicted', num: true, value: (r) => pick(r).predicted, cell: (r) => bytes(pick(r).predicted) },
      { key: 'measured', label: 'Measured', num: true, value: (r) => pick(r).measured, cell: (r) => bytes(pick(r).measured) },
      { key: 'difference', label: 'Difference', num: true, value: (r) => pick(r).difference, cell: (r) => bytes(pick(r).difference, true), cls: (r) => offCls(pick(r)) },
      { key: 'relative', label: '%', num: true, value: (r) => (pick(r).difference === null || !pick(r).measured ? null : pick(r).difference / pick(r).measured), cell: (r) => relative(pick(r)), cls: (r) => offCls(pick(r)) },
    ];
  }
  function figurePicker(id, options, current, onPick) {
    return h('label', { class: 'picker' }, 'Figure: ', h('select', { id: id, onchange: (e) => onPick(e.target.value) }, options.map(([k, label]) => h('option', { value: k, selected: k === current ? 'selected' : null }, label))));
  }
  function setCompare(part, key) {
    const compare = Object.assign({ line: 'allocated', module: 'liveAtPeak' }, state.compare || {}, { [part]: key });
    state = Object.assign({}, state, { compare });
    render();
  }

  function comparisonSection(model) {
    const c = model.comparison;
    if (!c) return null;
    const compare = Object.assign({ line: 'allocated', module: 'liveAtPeak' }, state.compare || {});
    const peakRows = c.peaks.map((p) => Object.assign({}, p, { fig: p }));
    const peaks = sortableTable('compare-peaks', [{ key: 'label', label: 'Step peak', cell: (r) => r.label }].concat(pairColumns((r) => r.fig)), peakRows, null);
    const lines = c.lines.length
      ? [figurePicker('compare-line-figure', COMPARE_LINE, compare.line, (k) => setCompare('line', k)),
        sortableTable('compare-lines', [
          { key: 'location', label: 'Line', value: locValue, cell: locCell, cls: () => 'loc' },
          { key: 'code', label: 'Code', cell: codeCell, cls: () => 'code' },
        ].concat(pairColumns((r) => r.figures[compare.line])), c.lines, { key: 'location', descending: false })]
      : h('p', { class: 'muted' }, 'No line has figures in either report.');
    const modules = c.modules.length
      ? [figurePicker('compare-module-figure', COMPARE_MODULE, compare.module, (k) => setCompare('module', k)),
        sortableTable('compare-modules', [
          { key: 'id', label: 'Module', cell: (r) => h('code', {}, r.id) },
          { key: 'type', label: 'Class', cls: () => 'muted' },
        ].concat(pairColumns((r) => r.figures[compare.module])), c.modules, { key: 'difference', descending: true })]
      : null;
    return collapsible('compare', 'Predicted vs measured: ' + c.step, true,
      h('p', { class: 'muted' }, 'The panel shows the ' + c.shown + ' report; beside it, the ' + (c.shown === 'measured' ? 'predicted' : 'measured') + ' one of the same step. Measured on ' + c.measuredOn + '; predicted for CUDA on meta tensors' + (c.whatIf ? ' (' + c.whatIf + ')' : '') + '. Per step; difference = predicted \u2212 measured, red where it is off by a fifth or more.'),
      peaks,
      h('h3', {}, 'Per line'), lines,
      modules ? [h('h3', {}, 'Per module'), modules] : null);
  }

  function predictionCallout(model) {
    const p = model.prediction;
    if (!p) return null;
    const fit = p.fits === null ? null : p.fits
      ? h('p', {}, 'Fits the device: max reserved ' + bytes(p.maxReserved) + ' of ' + bytes(p.deviceMemory) + '.')
      : h('p', {}, h('strong', {}, 'Does not fit'), ' the device: max reserved ' + bytes(p.maxReserved) + ' of ' + bytes(p.deviceMemory) + (p.firstExceeded ? '; first exceeded at ' + p.firstExceeded : '') + '.');
    return h('div', { class: 'callout predicted ' + (p.fits === false ? 'bad' : ''), role: 'status', id: 'prediction' },
      h('strong', {}, 'Predicted, not measured. '),
      'The step ran on meta tensors for a CUDA device (' + (p.whatIf || 'as written') + '), in ' + p.seconds.toFixed(2) + ' s. Caching allocator model: max allocated ' + bytes(p.maxAllocated) + ', max reserved ' + bytes(p.maxReserved) + '; tensor peak ' + bytes(p.rawPeak) + '.',
      fit);
  }

  // ---- ranks (multi-rank runs) -------------------------------------------------------------------
  function ranksSection(model) {
    const r = model.ranks;
    if (!r) return null;
    const max = Math.max(1, ...r.ranks.map((x) => x.peakBytes || 0));
    const rows = r.ranks.map((x) => h('tr', { class: 'rank' + (x.rank === r.shownRank ? ' shown' : '') + (x.status !== 'ok' ? ' failed' : ''), 'data-rank': x.rank },
      h('th', { scope: 'row' }, 'rank ' + x.rank + (x.rank === r.shownRank ? ' (shown)' : '')),
      h('td', { class: 'num' + (r.imbalance && x.rank === r.imbalance.maxRank ? ' bad' : '') }, bytes(x.peakBytes)),
      h('td', { class: 'bar-cell' }, h('span', { class: 'bar' }, h('span', { class: 'fill rank-fill', 'data-w': x.peakBytes ? Math.max(1, Math.round((x.peakBytes / max) * 100)) : 0 }))),
      h('td', {}, x.status === 'ok' ? 'ok' : x.status + (x.oom ? ' (out of memory)' : '') + (x.error ? ' \u2014 ' + x.error : ''))));
    const imbalance = r.imbalance
      ? h('p', {}, 'Imbalance: rank ' + r.imbalance.maxRank + ' peaks ' + bytes(r.imbalance.spreadBytes) + ' above rank ' + r.imbalance.minRank + ' (max/mean ' + r.imbalance.maxOverMean.toFixed(2) + '\u00d7).')
      : null;
    return section('ranks', r.worldSize + ' ranks (' + (r.launcher === 'torchrun' ? 'torchrun' : 'started by memhint') + ')',
      h('p', { class: 'muted' }, 'The figures below are rank ' + r.shownRank + '\u2019s (' + r.why + '); hints and hovers show the same rank.'),
      imbalance,
      h('table', { class: 'small ranks' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Rank'), h('th', { class: 'num', scope: 'col' }, 'Peak live'), h('th', { scope: 'col' }, ''), h('th', { scope: 'col' }, 'Status'))), h('tbody', {}, rows)));
  }

  function problems(model) {
    const out = [];
    const predicted = predictionCallout(model);
    if (predicted) out.push(predicted);
    if (model.stale) out.push(h('div', { class: 'callout warn', role: 'status', id: 'stale' }, h('strong', {}, 'Stale. '), model.stale));
    if (model.oom) {
      out.push(h('div', { class: 'callout bad', role: 'alert' }, h('strong', {}, 'Out of memory'), model.oom.where ? ' at ' + model.oom.where : '', model.oom.requestedBytes !== null ? ' (asked for ' + bytes(model.oom.requestedBytes) + ')' : '', h('p', {}, model.oom.message), h('ul', {}, model.oom.advice.map((a) => h('li', {}, a)))));
    }
    if (model.budget) {
      out.push(h('div', { class: 'callout ' + (model.budget.exceeded ? 'bad' : 'good') }, model.budget.exceeded ? 'Budget of ' + bytes(model.budget.budgetBytes) + ' exceeded first at ' + (model.budget.where || 'an unknown line') : 'Within the budget of ' + bytes(model.budget.budgetBytes)));
    }
    if (model.partial) out.push(h('div', { class: 'callout warn' }, 'Partial run: the figures cover only the steps that completed.'));
    // The harness's notes are for the curious (sampler, capabilities): collapsed until asked for.
    if (model.notes.length) out.push(h('details', { class: 'notes' }, h('summary', {}, 'Notes from the profiler (' + model.notes.length + ')'), h('ul', {}, model.notes.map((n) => h('li', {}, n)))));
    return out;
  }

  function header(model) {
    const env = model.environment;
    const stat = (label, value, cls) => h('div', { class: 'stat ' + (cls || '') }, h('div', { class: 'stat-value' }, value), h('div', { class: 'stat-label' }, label));
    return h(
      'header',
      {},
      h('h1', {}, model.title),
      h('p', { class: 'muted env' }, 'torch ' + env.torchVersion + ' · Python ' + env.pythonVersion + ' · ' + (model.prediction ? 'predicted on meta tensors' : env.backend + ' backend') + ' · ' + env.device),
      h('div', { class: 'stats' }, stat(model.prediction ? 'predicted peak live' : 'peak live', bytes(model.headline.peakBytes)), model.prediction ? stat('predicted max reserved', bytes(model.prediction.maxReserved), model.prediction.fits === false ? 'bad' : '') : null, stat('profiled steps', String(model.headline.steps)), stat('median step', ms(model.headline.medianStepMs)), stat('kept per step', bytes(model.headline.leakBytesPerStep), model.headline.leakBytesPerStep > 0 ? 'bad' : '')),
      h(
        'div',
        { class: 'actions' },
        h('button', { id: 'export-json', onclick: () => vscode.postMessage({ type: 'export', what: 'json' }) }, 'Export report (JSON)…'),
        h('button', { id: 'export-snapshot', disabled: !model.hasSnapshot, title: model.hasSnapshot ? 'For pytorch.org/memory_viz' : 'Only CUDA runs with memory history have a snapshot', onclick: () => vscode.postMessage({ type: 'export', what: 'snapshot' }) }, 'Export memory_viz snapshot…'),
      ),
    );
  }

  function render() {
    const model = state.model;
    // Rebuilding the page would jump to the top: keep the reader's place (sort, export, re-show). A live page
    // reads it from the window: the saved copy trails it by a scroll event (a sort clicked right after
    // scrolling restored the place before). A page being restored (nothing rendered yet) has only the saved one.
    const scrollY = app.childElementCount > 0 ? window.scrollY : state.scrollY || 0;
    app.textContent = '';
    const sections = [];
    if (!model) {
      app.appendChild(h('div', { class: 'empty' }, h('h1', {}, 'No memory profile yet'), h('p', {}, 'Run “memhint: Profile This Step” (or the “Profile this step” CodeLens above a training step) to measure memory per line.')));
    } else {
      const parts = [header(model), ...problems(model), ranksSection(model), comparisonSection(model), timeline(model), peakSection(model), leaksSection(model), noGradSection(model), lineTable(model), modulesSection(model), workersSection(model), kernelsSection(model), cudaSection(model)].filter(Boolean);
      for (const p of parts) {
        app.appendChild(p);
        if (p.tagName === 'SECTION') sections.push(p.id.replace('section-', ''));
      }
      // Widths via CSSOM (allowed by the CSP, unlike inline style attributes).
      for (const el of app.querySelectorAll('.fill[data-w]')) /** @type {HTMLElement} */ (el).style.width = el.getAttribute('data-w') + '%';
    }
    if (toast) app.prepend(toast);
    window.scrollTo(0, scrollY);
    state = Object.assign({}, state, { scrollY });
    vscode.setState(state);
    vscode.postMessage({ type: 'rendered', rows: model ? model.lines.length : 0, sort: state.sort, sections });
  }

  window.addEventListener('message', (event) => {
    const msg = event.data;
    if (!msg || typeof msg.type !== 'string') return;
    if (msg.type === 'show') {
      // A new model keeps the reader's choices (sorts, open sections, compared figure), not the old model.
      state = Object.assign({}, state, { model: msg.model });
      toast = null;
      render();
    } else if (msg.type === 'exported' || msg.type === 'error') {
      toast = h('div', { class: 'callout ' + (msg.type === 'error' ? 'bad' : 'good'), role: 'status' }, msg.type === 'error' ? msg.message : 'Saved to ' + msg.path);
      render();
    }
  });

  // The place is remembered as the reader scrolls, so any re-render (and a restored panel) returns to it.
  let scrollTimer = null;
  window.addEventListener('scroll', () => {
    state = Object.assign({}, state, { scrollY: window.scrollY });
    clearTimeout(scrollTimer);
    scrollTimer = setTimeout(() => vscode.setState(state), 200);
  }, { passive: true });

  let resizeTimer = null;
  let lastWidth = app.clientWidth;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (Math.abs(app.clientWidth - lastWidth) < 40) return;
      lastWidth = app.clientWidth;
      if (state.model) render();
    }, 150);
  });

  render();
  vscode.postMessage({ type: 'ready' });
})();
