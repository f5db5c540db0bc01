"""Training loops in the user's own modules that a script imports, for scripts that have none themselves.

minGPT's `projects/chargpt/chargpt.py` builds a model and calls `trainer.run()`; the loop that reaches
`backward()` and `optimizer.step()` is in `mingpt/trainer.py`. Without this search such a script was
profiled whole, as one step, for `--max-seconds`. The search is static, like the one inside a file
(`loops.py`): the script's imports are resolved to files on `sys.path` (or relative to the importing
file) without importing anything, only the user's files are read (not libraries: `is_user`), and a loop
qualifies only if its enclosing function is called by name from the script or from a function of these
files the script calls (a module-level loop runs when its module is imported). So a script that imports
a `train.py` for its helpers and never calls its training function keeps the whole-script profile.
"""
from __future__ import annotations

import ast
import os
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .loops import Loop, LoopFinder, called_names

# Imports are followed this deep from the script and at most this many files are parsed: the search runs
# before the user's code and must stay cheap on large projects.
MAX_DEPTH = 3
MAX_FILES = 64


def _resolve(parts: Sequence[str], roots: Iterable[str]) -> Optional[str]:
    """The file that `import a.b.c` would load from one of `roots` (a module or a package's __init__)."""
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        base = os.path.join(root, *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return os.path.abspath(candidate)
    return None


def imported_files(tree: ast.AST, filename: str, search_path: Sequence[str]) -> List[str]:
    """Files the module `tree` (from `filename`) imports, in source order: for `from pkg import name` both
    `pkg` and the submodule `pkg.name` when it is one."""
    found: List[str] = []
    for node in ast.walk(tree):
        targets: List[Tuple[List[str], Sequence[str]]] = []
        if isinstance(node, ast.Import):
            targets = [(alias.name.split("."), search_path) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_dir = os.path.dirname(os.path.abspath(filename))
                for _ in range(node.level - 1):
                    base_dir = os.path.dirname(base_dir)
                roots: Sequence[str] = [base_dir]
            else:
                roots = search_path
            module = node.module.split(".") if node.module else []
            if module:
                targets.append((module, roots))
            targets.extend((module + [alias.name], roots) for alias in node.names if alias.name != "*")
        for parts, roots in targets:
            path = _resolve(parts, roots)
            if path is not None and path not in found:
                found.append(path)
    return found


def _function_calls(tree: ast.AST) -> Dict[str, Set[str]]:
    """Per function name (methods by their bare name), the names its body calls."""
    calls: Dict[str, Set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls.setdefault(node.name, set()).update(called_names(node.body))
    return calls


def training_loops_in_imports(script: str, tree: ast.Module, search_path: Sequence[str],
                              is_user: Callable[[str], bool]) -> List[Loop]:
    """The training loops of the user's modules that `script` imports and (statically) calls into, nearest
    import first. Each Loop's `file` names its module."""
    script = os.path.abspath(script)
    files: List[Tuple[str, LoopFinder]] = []  # (path, its parsed loops; the finder's tree is the module's)
    seen = {script}
    frontier = [(script, tree)]
    for _ in range(MAX_DEPTH):
        following: List[Tuple[str, ast.AST]] = []
        for path, module_tree in frontier:
            for imported in imported_files(module_tree, path, search_path):
                if imported in seen or len(seen) > MAX_FILES or not is_user(imported):
                    continue
                seen.add(imported)
                try:
                    with open(imported, "rb") as handle:
                        source = handle.read()
                    # Parsed once: the finder's tree serves the import walk and the call graph below.
                    finder = LoopFinder(source.decode("utf-8", "replace"), imported)
                except (OSError, SyntaxError, ValueError):
                    continue  # importing it fails the same way, in the user's code, where it is reported
                files.append((imported, finder))
                following.append((imported, finder.tree))
        frontier = following
    if not files:
        return []
    called = called_names(tree.body)
    per_file_calls = [_function_calls(finder.tree) for _, finder in files]
    changed = True
    while changed:  # functions of these files that the script's calls reach, to a fixed point
        changed = False
        for calls in per_file_calls:
            for name, inner in calls.items():
                if name in called and not inner <= called:
                    called |= inner
                    changed = True
    loops: List[Loop] = []
    for _, finder in files:
        for loop in finder.training_loops():
            if loop.function == "<module>" or loop.function in called:
                loops.append(loop)
    return loops
