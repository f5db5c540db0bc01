// MH008 deprecated-amp: `torch.cuda.amp.*` / `torch.cpu.amp.autocast` (deprecated in PyTorch 2.4 in favour
// of the device-generic `torch.amp` API). Fixes rewrite each use to the documented replacement:
//   torch.cuda.amp.autocast(args...)   -> torch.amp.autocast("cuda", args...)   (positional args -> keywords)
//   torch.cuda.amp.GradScaler(args...) -> torch.amp.GradScaler("cuda", args...) (same positional order)
//   torch.cpu.amp.autocast(args...)    -> torch.amp.autocast("cpu", args...)
//   torch.cuda.amp.custom_fwd/bwd      -> torch.amp.custom_fwd/bwd(..., device_type="cuda")
import { KeyMemo, NodeMemo, VersionMemo } from '../session';
import { childByField, childrenByField, firstNamedChild, type SourceFile, type SyntaxNode } from '../syntax';
import { importBindings, qualifiedName } from '../analysis/imports';
import { callsNamed } from '../analysis/calls';
import { argumentNodes, appendArgument, normalizeEdits, prependArgument } from '../analysis/call-edits';
import { torchAtLeast, type Fix, type Rule, type RuleFinding, type TextEdit } from '../types';

type Kind = 'autocast' | 'GradScaler' | 'custom_fwd' | 'custom_bwd';

interface Deprecated {
  readonly kind: Kind;
  readonly device: 'cuda' | 'cpu';
}

const DEPRECATED = new Map<string, Deprecated>([
  ['torch.cuda.amp.autocast', { kind: 'autocast', device: 'cuda' }],
  ['torch.cuda.amp.autocast_mode.autocast', { kind: 'autocast', device: 'cuda' }],
  ['torch.cuda.amp.GradScaler', { kind: 'GradScaler', device: 'cuda' }],
  ['torch.cuda.amp.grad_scaler.GradScaler', { kind: 'GradScaler', device: 'cuda' }],
  ['torch.cuda.amp.custom_fwd', { kind: 'custom_fwd', device: 'cuda' }],
  ['torch.cuda.amp.autocast_mode.custom_fwd', { kind: 'custom_fwd', device: 'cuda' }],
  ['torch.cuda.amp.custom_bwd', { kind: 'custom_bwd', device: 'cuda' }],
  ['torch.cuda.amp.autocast_mode.custom_bwd', { kind: 'custom_bwd', device: 'cuda' }],
  ['torch.cpu.amp.autocast', { kind: 'autocast', device: 'cpu' }],
  ['torch.cpu.amp.autocast_mode.autocast', { kind: 'autocast', device: 'cpu' }],
]);

/** `torch.cuda.amp.autocast(enabled, dtype, cache_enabled)`: positional order of the deprecated API. */
const AUTOCAST_POSITIONAL = ['enabled', 'dtype', 'cache_enabled'];

/** Conditions of a compatibility shim: code that picks the old API only where the new one is missing. */
const COMPAT_GUARD = /version|(hasattr|getattr)\(\s*torch\b|TORCH_\w*|is_torch_\w+/;

function describe(d: Deprecated): { old: string; replacement: string } {
  const mod = d.device === 'cpu' ? 'torch.cpu.amp' : 'torch.cuda.amp';
  if (d.kind === 'autocast' || d.kind === 'GradScaler') {
    return { old: `${mod}.${d.kind}(...)`, replacement: `torch.amp.${d.kind}("${d.device}", ...)` };
  }
  return { old: `${mod}.${d.kind}`, replacement: `torch.amp.${d.kind}(..., device_type="${d.device}")` };
}

function message(d: Deprecated): string {
  const { old, replacement } = describe(d);
  return (
    `\`${old}\` is deprecated since PyTorch 2.4 (FutureWarning, slated for removal); use \`${replacement}\`. ` +
    'Mixed precision is what keeps activations at half size, so keep it on the supported API.'
  );
}

/** A local name bound to the `torch` module (`import torch`, `import torch as th`), or null. */
function torchName(file: SourceFile): string | null {
  for (const b of importBindings(file).values()) if (b.qualified === 'torch') return b.local;
  return null;
}

/**
 * Inside an `except` fallback or a version/hasattr check, or after an early-return one
 * (`if hasattr(torch.amp, "GradScaler"): return ...` then the old API): a deliberate compatibility shim.
 */
const earlyExitGuards = new VersionMemo<number>('MH008.firstEarlyExitGuard');

/**
 * Where the first `if <version check>: return/raise` among a block's statements starts (Infinity when
 * none): one pass per block and version instead of one per deprecated call under it.
 */
function firstEarlyExitGuard(file: SourceFile, block: SyntaxNode): number {
  return earlyExitGuards.keyed(file, block, () => {
    for (const sibling of block.children) {
      if (sibling.type !== 'if_statement') continue;
      const cond = childByField(sibling, 'condition');
      if (cond !== null && COMPAT_GUARD.test(file.textOf(cond)) && /\b(return|raise)\b/.test(file.textOf(childByField(sibling, 'consequence') ?? sibling))) return sibling.start;
    }
    return Infinity;
  });
}

function isCompatShim(file: SourceFile, node: SyntaxNode): boolean {
  let child = node;
  for (let p = node.parent; p !== null; child = p, p = p.parent) {
    if ((p.type === 'block' || p.type === 'module') && firstEarlyExitGuard(file, p) < child.start) return true;
    if (p.type === 'except_clause' || p.type === 'except_group_clause') return true;
    if (p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'conditional_expression') {
      const cond = p.type === 'conditional_expression' ? (p.children.filter((c) => c.named)[1] ?? null) : childByField(p, 'condition');
      if (cond !== null && COMPAT_GUARD.test(file.textOf(cond))) return true;
    }
  }
  return false;
}

/** Argument edits turning a deprecated call's arguments into the torch.amp ones, or null when unsafe. */
function argumentEdits(file: SourceFile, call: SyntaxNode, d: Deprecated): TextEdit[] | null {
  const args = argumentNodes(call);
  if (args === null) return null;
  if (d.kind === 'GradScaler') {
    const e = prependArgument(call, `"${d.device}"`);
    return e === null ? null : [e];
  }
  if (d.kind === 'autocast') {
    if (args.some((a) => a.type === 'list_splat')) return null;
    const positional = args.filter((a) => a.type !== 'keyword_argument' && a.type !== 'dictionary_splat');
    if (positional.length > AUTOCAST_POSITIONAL.length) return null;
    if (args.some((a) => a.type === 'keyword_argument' && /^device(_type)?\s*=/.test(file.textOf(a)))) return null;
    const e = prependArgument(call, `"${d.device}"`);
    if (e === null) return null;
    const edits: TextEdit[] = [e];
    positional.forEach((a, i) => edits.push({ start: a.start, end: a.start, newText: `${AUTOCAST_POSITIONAL[i]}=` }));
    return edits;
  }
  const e = appendArgument(call, `device_type="${d.device}"`);
  return e === null ? null : [e];
}

/** Edits for one use: `callee` is the name/attribute node, `call` its call (null for a bare decorator). */
function useEdits(file: SourceFile, callee: SyntaxNode, call: SyntaxNode | null, d: Deprecated, newCallee: string | null): TextEdit[] | null {
  const edits: TextEdit[] = [];
  if (newCallee !== null) edits.push({ start: callee.start, end: callee.end, newText: newCallee });
  if (call === null) {
    // bare `@custom_fwd` decorator
    if (d.kind !== 'custom_fwd' && d.kind !== 'custom_bwd') return null;
    edits.push({ start: callee.end, end: callee.end, newText: `(device_type="${d.device}")` });
    return normalizeEdits(file.text, edits);
  }
  const args = argumentEdits(file, call, d);
  if (args === null) return null;
  return normalizeEdits(file.text, [...edits, ...args]);
}

/** How a name/attribute node is used: called, bare decorator, or something else. */
function useSite(node: SyntaxNode): { call: SyntaxNode | null; bareDecorator: boolean } | null {
  const parent = node.parent;
  if (parent === null) return null;
  if (parent.type === 'call' && node.field === 'function') return { call: parent, bareDecorator: false };
  if (parent.type === 'decorator') return { call: null, bareDecorator: true };
  return null;
}

interface ImportedName {
  readonly local: string;
  readonly d: Deprecated;
}

/** The fix for a `from torch.cuda.amp import ...` statement: the module path and every use together. */
function importFix(file: SourceFile, stmt: SyntaxNode, moduleNode: SyntaxNode, names: readonly ImportedName[], allKnown: boolean): Fix | null {
  if (!allKnown) return null;
  const edits: TextEdit[] = [{ start: moduleNode.start, end: moduleNode.end, newText: 'torch.amp' }];
  const byLocal = new Map(names.map((n) => [n.local, n.d]));
  const uses = [...byLocal.keys()].flatMap((local) => identifiersNamed(file, local)).sort((a, b) => a.start - b.start);
  for (const id of uses) {
    const d = byLocal.get(file.textOf(id))!;
    if (id.start >= stmt.start && id.end <= stmt.end) continue;
    if (findImport(id)) {
      // imported again elsewhere under the same name: cannot tell the uses apart
      return null;
    }
    const site = useSite(id);
    if (site === null) return null; // referenced, rebound or passed around: not a plain use
    const e = useEdits(file, id, site.call, d, null);
    if (e === null) return null;
    edits.push(...e);
  }
  const merged = normalizeEdits(file.text, edits);
  return merged === null ? null : { title: 'Switch to torch.amp (import and every use)', edits: merged };
}

/**
 * The file's identifiers named `text`, in document order, found once per version and name in the
 * statements' by-type indexes (compared in place, no substring per identifier). Only the few names
 * the deprecated imports bind are ever asked for: an index of every identifier by name (kept per
 * function for edits) held about a seventh of a big file's lint heap for these few lookups.
 */
function identifiersNamed(file: SourceFile, text: string): readonly SyntaxNode[] {
  return identifiersByName.keyed(file, text, () => {
    const out: SyntaxNode[] = [];
    for (const unit of file.root.children) for (const id of unitIdentifiersNamed(file, unit, text)) out.push(id);
    return out;
  });
}

const identifiersByName = new VersionMemo<readonly SyntaxNode[]>('MH008.identifiersNamed');

/**
 * One statement's identifiers named `text`, kept on the statement (by name, filled as names are asked;
 * purely syntactic): an edit rescans the statement it rebuilt, not every identifier of the file.
 */
function unitIdentifiersNamed(file: SourceFile, unit: SyntaxNode, text: string): readonly SyntaxNode[] {
  const byName = unitIdentifiers.get(file, unit, '', () => new Map());
  let list = byName.get(text);
  if (list === undefined) {
    const out: SyntaxNode[] = [];
    for (const id of file.nodesOfTypeInUnit(unit, 'identifier')) {
      if (id.end - id.start === text.length && file.text.startsWith(text, id.start)) out.push(id);
    }
    byName.set(text, (list = out));
  }
  return list;
}

const unitIdentifiers = new NodeMemo<Map<string, readonly SyntaxNode[]>>('MH008.unitIdentifiers');

function findImport(node: SyntaxNode): boolean {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'import_from_statement' || p.type === 'import_statement') return true;
    if (p.type === 'block' || p.type === 'module') return false;
  }
  return false;
}

export const deprecatedAmp: Rule = {
  code: 'MH008',
  name: 'deprecated-amp',
  severity: 'info',
  summary: '`torch.cuda.amp.*` and `torch.cpu.amp.autocast` are deprecated since PyTorch 2.4; use `torch.amp`.',
  check(file, _session, options) {
    // Not deprecated on an older target (and torch.amp.GradScaler / custom_fwd only exist since 2.3 / 2.4).
    if (!torchAtLeast(options.targetTorch, 2, 4)) return [];
    const findings: RuleFinding[] = [];
    if (!file.text.includes('amp')) return findings; // every deprecated spelling goes through a `...amp` module
    const importFixes = new Map<string, Fix | null>(); // local name -> its import statement's fix
    const starModules: string[] = [];

    for (const stmt of file.nodesOfType('import_from_statement')) {
      const moduleNode = childByField(stmt, 'module_name');
      if (moduleNode === null || moduleNode.type !== 'dotted_name') continue;
      const moduleName = file.textOf(moduleNode).replace(/\s+/g, '');
      if (!/^torch\.(cuda|cpu)\.amp(\.autocast_mode|\.grad_scaler)?$/.test(moduleName)) continue;
      if (isCompatShim(file, stmt)) continue;
      const names: ImportedName[] = [];
      let allKnown = moduleName === 'torch.cuda.amp' || moduleName === 'torch.cpu.amp';
      for (const item of childrenByField(stmt, 'name')) {
        const nameNode = item.type === 'aliased_import' ? childByField(item, 'name') : item;
        const aliasNode = item.type === 'aliased_import' ? childByField(item, 'alias') : item;
        if (nameNode === null || aliasNode === null) {
          allKnown = false;
          continue;
        }
        const d = DEPRECATED.get(`${moduleName}.${file.textOf(nameNode)}`);
        if (d === undefined) {
          allKnown = false;
          continue;
        }
        names.push({ local: file.textOf(aliasNode), d });
      }
      if (stmt.children.some((c) => c.type === 'wildcard_import')) {
        // `from torch.cuda.amp import *`: the deprecated names arrive unnamed; each use is reported below.
        starModules.push(moduleName);
        findings.push({ start: moduleNode.start, end: moduleNode.end, message: `\`from ${moduleName} import *\`: ${message(starDeprecated(moduleName))}`, fix: null });
        continue;
      }
      if (names.length === 0) continue;
      const fix = importFix(file, stmt, moduleNode, names, allKnown);
      for (const n of names) importFixes.set(n.local, fix);
      const list = names.map((n) => `\`${n.local}\``).join(', ');
      findings.push({
        start: moduleNode.start,
        end: moduleNode.end,
        message: `${list} from \`${moduleName}\`: ${message(names[0].d)}`,
        fix,
      });
    }

    const torch = torchName(file);
    const bindings = bindingCounts(file);
    const seen = new Set<SyntaxNode>();
    // Cheap prefilter: the last segment must be a deprecated name or a local alias of one.
    const candidates = new Set(['autocast', 'GradScaler', 'custom_fwd', 'custom_bwd']);
    for (const b of importBindings(file).values()) if (DEPRECATED.has(b.qualified)) candidates.add(b.local);
    const lastSegment = (node: SyntaxNode): string => {
      const attr = node.type === 'attribute' ? childByField(node, 'attribute') : node;
      return attr === null ? '' : file.textOf(attr);
    };
    const consider = (node: SyntaxNode): void => {
      if (seen.has(node) || !candidates.has(lastSegment(node))) return;
      seen.add(node);
      const name = starQualified(file, node, starModules) ?? qualifiedName(file, node);
      if (name === null) return;
      const d = DEPRECATED.get(name);
      if (d === undefined || isCompatShim(file, node)) return;
      // `amp.autocast("cuda")` where a try/except shim binds `amp` to torch.amp or torch.cuda.amp: whichever
      // this torch has (rewriting it would turn the device argument into `enabled="cuda"`).
      if (node.type === 'attribute' && (bindings.get(rootName(file, node)) ?? 0) > 1) return;
      const site = useSite(node);
      if (site === null) {
        if (!isAliasing(file, node) && !isPassedAsValue(file, node)) return;
        // A name a try/except import shim binds twice is whichever API this torch has.
        if (node.type === 'identifier' && starQualified(file, node, starModules) === null && (bindings.get(file.textOf(node)) ?? 0) > 1) return;
        findings.push({ start: node.start, end: node.end, message: message(d), fix: null });
        return;
      }
      let fix: Fix | null = null;
      if (node.type === 'identifier' && starQualified(file, node, starModules) !== null) {
        fix = null; // star-imported: a fix of the import would have to name every use
      } else if (node.type === 'identifier') {
        // A name imported from torch.cuda.amp by a flagged import (not a fallback, not bound twice);
        // the import's fix rewrites the import and all uses together.
        const local = file.textOf(node);
        if (!importFixes.has(local) || (bindings.get(local) ?? 0) > 1) return;
        fix = importFixes.get(local) ?? null;
      } else if (torch !== null) {
        const edits = useEdits(file, node, site.call, d, `${torch}.amp.${d.kind}`);
        if (edits !== null) fix = { title: `Use \`torch.amp.${d.kind}\``, edits };
      }
      const target = site.call ?? node;
      findings.push({ start: target.start, end: target.end, message: message(d), fix });
    };
    for (const name of candidates) {
      for (const call of callsNamed(file, name)) {
        const fn = childByField(call, 'function');
        if (fn !== null && (fn.type === 'identifier' || fn.type === 'attribute')) consider(fn);
      }
    }
    for (const dec of file.nodesOfType('decorator')) {
      const expr = firstNamedChild(dec);
      if (expr !== null && (expr.type === 'identifier' || expr.type === 'attribute')) consider(expr);
    }
    for (const assign of file.nodesOfType('assignment')) {
      const right = childByField(assign, 'right');
      if (right !== null && (right.type === 'attribute' || right.type === 'identifier')) consider(right);
    }
    // The API used as a value: `partial(torch.cuda.amp.autocast, enabled=...)`, `Trainer(scaler_cls=GradScaler)`.
    for (const name of candidates) {
      for (const id of identifiersNamed(file, name)) {
        const node = id.parent?.type === 'attribute' && id.field === 'attribute' ? id.parent : id;
        if (isPassedAsValue(file, node)) consider(node);
      }
    }
    findings.push(...moduleImports(file, bindings));
    return findings;
  },
};

const DEPRECATED_MODULES = new Set(['torch.cuda.amp', 'torch.cpu.amp']);

/**
 * `from torch.cuda import amp` / `import torch.cuda.amp as amp`: the import that binds the deprecated
 * namespace, reported like `from torch.cuda.amp import autocast` when the file uses a deprecated object
 * through it (`amp.autocast()`, `amp.GradScaler()`): the line where a reader looks for the API in use and
 * where the upgrade starts. No fix: `from torch import amp` alone would leave `amp.autocast()` without
 * the device argument torch.amp requires; each use carries its own fix. Not for shims (an `except`
 * fallback, a version check, a name the imports bind twice) or a namespace no deprecated use goes through.
 */
function moduleImports(file: SourceFile, bindings: ReadonlyMap<string, number>): RuleFinding[] {
  const findings: RuleFinding[] = [];
  for (const type of ['import_statement', 'import_from_statement']) {
    for (const stmt of file.nodesOfType(type)) {
      const moduleNode = type === 'import_from_statement' ? childByField(stmt, 'module_name') : null;
      const prefix = moduleNode === null ? '' : `${file.textOf(moduleNode).replace(/\s+/g, '')}.`;
      if (type === 'import_from_statement' && !/^torch\.(cuda|cpu)\.$/.test(prefix)) continue;
      for (const item of childrenByField(stmt, 'name')) {
        // `import torch.cuda.amp` (no alias) binds `torch`: its uses are spelled out and reported themselves.
        if (type === 'import_statement' && item.type !== 'aliased_import') continue;
        const nameNode = item.type === 'aliased_import' ? childByField(item, 'name') : item;
        const aliasNode = item.type === 'aliased_import' ? childByField(item, 'alias') : item;
        if (nameNode === null || aliasNode === null) continue;
        const module = prefix + file.textOf(nameNode).replace(/\s+/g, '');
        const local = file.textOf(aliasNode);
        if (!DEPRECATED_MODULES.has(module) || (bindings.get(local) ?? 0) > 1 || isCompatShim(file, stmt)) continue;
        const used = deprecatedUses(file, local, module);
        if (used.length === 0) {
          if (isUnusedImport(file, local)) findings.push(unusedImportFinding(item, local, module));
          continue;
        }
        findings.push({
          start: item.start,
          end: item.end,
          message: `\`${local}\` is \`${module}\`, used here for ${used.map((k) => `\`${local}.${k}\``).join(', ')}: ${message(DEPRECATED.get(`${module}.${used[0]}`)!)}`,
          fix: null,
        });
      }
    }
  }
  return findings;
}

/**
 * A namespace import nothing in the file reads (`from torch.cuda import amp` left behind after the code
 * moved to `torch.autocast`): it still ties the file to the deprecated module, and deleting it is the
 * whole upgrade. A name the module re-exports (`__all__ = ["amp"]`) is read by its importers: not unused.
 */
function isUnusedImport(file: SourceFile, local: string): boolean {
  if (identifiersNamed(file, local).some((id) => !findImport(id))) return false;
  return !new RegExp(`__all__[^\\])]*['"]${local}['"]`).test(file.text);
}

function unusedImportFinding(item: SyntaxNode, local: string, module: string): RuleFinding {
  return {
    start: item.start,
    end: item.end,
    message:
      `\`${local}\` is \`${module}\`, deprecated since PyTorch 2.4 and slated for removal, and nothing here uses it: ` +
      'remove the import (mixed precision goes through `torch.amp` / `torch.autocast`).',
    fix: null,
  };
}

/** The leftmost name of a dotted expression (`amp` for `amp.autocast`). */
function rootName(file: SourceFile, node: SyntaxNode): string {
  let n: SyntaxNode | null = node;
  while (n?.type === 'attribute') n = childByField(n, 'object');
  return n === null ? '' : file.textOf(n);
}

/** The deprecated members used through `local` (`autocast` for `amp.autocast(...)`), outside imports and shims, in first-use order. */
function deprecatedUses(file: SourceFile, local: string, module: string): string[] {
  const out: string[] = [];
  for (const id of identifiersNamed(file, local)) {
    const parent = id.parent;
    if (parent?.type !== 'attribute' || id.field !== 'object' || findImport(id)) continue;
    const member = file.textOf(childByField(parent, 'attribute') ?? parent);
    if (DEPRECATED.has(`${module}.${member}`) && !out.includes(member) && !isCompatShim(file, parent)) out.push(member);
  }
  return out;
}

// Keyed by the bindings map, which versions with the same import statements share (see importBindings).
const countsCache = new KeyMemo<Map<string, number>>('MH008.bindingCounts', 4);

/**
 * How many different things the import statements bind each local name to. A try/except import shim binds
 * it to two (`torch.amp.autocast` and `torch.cuda.amp.autocast`): whichever API this torch has. The same
 * import repeated, e.g. `from torch.cuda.amp import autocast` local to each of several functions, binds it
 * to one thing, the deprecated API, every time.
 */
function bindingCounts(file: SourceFile): Map<string, number> {
  return countsCache.get(file, [importBindings(file)], () => countBindings(file));
}

function countBindings(file: SourceFile): Map<string, number> {
  const targets = new Map<string, Set<string>>();
  const add = (name: string, qualified: string): void => {
    const set = targets.get(name) ?? new Set<string>();
    set.add(qualified);
    targets.set(name, set);
  };
  for (const type of ['import_statement', 'import_from_statement']) {
    for (const stmt of file.nodesOfType(type)) {
      const moduleNode = type === 'import_from_statement' ? childByField(stmt, 'module_name') : null;
      const prefix = moduleNode === null ? '' : `${file.textOf(moduleNode).replace(/\s+/g, '')}.`;
      for (const item of childrenByField(stmt, 'name')) {
        if (item.type === 'aliased_import') {
          const alias = childByField(item, 'alias');
          const name = childByField(item, 'name');
          if (alias !== null) add(file.textOf(alias), prefix + (name === null ? '' : file.textOf(name)));
        } else {
          const text = file.textOf(item);
          add(text.split('.')[0], prefix === '' ? text.split('.')[0] : prefix + text);
        }
      }
    }
  }
  return new Map([...targets].map(([name, set]) => [name, set.size]));
}

/**
 * The deprecated object handed on as a value, to be constructed or entered elsewhere: an argument
 * (`functools.partial(torch.cuda.amp.autocast, enabled=True)`, `run(ctx=autocast)`), a returned value, or a
 * branch of a conditional (`amp.autocast if use_amp else nullcontext`). `isinstance(x, GradScaler)` only
 * references the class and does not warn.
 */
function isPassedAsValue(file: SourceFile, node: SyntaxNode): boolean {
  const parent = node.parent;
  if (parent === null) return false;
  if (parent.type === 'return_statement' || parent.type === 'conditional_expression') return true;
  const list = parent.type === 'keyword_argument' && node.field === 'value' ? parent.parent : parent;
  if (list === null || list.type !== 'argument_list' || (parent.type !== 'keyword_argument' && parent !== list)) return false;
  const call = list.parent;
  const callee = call?.type === 'call' ? childByField(call, 'function') : null;
  return callee === null || !/^(isinstance|issubclass)$/.test(file.textOf(callee));
}

/** What an unbound name means under `from torch.cuda.amp import *` (`autocast` -> "torch.cuda.amp.autocast"), or null. */
function starQualified(file: SourceFile, node: SyntaxNode, starModules: readonly string[]): string | null {
  if (node.type !== 'identifier' || importBindings(file).has(file.textOf(node))) return null;
  for (const m of starModules) {
    const name = `${m}.${file.textOf(node)}`;
    if (DEPRECATED.has(name)) return name;
  }
  return null;
}

/** A representative deprecated object of a module (for the star import's message). */
function starDeprecated(moduleName: string): Deprecated {
  return DEPRECATED.get(`${moduleName}.autocast`) ?? DEPRECATED.get(`${moduleName}.GradScaler`) ?? { kind: 'autocast', device: moduleName.includes('cpu') ? 'cpu' : 'cuda' };
}

/** `amp_autocast = torch.cuda.amp.autocast`: an alias that is called later. */
function isAliasing(file: SourceFile, node: SyntaxNode): boolean {
  const parent = node.parent;
  return parent !== null && parent.type === 'assignment' && node.field === 'right' && childByField(parent, 'left')?.type === 'identifier' && file.textOf(node).includes('amp');
}

export const rule = deprecatedAmp;
