// media/summary.js in Debian's chromium (playwright-core), fed the view model the extension builds, with
// the page's CSP: what it draws, sorting, row clicks and exports as messages to the extension, and its
// saved state. The real-VS-Code run of the same panel is in test/e2e.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { SummaryViewModel, WebviewState } from '../../../src/extension/webview/messages';
import { buildViewModel } from '../../../src/extension/webview/viewModel';
import { counters, FILE, kinds, line, measuredOfPredicted, predictedReport, report, sectionsReport } from './reportFixture';

const root = path.resolve(__dirname, '../../../..');
const chromiumPath = process.env.MEMHINT_CHROMIUM ?? '/usr/bin/chromium';
const MiB = 1024 ** 2;

interface Poster {
  postMessage(message: unknown, origin: string): void;
}

function model(): SummaryViewModel {
  return buildViewModel(
    report({
      lines: [
        line(10, 'x = torch.randn(n, n)', { inclusive: counters(30 * MiB, 0, 10 * MiB) }),
        line(11, 'y = x @ x', { inclusive: counters(3 * MiB, 3 * MiB, 2 * MiB) }),
        line(12, 'total += y.sum()', { inclusive: counters(12, 0, 4) }),
      ],
      leaks: [{ file: FILE, line: 12, code: 'total += y.sum()', bytesPerStep: 4, bytesByStep: [4, 4], graphNodesPerStep: 3, reason: 'autograd_graph', heldBy: null }],
      peak: { bytes: 12 * MiB, step: 1, atMs: 150, location: { file: FILE, line: 10 }, phase: 'forward', byKind: kinds({ input: 10 * MiB, temporary: 2 * MiB }), byLine: [{ file: FILE, line: 10, bytes: 10 * MiB, byKind: kinds({ input: 10 * MiB }) }] },
      timeline: {
        originEpochMs: 0,
        allocator: [
          { t: 0, live: 0 },
          { t: 120, live: 12 * MiB },
          { t: 180, live: MiB },
        ],
        steps: [{ step: 0, warmup: false, startMs: 100, endMs: 180 }],
      },
    }),
    { roots: ['/work/project'] },
  );
}

const ORIGIN = 'http://memhint.test';

/**
 * The panel's page as summaryPanel.ts writes it: the same CSP (assets only from one origin, scripts
 * only with the nonce, no inline styles), acquireVsCodeApi recording what the script calls.
 */
async function load(page: Page, state: WebviewState, saved: WebviewState | null): Promise<void> {
  const json = JSON.stringify(state).replace(/</g, '\\u003c');
  const nonce = 'dGVzdG5vbmNl';
  const shim = `window.__posted = []; window.__saved = ${JSON.stringify(saved)};
    window.acquireVsCodeApi = () => ({ getState: () => window.__saved, setState: (s) => { window.__saved = s; }, postMessage: (m) => window.__posted.push(m) });`;
  const html = `<!DOCTYPE html><html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${ORIGIN}; script-src 'nonce-${nonce}'; img-src ${ORIGIN} data:">
<link rel="stylesheet" href="${ORIGIN}/media/summary.css"></head>
<body><main id="app"></main><script id="memhint-initial" type="application/json">${json}</script>
<script nonce="${nonce}">${shim}</script>
<script nonce="${nonce}" src="${ORIGIN}/media/summary.js"></script></body></html>`;
  await page.route(`${ORIGIN}/**`, (route) => {
    const url = new URL(route.request().url());
    if (url.pathname === '/index.html') return route.fulfill({ contentType: 'text/html', body: html });
    const file = path.join(root, url.pathname);
    if (!url.pathname.startsWith('/media/') || !fs.existsSync(file)) return route.fulfill({ status: 404 });
    // UTF-8 as VS Code serves webview resources (the script writes `—` for a missing figure).
    return route.fulfill({ contentType: (file.endsWith('.css') ? 'text/css' : 'text/javascript') + '; charset=utf-8', body: fs.readFileSync(file) });
  });
  await page.goto(`${ORIGIN}/index.html`);
  await page.waitForFunction(() => (globalThis as unknown as { __posted?: unknown[] }).__posted?.length);
}

describe('media/summary.js in chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  before(async function () {
    if (!fs.existsSync(chromiumPath)) this.skip(); // scripts/setup-system.sh installs it
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  });

  after(async () => {
    await browser?.close();
  });

  beforeEach(async () => {
    page = await browser.newPage();
    errors.length = 0;
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
  });

  afterEach(async () => {
    await page.close();
    assert.deepEqual(errors, [], 'no script errors or CSP violations');
  });

  const posted = (): Promise<Record<string, unknown>[]> => page.evaluate(() => (globalThis as unknown as { __posted: Record<string, unknown>[] }).__posted);
  const saved = (): Promise<WebviewState | null> => page.evaluate(() => (globalThis as unknown as { __saved: WebviewState | null }).__saved);
  const locations = (): Promise<string[]> => page.locator('table.lines tbody tr td.loc').allInnerTexts();

  it('draws every section of the report and tells the extension what it rendered', async () => {
    await load(page, { model: model(), sort: { key: 'peak', descending: true } }, null);
    assert.equal(await page.locator('h1').innerText(), 'train.py::train_step');
    assert.equal(await page.locator('#section-timeline svg path.series.allocator').count(), 1);
    assert.equal(await page.locator('#section-timeline svg rect.step').count(), 1);
    assert.deepEqual(await locations(), ['train.py:10', 'train.py:11', 'train.py:12']);
    assert.match(await page.locator('#section-leaks').innerText(), /keeps an autograd graph/);
    assert.match(await page.locator('#section-peak').innerText(), /input\s+10 MiB/);
    const widths = await page.locator('#section-peak .fill').evaluateAll((els) => els.map((e) => (e as unknown as { style: { width: string } }).style.width));
    assert.deepEqual(widths, ['83%', '17%'], 'bar widths set through CSSOM, which the CSP allows');
    const sheets = await page.evaluate(() => (globalThis as unknown as { document: { styleSheets: { length: number } } }).document.styleSheets.length);
    assert.equal(sheets, 1, 'summary.css loaded from the allowed origin');
    const messages = await posted();
    assert.deepEqual(messages[0], { type: 'rendered', rows: 3, sort: { key: 'peak', descending: true }, sections: ['timeline', 'peak', 'leaks', 'lines'] });
    assert.deepEqual(messages[1], { type: 'ready' });
    assert.ok(await page.locator('#export-snapshot').isDisabled(), 'no snapshot on the CPU backend');
  });

  it('says a predicted report is predicted, and draws the module tree collapsible and sortable', async () => {
    await load(page, { model: buildViewModel(predictedReport(), { roots: ['/work/project'] }), sort: { key: 'peak', descending: true } }, null);
    const callout = await page.locator('#prediction').innerText();
    assert.match(callout, /^Predicted, not measured\./);
    assert.match(callout, /Does not fit the device: max reserved 20 MiB of 16 MiB; first exceeded at train\.py:20/);
    assert.match(await page.locator('header .env').innerText(), /predicted on meta tensors/);
    const names = (): Promise<string[]> => page.locator('table.modules tbody td.module-name code').allInnerTexts();
    // Roots and their children open at first; deeper levels wait for a click.
    assert.deepEqual(await names(), ['MLP', 'net']);
    await page.click('table.modules button.twisty[aria-label="Expand net"]');
    assert.deepEqual(await names(), ['MLP', 'net', '0', '2'], 'siblings by live at peak, largest first');
    await page.click('button.sort[data-module-key="forwardAlloc"]');
    assert.deepEqual(await names(), ['MLP', 'net', '2', '0'], 'siblings by forward allocations');
    await page.click('table.modules button.twisty[aria-label="Collapse MLP"]');
    assert.deepEqual(await names(), ['MLP']);
    const sections = (await posted()).filter((m) => m.type === 'rendered').pop()?.sections;
    assert.ok(Array.isArray(sections) && sections.includes('modules'), JSON.stringify(sections));
  });

  it('draws every rank\'s peak and the imbalance for a multi-rank run, naming the rank shown', async () => {
    const ranks = {
      worldSize: 2,
      launcher: 'torchrun' as const,
      shownRank: 1,
      why: 'highest peak' as const,
      ranks: [
        { rank: 0, status: 'ok', peakBytes: 10 * MiB, oom: false, error: null },
        { rank: 1, status: 'ok', peakBytes: 20 * MiB, oom: false, error: null },
      ],
      imbalance: { maxRank: 1, minRank: 0, spreadBytes: 10 * MiB, maxOverMean: 4 / 3 },
      firstFailedRank: null,
    };
    await load(page, { model: buildViewModel(report(), { roots: [], ranks }), sort: { key: 'peak', descending: true } }, null);
    const text = await page.locator('#section-ranks').innerText();
    assert.match(text, /2 ranks \(torchrun\)/);
    assert.match(text, /rank 1’s \(highest peak\)/);
    assert.match(text, /Imbalance: rank 1 peaks 10 MiB above rank 0 \(max\/mean 1\.33×\)/);
    assert.deepEqual(await page.locator('#section-ranks tbody th').allInnerTexts(), ['rank 0', 'rank 1 (shown)']);
    const widths = await page.locator('#section-ranks .rank-fill').evaluateAll((els) => els.map((e) => (e as unknown as { style: { width: string } }).style.width));
    assert.deepEqual(widths, ['50%', '100%']);
  });

  it('at 1536 px no chart label is cut at the edge or drawn over another, even for steps side by side', async () => {
    await page.setViewportSize({ width: 1536, height: 900 });
    const base = model();
    const steps = [0, 1, 2, 3, 4, 5].map((i) => ({ step: i, warmup: i === 0, startMs: 9000 + i * 10, endMs: 9008 + i * 10 }));
    const crowded = { ...base, timeline: { ...base.timeline, steps, endMs: 10_000 } };
    await load(page, { model: crowded, sort: { key: 'peak', descending: true } }, null);
    const boxes = await page.locator('#section-timeline svg text').evaluateAll((els) =>
      els.map((e) => {
        const b = (e as unknown as { getBoundingClientRect(): { left: number; right: number; top: number; bottom: number } }).getBoundingClientRect();
        return { text: (e as unknown as { textContent: string }).textContent, left: b.left, right: b.right, top: b.top, bottom: b.bottom };
      }),
    );
    const svg = await page.locator('#section-timeline svg').boundingBox();
    assert.ok(svg !== null && boxes.length > 10);
    for (const b of boxes) assert.ok(b.left >= svg.x - 0.5 && b.right <= svg.x + svg.width + 0.5, `${b.text} inside the chart (${b.left}-${b.right} vs ${svg.x}-${svg.x + svg.width})`);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, b] = [boxes[i], boxes[j]];
        const overlap = a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
        assert.ok(!overlap, `"${a.text}" and "${b.text}" overlap`);
      }
    }
    const labels = await page.locator('#section-timeline svg text.step-label').allInnerTexts();
    assert.ok(labels.length >= 1 && labels.length < steps.length, `some step labels skipped: ${labels.join(' ')}`);
  });

  it('sorts by a column on click, toggling the direction, and keeps the sort in its state', async () => {
    await load(page, { model: model(), sort: { key: 'peak', descending: true } }, null);
    await page.click('button.sort[data-key="location"]');
    assert.deepEqual(await locations(), ['train.py:10', 'train.py:11', 'train.py:12']);
    await page.click('button.sort[data-key="location"]');
    assert.deepEqual(await locations(), ['train.py:12', 'train.py:11', 'train.py:10']);
    await page.click('button.sort[data-key="leakPerStep"]');
    assert.equal((await locations())[0], 'train.py:12');
    assert.deepEqual((await saved())?.sort, { key: 'leakPerStep', descending: true });
  });

  it('puts the code second, hides rows with no calls or no memory, keeps the scroll place on sort, says when stale', async () => {
    const base = model();
    const noisy: SummaryViewModel = {
      ...base,
      stale: 'These figures are from an earlier run: the latest run failed (RuntimeError).',
      lines: [
        ...base.lines,
        { ...base.lines[0], line: 40, code: 'threading_helper()', calls: 0 },
        { ...base.lines[1], line: 41, code: 'pass', allocated: 0, freed: 0, net: 0, peak: 0, selfNet: 0, savedForBackward: 0, backward: 0, leakPerStep: 0, liveAtPeak: 0 },
      ],
    };
    await page.setViewportSize({ width: 700, height: 300 });
    await load(page, { model: noisy, sort: { key: 'peak', descending: true } }, null);
    const headers = (await page.locator('table.lines thead th').allInnerTexts()).map((t) => t.trim());
    assert.equal(headers[1], 'Code', headers.join(' | '));
    assert.deepEqual(await locations(), ['train.py:10', 'train.py:11', 'train.py:12'], 'the two noise rows are hidden');
    assert.match(await page.locator('#stale').innerText(), /Stale\. These figures are from an earlier run/);
    await page.check('#show-all-rows');
    assert.equal((await locations()).length, 5);
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 400));
    const before = await page.evaluate(() => (globalThis as unknown as { scrollY: number }).scrollY);
    assert.ok(before > 100, `the page scrolls (${before})`);
    await page.waitForTimeout(50);
    // A click from the page itself: Playwright's click would first scroll the button into view.
    await page.evaluate(() => (globalThis as unknown as { document: { querySelector(s: string): { click(): void } } }).document.querySelector('button.sort[data-key="location"]').click());
    assert.deepEqual((await saved())?.sort, { key: 'location', descending: false });
    const after = await page.evaluate(() => (globalThis as unknown as { scrollY: number }).scrollY);
    assert.equal(after, before, 'sorting keeps the scroll position');
  });

  it('asks the extension to reveal a clicked row and to export', async () => {
    await load(page, { model: model(), sort: { key: 'location', descending: false } }, null);
    await page.click('table.lines tbody tr:nth-child(2)');
    await page.focus('table.lines tbody tr:nth-child(3)');
    await page.keyboard.press('Enter');
    await page.click('#export-json');
    const m = (await posted()).filter((x) => x.type !== 'rendered' && x.type !== 'ready');
    assert.deepEqual(m, [
      { type: 'reveal', file: FILE, line: 11 },
      { type: 'reveal', file: FILE, line: 12 },
      { type: 'export', what: 'json' },
    ]);
  });

  it('draws DataLoader workers, graphs without backward and kernel workspaces as collapsible, sortable sections kept across a reload', async () => {
    const m = buildViewModel(sectionsReport(), { roots: ['/work/project'] });
    await load(page, { model: m, sort: { key: 'peak', descending: true } }, null);
    const sections = (await posted()).find((x) => x.type === 'rendered')?.sections as string[];
    assert.deepEqual(sections.filter((x) => ['nograd', 'workers', 'kernels'].includes(x)), ['nograd', 'workers', 'kernels']);
    const isOpen = (id: string): Promise<boolean> => page.locator(`#section-${id} > details`).evaluate((d) => (d as unknown as { open: boolean }).open);
    // Open where there is something to act on (a growing loader, graphs to put under no_grad); the
    // kernel caveat folded until asked for.
    assert.deepEqual([await isOpen('workers'), await isOpen('nograd'), await isOpen('kernels')], [true, true, false]);
    const workers = await page.locator('#section-workers').innerText();
    assert.match(workers, /train\.py:5\s+loader = DataLoader\(ds, num_workers=2\) — PathsDataset, 2 workers/);
    assert.match(workers, /Grows \+4 MiB per step \(USS, all workers\): copy-on-read/);
    assert.match(workers, /At the end of each step: 10 MiB \(PSS 20 MiB\), 14 MiB \(PSS 24 MiB\), 18 MiB \(PSS 28 MiB\)/);
    const pids = (): Promise<string[]> => page.locator('#table-workers-0 tbody tr td:nth-child(2)').allInnerTexts();
    assert.deepEqual(await pids(), ['101', '102'], 'by worker id first');
    await page.click('button.sort[data-table="workers-0"][data-key="ussGrowth"]');
    assert.deepEqual(await pids(), ['102', '101'], 'largest growth first');
    assert.deepEqual(await page.locator('#table-workers-0 tbody td.bad').allInnerTexts(), ['+5 MiB'], 'the growing worker flagged');
    const noGradLines = (): Promise<string[]> => page.locator('#table-nograd tbody td.loc').allInnerTexts();
    assert.deepEqual(await noGradLines(), ['train.py:40', 'train.py:9'], 'most saved activations first');
    await page.click('button.sort[data-table="nograd"][data-key="location"]');
    assert.deepEqual(await noGradLines(), ['train.py:9', 'train.py:40'], 'by line as a number');
    await page.click('#section-kernels summary');
    assert.equal(await isOpen('kernels'), true);
    assert.match(await page.locator('#section-kernels').innerText(), /under-counted \(13–55% against torch\.profiler/);
    assert.deepEqual(await page.locator('#table-kernels tbody td.loc').allInnerTexts(), ['train.py:30', 'train.py:31'], 'the tracked figure first, a line without one last');
    await page.click('#table-kernels tbody tr:nth-child(2)');
    assert.deepEqual((await posted()).filter((x) => x.type === 'reveal').pop(), { type: 'reveal', file: FILE, line: 31 });
    await page.click('#section-workers summary');
    // <details> fires 'toggle' as a task after the click returns: wait for the page to have saved it.
    await page.waitForFunction(() => (globalThis as unknown as { __saved: WebviewState | null }).__saved?.open?.workers === false);
    const state = await saved();
    assert.deepEqual(state?.open, { kernels: true, workers: false });
    assert.deepEqual(state?.tableSort, { 'workers-0': { key: 'ussGrowth', descending: true }, nograd: { key: 'location', descending: false } });
    // A reload (the page rebuilt with the state the webview saved) draws the same choices.
    await load(page, { model: m, sort: { key: 'peak', descending: true } }, state);
    assert.deepEqual([await isOpen('workers'), await isOpen('kernels')], [false, true]);
    assert.deepEqual(await noGradLines(), ['train.py:9', 'train.py:40']);
  });

  it('puts predicted and measured figures side by side with the difference, per line, per module and for the step peak', async () => {
    const m = buildViewModel(measuredOfPredicted(), { roots: ['/work/project'], counterpart: predictedReport() });
    await load(page, { model: m, sort: { key: 'peak', descending: true } }, null);
    const text = await page.locator('#section-compare').innerText();
    assert.match(text, /Predicted vs measured: train\.py::train_step/);
    assert.match(text, /shows the measured report; beside it, the predicted one of the same step\. Measured on cpu backend, cpu, torch 1\.13\.1; predicted for CUDA on meta tensors \(AMP bf16, batch=64\)/);
    const peakRows = await page.locator('#table-compare-peaks tbody tr').allInnerTexts();
    assert.deepEqual(peakRows[0].split('\t').map((x) => x.trim()), ['peak live tensors', '3 MiB', '2.5 MiB', '+512 KiB', '+20%']);
    assert.deepEqual(peakRows[3].split('\t').map((x) => x.trim()), ['CUDA max allocated', '3 MiB', '—', '—', '']);
    const lineRow = async (n: number): Promise<string[]> => (await page.locator('#table-compare-lines tbody tr').nth(n).locator('td').allInnerTexts()).map((x) => x.trim());
    assert.deepEqual(await lineRow(0), ['train.py:20', 'out = model(x)', '2 MiB', '2.5 MiB', '-512 KiB', '-20%']);
    assert.deepEqual(await page.locator('#table-compare-lines tbody tr:nth-child(1) td.bad').allInnerTexts(), ['-512 KiB', '-20%'], 'off by a fifth: flagged');
    await page.selectOption('#compare-line-figure', 'backward');
    assert.deepEqual(await lineRow(1), ['train.py:21', 'loss.backward()', '—', '1 MiB', '—', '']);
    const modules = (): Promise<string[]> => page.locator('#table-compare-modules tbody td:first-child').allInnerTexts();
    assert.deepEqual(await modules(), ['MLP', 'MLP/net.0', 'MLP/net', 'MLP/net.2'], 'largest difference first, modules missing from the measured run last');
    await page.selectOption('#compare-module-figure', 'saved');
    await page.click('button.sort[data-table="compare-modules"][data-key="difference"]');
    assert.deepEqual((await modules()).slice(0, 2), ['MLP', 'MLP/net.0'], 'ascending: the most under-predicted first');
    const state = await saved();
    assert.deepEqual(state?.compare, { line: 'backward', module: 'saved' });
    const sections = (await posted()).filter((x) => x.type === 'rendered').pop()?.sections as string[];
    assert.equal(sections[0], 'compare', JSON.stringify(sections));
  });

  it('renders a report the extension posts, and keeps the saved sort after a reload', async () => {
    await load(page, { model: null, sort: { key: 'net', descending: false } }, { model: null, sort: { key: 'net', descending: false } });
    assert.match(await page.locator('#app').innerText(), /No memory profile yet/);
    await page.evaluate((m) => (globalThis as unknown as Poster).postMessage({ type: 'show', model: m }, '*'), model() as unknown as Record<string, unknown>);
    await page.locator('table.lines tbody tr').first().waitFor();
    assert.deepEqual((await saved())?.sort, { key: 'net', descending: false });
    assert.equal((await saved())?.model?.lines.length, 3);
    await page.evaluate(() => (globalThis as unknown as Poster).postMessage({ type: 'exported', path: '/tmp/r.json' }, '*'));
    assert.match(await page.locator('.callout.good').innerText(), /Saved to \/tmp\/r\.json/);
  });
});
