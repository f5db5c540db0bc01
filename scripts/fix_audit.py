"""Apply `memhint lint --fix` to a copy of a folder of real scripts and check what the fixes did.

Issue #13 asks that a fix never change what a program computes beyond the memory fix. Real scripts cannot
be run here (no data, no GPU), so this checks what can be checked statically, on a copy (the folder given
is never written):
  * every fixed file that parsed before still parses;
  * no `with torch.no_grad():` / `@torch.no_grad()` added by a fix contains `.backward()` or an
    optimizer's/scaler's `.step()` (an environment's `env.step` is fine);
  * no `.detach()` / `.item()` added by a fix sits on a name bound to a container or a literal, or on a
    constant-key entry of a dict literal whose value there is a literal (AttributeError at run time).
Prints one line per problem and a summary; exit 1 when there is a problem.

Usage: python3 scripts/fix_audit.py DIR [--memhint bin/memhint.js]
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

NO_GRAD = ("no_grad", "inference_mode")
TRAINING_STEP_OWNER = ("optim", "opt", "scaler", "sched", "solver", "trainer")
CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.Tuple, ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.Constant)


def parses(source: bytes) -> ast.AST | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except (SyntaxError, ValueError):
            return None


def is_no_grad(expr: ast.expr) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    return isinstance(target, ast.Attribute) and target.attr in NO_GRAD or isinstance(target, ast.Name) and target.id in NO_GRAD


def no_grad_regions(tree: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(is_no_grad(d) for d in node.decorator_list):
            out.append(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)) and any(is_no_grad(i.context_expr) for i in node.items):
            out.append(node)
    return out


def training_calls(region: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(region):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = ast.unparse(node.func.value).lower()
        if node.func.attr == "backward" or node.func.attr == "step" and any(w in owner for w in TRAINING_STEP_OWNER):
            found.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def appended_methods(tree: ast.AST, lines: set[int]) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("detach", "item") and not n.args and n.lineno in lines
    ]


def bindings(tree: ast.AST) -> dict[str, list[ast.expr]]:
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(node.value)
    return out


def not_a_tensor(receiver: ast.expr, bound: dict[str, list[ast.expr]]) -> bool:
    """A name only ever bound to containers, or a literal-valued key of a dict literal."""
    if isinstance(receiver, ast.Name):
        values = bound.get(receiver.id, [])
        return bool(values) and all(isinstance(v, CONTAINERS) and not isinstance(v, ast.Constant) for v in values)
    if isinstance(receiver, ast.Subscript) and isinstance(receiver.value, ast.Name) and isinstance(receiver.slice, ast.Constant):
        for value in bound.get(receiver.value.id, []):
            if isinstance(value, ast.Dict):
                for key, entry in zip(value.keys, value.values):
                    if isinstance(key, ast.Constant) and key.value == receiver.slice.value and isinstance(entry, ast.Constant):
                        return True
    return False


def changed_lines(before: bytes, after: bytes) -> set[int]:
    import difflib

    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    out: set[int] = set()
    for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "insert"):
            out.update(range(j1 + 1, j2 + 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--memhint", default=os.path.join(os.path.dirname(__file__), "..", "bin", "memhint.js"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="memhint-fix-audit-")
    try:
        original = os.path.join(work, "original")
        fixed = os.path.join(work, "fixed")
        shutil.copytree(args.folder, original, symlinks=False)
        shutil.copytree(original, fixed)
        subprocess.run(["node", args.memhint, "lint", "--no-config", "--fix", fixed], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        problems: list[str] = []
        changed = 0
        for root, _, files in os.walk(original):
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, original)
                before = open(path, "rb").read()
                after = open(os.path.join(fixed, rel), "rb").read()
                if before == after:
                    continue
                changed += 1
                tree_before, tree_after = parses(before), parses(after)
                if tree_before is not None and tree_after is None:
                    problems.append(f"{rel}: parsed before the fix, not after")
                    continue
                if tree_after is None:
                    continue
                old = {ast.unparse(r) for r in no_grad_regions(tree_before)} if tree_before is not None else set()
                for region in no_grad_regions(tree_after):
                    calls = training_calls(region)
                    if calls and ast.unparse(region) not in old:
                        problems.append(f"{rel}:{region.lineno}: a fix's no_grad covers {calls[0]}")
                bound = bindings(tree_after)
                for call in appended_methods(tree_after, changed_lines(before, after)):
                    receiver = call.func.value  # type: ignore[attr-defined]
                    if not_a_tensor(receiver, bound):
                        problems.append(f"{rel}:{call.lineno}: .{call.func.attr}() on {ast.unparse(receiver)[:60]}, not a tensor")  # type: ignore[attr-defined]
        for line in problems:
            print(line)
        print(f"fix audit: {changed} files changed by --fix, {len(problems)} problems")
        return 1 if problems else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
