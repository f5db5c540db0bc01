// The value a configuration object built in the project's own code gives one of its attributes:
// `hparams.pin_memory` where hparams.py builds `hparams = HParams(..., pin_memory=True, ...)` (the
// tf.contrib-style hyper-parameter objects of r9y9's vocoders and their many forks), or the object is
// `dict(pin_memory=True)`, `SimpleNamespace(pin_memory=True)`, `EasyDict({'pin_memory': True})`, a dict literal.
// Objects whose defaults live where the code does not show them (argparse's `parse_args()`, yacs nodes, a
// config loaded from yaml) have no such construction: they stay unknown.
import { resolveImport } from '../project/resolve';
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { valuesOf } from './values';

export interface ConfiguredValue {
  /** The file `value` is a node of: this file, or the module the object is imported from. */
  readonly file: SourceFile;
  readonly value: SyntaxNode;
}

/**
 * What the construction of `obj.attr`'s object gives `attr`, for `node` an attribute whose object is a plain
 * name: one value per construction the name may hold, or null when one of them does not name the attribute
 * (or is no construction at all), or when this file assigns the attribute itself.
 */
export function configuredAttribute(file: SourceFile, node: SyntaxNode): ConfiguredValue[] | null {
  if (node.type !== 'attribute') return null;
  const obj = childByField(node, 'object');
  const attr = childByField(node, 'attribute');
  if (obj === null || attr === null || obj.type !== 'identifier') return null;
  // `hparams.pin_memory = False` somewhere in the file: what the construction says is not the last word.
  if (valuesOf(file, node) !== null) return null;
  const name = file.textOf(attr);
  const local = valuesOf(file, obj);
  const sources: ConfiguredValue[] = [];
  if (local !== null) for (const v of local) sources.push({ file, value: v });
  else {
    const resolved = resolveImport(file, file.textOf(obj));
    if (resolved === null || resolved.kind !== 'value' || resolved.node === null) return null;
    sources.push({ file: resolved.module.file, value: resolved.node });
  }
  const out: ConfiguredValue[] = [];
  for (const s of sources) {
    const v = constructedAttribute(s.file, s.value, name);
    if (v === null) return null;
    out.push({ file: s.file, value: v });
  }
  return out.length === 0 ? null : out;
}

/** `attr`'s value in a construction: a keyword of a call, a string key of a dict literal (also a call's only argument). */
function constructedAttribute(file: SourceFile, v: SyntaxNode, attr: string): SyntaxNode | null {
  if (v.type === 'dictionary') {
    for (const pair of namedChildren(v)) {
      if (pair.type !== 'pair') continue;
      const key = childByField(pair, 'key');
      if (key !== null && key.type === 'string' && file.textOf(key).replace(/^[rRuU]?(['"])(.*)\1$/, '$2') === attr) return childByField(pair, 'value');
    }
    return null;
  }
  if (v.type !== 'call') return null;
  const kw = keywordArgument(file, v, attr);
  if (kw !== null) return kw;
  const args = positionalArguments(v);
  return args.length === 1 && args[0].type === 'dictionary' ? constructedAttribute(file, args[0], attr) : null;
}
