// Finds module-level mutable state in TypeScript sources: `let`/`var` bindings, module-level collections
// (Map, Set, WeakMap, arrays, object literals) that the file mutates, and module-level instances of
// classes that hold state (a field that is not readonly, or a readonly field holding a collection or
// another stateful instance). Immutable tables (a Set of names only read, a frozen memo descriptor)
// do not count. Used by scripts/count-module-state.mjs and by the unit test that keeps src/lint free
// of such state.
'use strict';
const ts = require('typescript');
const path = require('node:path');

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array', 'WeakRef']);
const MUTATORS = new Set(['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin']);

/** @returns {{ file: string, line: number, name: string, kind: string }[]} */
function moduleState(files, { root = process.cwd() } = {}) {
  const program = ts.createProgram(files, { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, allowJs: false, noEmit: true, skipLibCheck: true });
  const checker = program.getTypeChecker();
  const statefulClass = new Map();

  /** Whether instances of the class declared by `decl` hold mutable state. */
  function classIsStateful(decl, depth = 0) {
    if (statefulClass.has(decl)) return statefulClass.get(decl);
    statefulClass.set(decl, false);
    let stateful = false;
    for (const m of decl.members) {
      if (ts.isPropertyDeclaration(m)) {
        const readonly = (ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Readonly) !== 0;
        if (!readonly) stateful = true;
        else if (m.initializer && initializerIsStateful(m.initializer, depth + 1)) stateful = true;
        else if (!m.initializer && m.type && typeIsStateful(checker.getTypeFromTypeNode(m.type), depth + 1)) stateful = true;
      } else if (ts.isConstructorDeclaration(m)) {
        for (const p of m.parameters) {
          const flags = ts.getCombinedModifierFlags(p);
          const isField = (flags & (ts.ModifierFlags.Public | ts.ModifierFlags.Private | ts.ModifierFlags.Protected | ts.ModifierFlags.Readonly)) !== 0;
          if (isField && (flags & ts.ModifierFlags.Readonly) === 0) stateful = true;
        }
      }
    }
    statefulClass.set(decl, stateful);
    return stateful;
  }

  function typeIsStateful(type, depth) {
    if (depth > 4 || !type.symbol) return false;
    if (COLLECTIONS.has(type.symbol.name)) return true;
    const decl = (type.symbol.declarations ?? []).find(ts.isClassDeclaration);
    return decl !== undefined && !decl.getSourceFile().isDeclarationFile && classIsStateful(decl, depth);
  }

  function initializerIsStateful(init, depth) {
    while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
    if (ts.isNewExpression(init)) {
      const name = init.expression.getText();
      if (COLLECTIONS.has(name)) return true;
      return typeIsStateful(checker.getTypeAtLocation(init), depth);
    }
    if (ts.isArrayLiteralExpression(init)) return init.elements.some((e) => initializerIsStateful(e, depth));
    return false;
  }

  /** Whether the file mutates the binding's value: calls a mutator on it or assigns into it. */
  function mutatedInFile(sourceFile, symbol) {
    let mutated = false;
    const visit = (node) => {
      if (mutated) return;
      if (ts.isIdentifier(node) && checker.getSymbolAtLocation(node) === symbol && node.parent) {
        const p = node.parent;
        if (ts.isPropertyAccessExpression(p) && p.expression === node) {
          if (ts.isCallExpression(p.parent) && p.parent.expression === p && MUTATORS.has(p.name.text)) mutated = true;
          if (ts.isBinaryExpression(p.parent) && p.parent.left === p && isAssignment(p.parent.operatorToken.kind)) mutated = true;
        }
        if (ts.isElementAccessExpression(p) && p.expression === node && ts.isBinaryExpression(p.parent) && p.parent.left === p && isAssignment(p.parent.operatorToken.kind)) mutated = true;
      }
      ts.forEachChild(node, visit);
    };
    visit(sourceFile);
    return mutated;
  }

  const found = [];
  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile || !files.some((f) => path.resolve(f) === path.resolve(sf.fileName))) continue;
    for (const stmt of sf.statements) {
      if (!ts.isVariableStatement(stmt)) continue;
      const isConst = (stmt.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const d of stmt.declarationList.declarations) {
        const name = d.name.getText(sf);
        const line = sf.getLineAndCharacterOfPosition(d.getStart(sf)).line + 1;
        const at = { file: path.relative(root, sf.fileName), line, name };
        if (!isConst) {
          found.push({ ...at, kind: 'mutable binding (let/var)' });
          continue;
        }
        if (!d.initializer || !ts.isIdentifier(d.name)) continue;
        let init = d.initializer;
        while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)) init = init.expression;
        if (initializerIsStateful(init, 0) && !(ts.isNewExpression(init) && COLLECTIONS.has(init.expression.getText(sf)) && !mutatedInFile(sf, checker.getSymbolAtLocation(d.name)))) {
          found.push({ ...at, kind: `stateful instance (${init.getText(sf).slice(0, 40)})` });
          continue;
        }
        if ((ts.isArrayLiteralExpression(init) || ts.isObjectLiteralExpression(init)) && mutatedInFile(sf, checker.getSymbolAtLocation(d.name))) {
          found.push({ ...at, kind: 'mutated literal' });
        }
      }
    }
  }
  return found;
}

function isAssignment(kind) {
  return kind >= ts.SyntaxKind.FirstAssignment && kind <= ts.SyntaxKind.LastAssignment;
}

module.exports = { moduleState };
