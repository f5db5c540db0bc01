// Fuzz: thousands of mutated, truncated and garbage inputs through every rule. The linter must never throw,
// each lint must stay fast, and every finding and fix edit must lie inside the text. Incremental re-lints
// after random edits must agree with a fresh lint of the same text.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { defaultSettings, lintFile, type Finding, type Linter, type TorchVersion } from '../../../src/lint';
import { getLinter, getOracle } from './harness';

const fixturesRoot = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');
// Time is CPU time of this process (process.cpuUsage), so other work on a shared machine does not make
// the bounds flaky. A lint normally costs 1-5 ms for a fixture and ~20 ms for a 10 KB training script.
/** Per-lint bound for realistic (mutated training script) inputs up to ~64 KB; larger get 3 ms per KB. */
const PER_LINT_MS = 200;
/**
 * Bound for token-soup mutations (runs of `try:` or `*` thousands long): tree-sitter's error recovery
 * alone takes ~100 ms CPU on 5 KB of `try:try:...`, so these get a wider, still finite, budget.
 */
const SOUP_LINT_MS = 500;
const PER_KB_MS = 3;
/**
 * Bound on the whole suite's CPU time: a catch for super-linear regressions, not a benchmark. It counts
 * V8's GC threads too (CPU exceeds wall: 22.5 s CPU in 16.9 s wall), and the same VM image measured
 * 22.2-22.5 s CPU for ~4,100 lints, so the bound sits at about twice that.
 */
const TOTAL_CPU_MS = 45_000;
const SEED = Number(process.env.MEMHINT_FUZZ_SEED ?? 20261202);

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function seedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.py')) out.push(fs.readFileSync(p, 'utf8'));
    }
  };
  walk(path.join(fixturesRoot, 'lint'));
  walk(path.join(fixturesRoot, 'corpus'));
  return out;
}

/** Tokens that steer the parser and the rules into their interesting paths. */
const TOKENS = [
  '(', ')', '[', ']', '{', '}', ':', ',', '.', '=', '+=', '**', '*', '@', '\\', '#', '# noqa', '# noqa: MH005',
  '"', "'", '"""', "'''", 'f"', '\n', '\r\n', '\r', '\t', '    ', '\n    ', '\n        ', '\u0000', '\ufeff', '\ud800', '\udc00',
  'é', '😀', 'for ', ' in ', 'while True:', 'if ', 'else:', 'elif ', 'try:', 'except RuntimeError:', 'finally:',
  'with ', 'def ', 'class ', 'lambda ', 'return ', 'yield ', 'async ', 'await ', 'import ', 'from ', ' as ', 'pass',
  'torch.cuda.empty_cache()', 'gc.collect()', 'import gc', 'loss.backward()', 'optimizer.step()', 'scaler.step(opt)',
  'optimizer.zero_grad(set_to_none=False)', 'p.grad.zero_()', 'p.grad = torch.zeros_like(p)', 'model.zero_grad()',
  'torch.cuda.amp.autocast(', 'from torch.cuda.amp import autocast, GradScaler', 'GradScaler(', '@torch.cuda.amp.custom_fwd',
  'torch.optim.Adam(model.parameters())', 'Net()', 'DataLoader(ds, pin_memory=True)', 'DataLoader(ds, **kw)',
  'for x, y in loader:', 'for i, batch in enumerate(tqdm(train_loader)):', 'x.to(device)', '.cuda()', 'batch.items()',
  'device = torch.device("cuda")', 'kw = {"pin_memory": True}', 'kw.update(', 'model(x)', 'criterion(out, y)',
  'with torch.no_grad():', 'model.eval()', 'total += loss', 'losses.append(loss)', 'retain_graph=True',
];

type Mutation =
  | { kind: 'truncate'; at: number }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'insert'; at: number; text: string }
  | { kind: 'nest'; at: number; open: string; close: string; depth: number }
  | { kind: 'duplicate'; at: number; length: number; times: number }
  | { kind: 'hugeLine'; at: number; unit: string; times: number }
  | { kind: 'dedent'; at: number };

const position = fc.double({ min: 0, max: 1, noNaN: true });
const junk = fc.oneof(
  fc.constantFrom(...TOKENS),
  fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: 12 }).map((t) => t.join(' ')),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.string({ unit: 'grapheme-composite', maxLength: 12 }),
  fc.uint8Array({ maxLength: 16 }).map((bytes) => String.fromCharCode(...bytes)),
);

const mutation: fc.Arbitrary<{ kind: Mutation['kind']; pos: number; n: number; text: string }> = fc.record({
  kind: fc.constantFrom<Mutation['kind']>('truncate', 'delete', 'delete', 'insert', 'insert', 'insert', 'nest', 'duplicate', 'hugeLine', 'dedent'),
  pos: position,
  n: fc.integer({ min: 1, max: 400 }),
  text: junk,
});

function apply(text: string, m: { kind: Mutation['kind']; pos: number; n: number; text: string }): string {
  const at = Math.floor(m.pos * (text.length + 1));
  switch (m.kind) {
    case 'truncate':
      return text.slice(0, at);
    case 'delete':
      return text.slice(0, at) + text.slice(at + m.n);
    case 'insert':
      return text.slice(0, at) + m.text + text.slice(at);
    case 'nest': {
      const [open, close] = [['(', ')'], ['[', ']'], ['{', '}'], ['f(', ')'], ['not ', ''], ['-', ''], ['lambda: ', '']][m.n % 7];
      const depth = 10 + m.n; // up to ~400 levels (deeper shapes: the pathological test)
      return text.slice(0, at) + open.repeat(depth) + 'x' + close.repeat(m.pos < 0.5 ? depth : Math.floor(depth / 2)) + text.slice(at);
    }
    case 'duplicate': {
      const span = text.slice(at, at + m.n);
      return text.slice(0, at) + span.repeat(1 + (m.n % 8)) + text.slice(at);
    }
    case 'hugeLine':
      // ~5,000 characters: long generated lines happen (data literals, minified strings); 20,000-character
      // runs of one token are in the pathological test.
      return text.slice(0, at) + (m.text || 'x').repeat(Math.ceil(5_000 / Math.max(1, m.text.length))) + text.slice(at);
    case 'dedent': {
      const lines = text.split('\n');
      const i = Math.floor(m.pos * lines.length);
      if (lines[i] !== undefined) lines[i] = lines[i].replace(/^\s+/, m.n % 2 === 0 ? '' : '\t ');
      return lines.join('\n');
    }
  }
}

const TARGETS: (TorchVersion | null)[] = [null, { major: 1, minor: 6 }, { major: 1, minor: 13 }, { major: 2, minor: 0 }, { major: 2, minor: 3 }, { major: 2, minor: 4 }];

function checkFindings(text: string, findings: readonly Finding[]): void {
  for (const f of findings) {
    assert.ok(Number.isInteger(f.start) && Number.isInteger(f.end), `${f.code}: non-integer range`);
    assert.ok(f.start >= 0 && f.start <= f.end && f.end <= text.length, `${f.code}: range ${f.start}-${f.end} outside text of ${text.length}`);
    assert.ok(typeof f.message === 'string' && f.message.length > 0, `${f.code}: empty message`);
    if (f.fix !== null) {
      for (const e of f.fix.edits) {
        assert.ok(e.start >= 0 && e.start <= e.end && e.end <= text.length, `${f.code}: fix edit ${e.start}-${e.end} outside text`);
        assert.equal(typeof e.newText, 'string');
      }
      const sorted = [...f.fix.edits].sort((a, b) => a.start - b.start || a.end - b.end);
      for (let i = 1; i < sorted.length; i++) assert.ok(sorted[i].start >= sorted[i - 1].end, `${f.code}: overlapping edits in one fix`);
    }
  }
}

describe('lint fuzz (never throws, bounded time, ranges inside the text)', function () {
  this.timeout(120_000);
  let linter: Linter;
  /** Fresh lints come from a separate Linter: no state shared with the incremental path they check. */
  let oracle: Linter;
  /** Small seeds (rule fixtures) for the bulk runs, every seed for the prefix and incremental runs. */
  let seeds: string[];
  let small: string[];
  let cpuStart = 0;
  const started = Date.now();
  let lints = 0;
  let slowest = 0;
  let slowestText = '';

  before(async () => {
    linter = await getLinter();
    oracle = await getOracle();
    seeds = seedFiles();
    small = seeds.filter((s) => s.length <= 4000);
    assert.ok(small.length >= 10, 'not enough fixture files to mutate');
    // Warm the JIT so the per-lint bound measures the linter, not compilation.
    for (const s of seeds.slice(0, 10)) oracle.lintText(s);
    cpuStart = cpuMs();
  });

  const lintTimed = (text: string, target: TorchVersion | null, budget = PER_LINT_MS): Finding[] => {
    const t0 = cpuMs();
    let findings: Finding[];
    try {
      findings = oracle.lintText(text, { ...defaultSettings, targetTorch: target });
    } catch (err) {
      assert.fail(`lint threw on input (${text.length} chars): ${String(err)}\n---\n${text.slice(0, 500)}`);
    }
    let ms = cpuMs() - t0;
    const bound = Math.max(budget, (text.length / 1024) * PER_KB_MS);
    // process.cpuUsage counts every thread of the process, so one major GC (its helper threads) can land
    // inside a 2 ms lint. A slow input is slow on every try; a GC pause is not: re-measure, keep the fastest.
    for (let retry = 0; retry < 2 && ms >= bound; retry++) {
      const t1 = cpuMs();
      oracle.lintText(text, { ...defaultSettings, targetTorch: target });
      ms = Math.min(ms, cpuMs() - t1);
    }
    lints++;
    if (ms > slowest) {
      slowest = ms;
      slowestText = text.slice(0, 200);
    }
    assert.ok(ms < bound, `lint took ${ms.toFixed(1)} ms CPU (> ${bound.toFixed(0)}) on ${text.length} chars: ${JSON.stringify(text.slice(0, 200))}`);
    checkFindings(text, findings);
    return findings;
  };

  it('mutated fixtures (truncation, deletion, insertion, nesting, huge lines)', () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 4 }), fc.nat(TARGETS.length - 1), (seedIndex, mutations, t) => {
        let text = small[seedIndex % small.length];
        for (const m of mutations) text = apply(text, m);
        lintTimed(text, TARGETS[t], SOUP_LINT_MS);
      }),
      { numRuns: 1200, seed: SEED },
    );
  });

  it('mutated training scripts (the larger corpus files)', () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation.filter((m) => m.kind !== 'hugeLine' && m.kind !== 'nest'), { minLength: 1, maxLength: 3 }), (seedIndex, mutations) => {
        let text = seeds[seedIndex % seeds.length];
        for (const m of mutations) text = apply(text, m);
        lintTimed(text, null);
      }),
      { numRuns: 150, seed: SEED + 3 },
    );
  });

  it('garbage and token soup', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(junk, { maxLength: 60 }).map((parts) => parts.join('')),
          fc.string({ unit: 'binary', maxLength: 2000 }),
          fc.array(fc.constantFrom(...TOKENS), { maxLength: 300 }).map((t) => t.join('')),
        ),
        fc.nat(TARGETS.length - 1),
        (text, t) => {
          lintTimed(text, TARGETS[t], SOUP_LINT_MS);
        },
      ),
      { numRuns: 2000, seed: SEED + 1 },
    );
  });

  it('every prefix of a fixture (truncation at each line and inside tokens)', () => {
    const sample = small.filter((s) => /empty_cache|zero_grad|amp|DataLoader/.test(s)).slice(0, 8);
    for (const s of sample) {
      const cuts = new Set<number>();
      for (let i = 0; i < s.length; i += Math.max(1, Math.floor(s.length / 60))) cuts.add(i);
      for (const cut of cuts) lintTimed(s.slice(0, cut), null);
    }
  });

  it('pathological shapes: deep nesting, long lines, many statements', function () {
    // Parsing alone costs ~100-200 ms CPU for 10,000-level nesting; the bound catches superlinear rules.
    const bound = 1500;
    const shapes = [
      '('.repeat(5000) + ')'.repeat(5000),
      '['.repeat(3000),
      'x = ' + '-'.repeat(10_000) + '1',
      'for x in loader:\n' + '    '.repeat(1) + 'torch.cuda.empty_cache()\n'.repeat(1),
      'for x in loader:\n    loss.backward()\n' + Array.from({ length: 300 }, (_, i) => '    '.repeat(i + 1) + 'for y in loader:\n').join('') + '    '.repeat(302) + 'torch.cuda.empty_cache()\n',
      'if x:\n' + Array.from({ length: 500 }, (_, i) => ' '.repeat(i + 1) + 'if x:\n').join(''),
      'a' + '.b'.repeat(20_000),
      'f' + '(x)'.repeat(20_000),
      'for x in loader:\n    loss.backward()\n    y = torch.optim.SGD' + '(x)'.repeat(5000) + '\n',
      'x = ' + '('.repeat(10_000) + 'x' + ')'.repeat(10_000),
      '*'.repeat(20_000) + '\nfor x in loader:\n    loss.backward()\n',
      '('.repeat(20_000) + '\nimport torch\n',
      'x = "' + 'é😀'.repeat(20_000) + '"',
      'import torch\n' + 'torch.cuda.amp.autocast()\n'.repeat(3000),
      'for x, y in loader:\n' + '    x = x.to(device)\n'.repeat(2000),
      '\r'.repeat(5000) + 'x',
      '\\\n'.repeat(5000),
      'def f(' + 'a, '.repeat(5000) + '):\n    pass\n',
      'for ' + '('.repeat(2000) + 'a' + ')'.repeat(2000) + ' in loader:\n    a.to(device)\n',
      'loader = DataLoader(ds, pin_memory=True)\nfor ' + '('.repeat(1000) + 'a, b' + ')'.repeat(1000) + ' in loader:\n    a = a.to(device)\n    loss.backward()\n',
    ];
    for (const s of shapes) {
      const t0 = cpuMs();
      const findings = linter.lintText(s);
      let ms = cpuMs() - t0;
      // As in lintTimed: a GC pause is not repeatable, a superlinear input is.
      for (let retry = 0; retry < 2 && ms >= bound; retry++) {
        const t1 = cpuMs();
        linter.lintText(s);
        ms = Math.min(ms, cpuMs() - t1);
      }
      lints++;
      assert.ok(ms < bound, `lint took ${ms.toFixed(0)} ms CPU (> ${bound}) on ${JSON.stringify(s.slice(0, 80))}`);
      checkFindings(s, findings);
    }
  });

  it('incremental re-lints after random edits agree with fresh lints', () => {
    fc.assert(
      fc.property(
        fc.nat(),
        fc.array(fc.record({ pos: position, del: fc.nat(40), text: junk }), { minLength: 1, maxLength: 8 }),
        (seedIndex, edits) => {
          const seed = small[seedIndex % small.length];
          const doc = linter.open(seed);
          try {
            let text = seed;
            for (const e of edits) {
              const at = Math.floor(e.pos * (text.length + 1));
              const rangeLength = Math.min(e.del, text.length - at);
              doc.update([{ rangeOffset: at, rangeLength, text: e.text }]);
              text = text.slice(0, at) + e.text + text.slice(at + rangeLength);
              assert.equal(doc.text, text);
              let incremental: Finding[];
              try {
                incremental = lintFile(doc.source, defaultSettings);
              } catch (err) {
                assert.fail(`incremental lint threw: ${String(err)}`);
              }
              checkFindings(text, incremental);
              const fresh = lintTimed(text, null, SOUP_LINT_MS);
              const key = (f: Finding): string => `${f.code}:${f.start}:${f.end}`;
              assert.deepEqual(incremental.map(key), fresh.map(key), 'incremental and fresh lints differ');
            }
          } finally {
            doc.dispose();
          }
        },
      ),
      { numRuns: 60, seed: SEED + 2 },
    );
  });

  it('stays within its CPU budget', () => {
    const cpu = cpuMs() - cpuStart;
    // Reported so regressions are visible in the test log.
    process.stdout.write(
      `      fuzz: ${lints} lints, ${cpu.toFixed(0)} ms CPU (${Date.now() - started} ms wall), slowest ${slowest.toFixed(1)} ms on ${JSON.stringify(slowestText.slice(0, 60))}\n`,
    );
    assert.ok(lints >= 3000, `only ${lints} lints ran`);
    assert.ok(cpu < TOTAL_CPU_MS, `fuzz suite used ${cpu.toFixed(0)} ms CPU (> ${TOTAL_CPU_MS})`);
  });
});
