"""Finds the training loop of a script, for profiling inline loops (no step function).

The training loop is the innermost `for`/`while` loop whose body reaches both `backward()` and a `.step()`
call (optimizer.step(), scaler.step(optimizer)), directly or through functions defined in the same file;
with none of those, the innermost loop that reaches `backward()`. An epoch loop around a batch loop is not
the training loop, and neither is nanoGPT's gradient-accumulation loop (backward only) inside its
`while True:` (backward and step). Calls are matched to the file's functions by name: a static guess,
which the runner confirms by which candidate loop actually runs first.
"""
from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

LoopNode = Union[ast.For, ast.While, ast.AsyncFor]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class Loop:
    """A loop statement's lines: `header` is the line of `for`/`while`; `body_first` the first statement
    of its body; `header_end` the last line before the body (multi-line headers); `end` its last line."""

    header: int
    header_end: int
    body_first: int
    end: int
    keyword: str  # "for" or "while"
    function: str  # enclosing function, "<module>" at top level
    first_statement_end: int = 0  # last line of the body's first statement
    file: str = ""  # the source file (a module the script imports, when the loop is not in the script)


@dataclass
class _Reach:
    backward: bool = False
    step: bool = False
    calls: set[str] = field(default_factory=set)


class LoopError(Exception):
    """The requested loop does not exist; the message says which loops do."""


def _is_backward(name: str) -> bool:
    # loss.backward(), scaler.scale(loss).backward(), accelerator.backward(loss), self.manual_backward(loss)
    return name == "backward" or name.endswith("_backward")


def _own_nodes(statements: list[ast.stmt], nested: bool = False) -> Iterator[ast.AST]:
    """Nodes executed by these statements, not descending into nested function, lambda or class bodies
    (defining them runs nothing); with `nested`, every node of the statements, those bodies included."""
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not nested and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            stack.append(child)


def _reach_of(statements: list[ast.stmt], nested: bool = False) -> _Reach:
    """What the statements' calls reach directly: backward(), a .step(), and the names they call (an
    attribute call by its attribute: `self.fit()` calls `fit`). `nested`: calls in nested bodies count too."""
    reach = _Reach()
    for node in _own_nodes(statements, nested):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            name = func.attr
            if name == "step":
                reach.step = True
        elif isinstance(func, ast.Name):
            name = func.id
        else:
            continue
        if _is_backward(name):
            reach.backward = True
        reach.calls.add(name)
    return reach


def called_names(statements: list[ast.stmt]) -> set[str]:
    """The names the statements call, nested function and class bodies included (a static call graph over
    files whose functions may all run: imported_loops.py)."""
    return _reach_of(statements, nested=True).calls


def _loops_in(statements: list[ast.stmt]) -> list[LoopNode]:
    return [n for n in _own_nodes(statements) if isinstance(n, (ast.For, ast.While, ast.AsyncFor))]


class LoopFinder:
    """Loops of one source file and which of them are training loops."""

    def __init__(self, source: str | bytes, filename: str) -> None:
        self.tree = ast.parse(source, filename)
        self.filename = filename
        self.loops: list[tuple[LoopNode, Loop]] = []
        functions: dict[str, list[FunctionNode]] = {}
        self._collect(self.tree.body, "<module>", functions)
        self.loops.sort(key=lambda pair: pair[1].header)
        # Per function name (methods too, by their bare name): what its body reaches, to a fixed point.
        self._function_reach: dict[str, _Reach] = {}
        for name, defs in functions.items():
            merged = _Reach()
            for node in defs:
                own = _reach_of(node.body)
                merged.backward |= own.backward
                merged.step |= own.step
                merged.calls |= own.calls
            self._function_reach[name] = merged
        self._close_over_calls(self._function_reach)
        self._functions = functions

    def _collect(self, statements: list[ast.stmt], function: str,
                 functions: dict[str, list[FunctionNode]]) -> None:
        for node in ast.walk(ast.Module(body=statements, type_ignores=[])):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.setdefault(node.name, []).append(node)
        self._collect_loops(statements, function)

    def _collect_loops(self, statements: list[ast.stmt], function: str) -> None:
        stack: list[tuple[ast.AST, str]] = [(s, function) for s in statements]
        while stack:
            node, owner = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owner = node.name
            elif isinstance(node, (ast.For, ast.While, ast.AsyncFor)) and node.body:
                body_first = node.body[0].lineno
                end = max(getattr(s, "end_lineno", None) or s.lineno for s in node.body)
                keyword = "while" if isinstance(node, ast.While) else "for"
                first_end = getattr(node.body[0], "end_lineno", None) or body_first
                self.loops.append((node, Loop(node.lineno, max(node.lineno, body_first - 1), body_first, end,
                                              keyword, owner, first_end, self.filename)))
            for child in ast.iter_child_nodes(node):
                stack.append((child, owner))

    @staticmethod
    def _close_over_calls(reach: dict[str, _Reach]) -> None:
        changed = True
        while changed:
            changed = False
            for own in reach.values():
                for name in own.calls:
                    callee = reach.get(name)
                    if callee is None:
                        continue
                    if callee.backward and not own.backward:
                        own.backward = changed = True
                    if callee.step and not own.step:
                        own.step = changed = True

    def _reach(self, statements: list[ast.stmt]) -> _Reach:
        own = _reach_of(statements)
        for name in own.calls:
            callee = self._function_reach.get(name)
            if callee is not None:
                own.backward |= callee.backward
                own.step |= callee.step
        return own

    def _contains(self, statements: list[ast.stmt], chosen: set[int], seen: Optional[set[str]] = None) -> bool:
        """Whether these statements run a loop in `chosen` (by id), nested or in a function they call."""
        if any(id(loop) in chosen for loop in _loops_in(statements)):
            return True
        seen = set() if seen is None else seen
        for name in _reach_of(statements).calls:
            if name in seen or name not in self._functions:
                continue
            seen.add(name)
            if any(self._contains(node.body, chosen, seen) for node in self._functions[name]):
                return True
        return False

    def training_loops(self) -> list[Loop]:
        """The innermost loops reaching backward() and .step(); else the innermost reaching backward()."""
        reaches = [(node, loop, self._reach(node.body)) for node, loop in self.loops]
        for wanted in (lambda r: r.backward and r.step, lambda r: r.backward):
            tier = [(node, loop) for node, loop, reach in reaches if wanted(reach)]
            if not tier:
                continue
            ids = {id(node) for node, _ in tier}
            return [loop for node, loop in tier if not self._contains(node.body, ids - {id(node)})]
        return []

    def loop_at(self, line: int) -> Loop:
        for _, loop in self.loops:
            if loop.header <= line <= loop.header_end:
                return loop
        starts = ", ".join(str(loop.header) for _, loop in self.loops) or "none"
        raise LoopError("no for/while loop starts on line %d (loops start on lines: %s)" % (line, starts))


def code_with_line(code: types.CodeType, lines: tuple[int, ...]) -> Optional[types.CodeType]:
    """The outermost code object (breadth first from the module's) that has bytecode on one of `lines`:
    the function that runs the loop, not a comprehension nested in its header."""
    queue = [code]
    while queue:
        current = queue.pop(0)
        if _line_numbers(current) & set(lines):
            return current
        queue.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return None


def runs_loop(code: types.CodeType, loop: Loop) -> bool:
    """Whether `code` is the function (or module) whose frame runs `loop`: its name is the loop's enclosing
    function and it has bytecode on the loop's first body line (a comprehension in the header has not)."""
    return code.co_name == loop.function.rsplit(".", 1)[-1] and loop.body_first in _line_numbers(code)


def _line_numbers(code: types.CodeType) -> set[int]:
    co_lines = getattr(code, "co_lines", None)
    if co_lines is not None:
        return {line for _, _, line in co_lines() if line is not None}
    import dis

    return {line for _, line in dis.findlinestarts(code) if line is not None}


class LoopWatch:
    """Turns the line events of the frame running a loop into iteration boundaries and the loop's exit.

    An iteration starts at the first body line after the header ran: CPython traces a `for` header at every
    next() and a `while` header at every test, `while True:` included (PEP 626). So the header's own work
    (a DataLoader's next batch) belongs to the iteration before, and the last header (iterator exhausted,
    condition false) to the last iteration: no step is opened that would not run. Where a header is not
    traced, the first body statement reached from outside it (after the last body line, or a `continue`)
    starts an iteration. A one-line loop (`for x in xs: f(x)`) starts one at each header event."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.first_end = max(loop.first_statement_end, loop.body_first)
        self.prev: Optional[int] = None
        self.inside = False  # an iteration is open
        self.armed = True  # the header ran (or the frame came from outside): the next body line starts one
        self.header_traced = False

    def event(self, line: int) -> Optional[str]:
        """"boundary" (an iteration starts), "exit" (the frame left the loop) or None."""
        loop = self.loop
        prev, self.prev = self.prev, line
        if not loop.header <= line <= loop.end:
            self.armed = True
            if self.inside:
                self.inside = False
                return "exit"
            return None
        if loop.body_first == loop.header:
            self.inside = True
            return "boundary"
        if line < loop.body_first:
            self.header_traced = self.header_traced or line == loop.header
            self.armed = True
            return None
        if self.armed or (not self.header_traced and line == loop.body_first
                          and (prev is None or not loop.body_first <= prev <= self.first_end)):
            self.armed = False
            self.inside = True
            return "boundary"
        return None
