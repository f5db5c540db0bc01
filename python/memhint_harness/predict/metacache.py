"""Memoised meta kernels: the same op on inputs of the same metadata gives outputs of the same metadata.

On torch 2.x many meta kernels are Python (torch._refs / torch._prims, reached through dynamo's disable
wrapper): 0.1-1 ms per op, most of a predicted step (a 7B Llama step runs ~12,000 ops, AdamW ~10 per
parameter). A training step repeats the same ops on the same shapes layer after layer and step after step,
so the first call of each (op, input metadata, other arguments) runs the real meta kernel and records its
outputs' metadata; later calls build fresh meta tensors of that metadata (`empty_strided`) or, for an
in-place pointwise op, return `self` as the kernel does. Nothing else changes: the profiler's dispatch mode,
above this one, sees the same outputs with new storages of the same sizes, so every figure is the same.

Only what provably has no other effect is memoised (see `_cacheable`): functional ops whose returns are
all fresh tensors (no alias annotation, checked again on each recorded call: no output shares a storage
with an input or another output), and in-place *pointwise* ops (`add_`, `addcdiv_`, `lerp_`...), which
never change `self`'s metadata. Views, `out=` variants, resizes, `set_`, anything with tensor subclasses,
non-meta tensors or arguments that cannot be keyed exactly run the real kernel every time.
"""
import sys

import torch

from ..dispatch import FastDispatchMode

_Tensor = torch.Tensor
# nn.Parameter is a subclass without a __torch_dispatch__ of its own: its ops are the plain tensor's
_PLAIN = (_Tensor, torch.nn.Parameter)
_empty_strided = torch.empty_strided
_META = torch.device("meta")
_Tag = getattr(torch, "Tag", None)  # torch >= 2.0 (prediction needs it; the stubs linted may be 1.13's)
_pointwise = getattr(_Tag, "pointwise", None)
_inplace_view = getattr(_Tag, "inplace_view", None)
_KEYABLE = (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.layout,
            torch.memory_format)
_UNCACHEABLE = object()
# as in tracker.py: switching the tracer off and on is cheap before Python 3.12, which re-instruments code
_SWITCH_TRACE = sys.version_info < (3, 12)
_gettrace = sys.gettrace
_settrace = sys.settrace
_FUNCTIONAL, _INPLACE = 1, 2


def _kind(func):
    """How an op may be memoised: _FUNCTIONAL, _INPLACE (pointwise, returns self) or None."""
    try:
        schema = func._schema
        tags = func.tags
    except AttributeError:
        return None
    if getattr(func, "is_view", False) or (_inplace_view is not None and _inplace_view in tags):
        return None
    returns = schema.returns
    if not returns:
        return None
    for ret in returns:
        if str(ret.type) not in ("Tensor", "Tensor?", "Tensor[]"):
            return None
    written = [arg for arg in schema.arguments if arg.alias_info is not None and arg.alias_info.is_write]
    aliased_returns = [ret for ret in returns if ret.alias_info is not None]
    if not written and not aliased_returns:
        return _FUNCTIONAL
    if (_pointwise is not None and _pointwise in tags and len(written) == 1 and not written[0].kwarg_only
            and schema.arguments[0] is written[0] and len(returns) == 1 and str(returns[0].type) == "Tensor"
            and returns[0].alias_info is not None and returns[0].alias_info.is_write):
        return _INPLACE
    return None


class _NotKeyable(Exception):
    pass


class _Key:
    """The exact key of one call's arguments; `storages` lists the tensors' storages in order, and the key
    holds each tensor's position among distinct storages, so calls that alias differently never share."""

    __slots__ = ("storages", "pointwise")

    def __init__(self, pointwise):
        self.storages = []
        # A pointwise op's outputs depend on its float scalars' type only (type promotion), never on their
        # value: Adam's step sizes change every step and would otherwise make every step's calls new.
        self.pointwise = pointwise

    def of(self, value):
        if isinstance(value, _Tensor):
            if type(value) not in _PLAIN or not value.is_meta:
                raise _NotKeyable
            cdata = value.untyped_storage()._cdata  # pyright: ignore[reportAttributeAccessIssue] (1.13 stubs)
            storages = self.storages
            try:
                index = storages.index(cdata)
            except ValueError:
                index = len(storages)
                storages.append(cdata)
            return (index, value.dtype, tuple(value.shape), value.stride(), value.storage_offset(),
                    value.is_conj(), value.is_neg(), value.layout, value.requires_grad)
        if isinstance(value, (list, tuple)):
            return (type(value).__name__,) + tuple(self.of(item) for item in value)
        if self.pointwise and type(value) is float:
            return float
        if type(value) in _KEYABLE:
            if value != value:  # NaN: never equal to itself, it would add an entry per call
                raise _NotKeyable
            # the type is part of the key: 1, 1.0 and True promote differently
            return (type(value), value)
        raise _NotKeyable


def _template(out, inputs):
    """The outputs' metadata, or None when they are not all fresh plain meta tensors of their own storage."""
    if isinstance(out, _Tensor):
        outputs, shape = [out], "T"
    elif isinstance(out, (tuple, list)):
        outputs, shape = list(out), type(out)
    else:
        return None
    seen = set(inputs)
    parts = []
    for item in outputs:
        if item is None:
            parts.append(None)
            continue
        if type(item) is not _Tensor or not item.is_meta or item.storage_offset() != 0 or item.is_conj() \
                or item.is_neg() or item.layout is not torch.strided or item.requires_grad:
            return None
        storage = item.untyped_storage()  # pyright: ignore[reportAttributeAccessIssue]
        if storage._cdata in seen:
            return None
        seen.add(storage._cdata)
        meta = (tuple(item.shape), item.stride(), item.dtype)
        fresh = _empty_strided(meta[0], meta[1], dtype=meta[2], device=_META)
        if fresh.untyped_storage().nbytes() != storage.nbytes():  # pyright: ignore[reportAttributeAccessIssue]
            return None
        parts.append(meta)
    return shape, parts


def _build(template):
    shape, parts = template
    made = [None if meta is None else _empty_strided(meta[0], meta[1], dtype=meta[2], device=_META)
            for meta in parts]
    if shape == "T":
        return made[0]
    return shape(made)


class MetaKernelCache(FastDispatchMode):
    """Pushed below the profiler's dispatch mode while predicting (see the module docstring).

    `observe(func)`, when given, sees every op before it runs (workspace.py's cuBLAS watch): one Python
    dispatch mode per op instead of two, each a round trip through torch's mode stack."""

    def __init__(self, observe=None):
        super().__init__()
        self.observe = observe
        self.kinds = {}  # OpOverload -> _FUNCTIONAL / _INPLACE / None
        self.pointwise = set()  # the OpOverloads tagged pointwise among them
        self.results = {}  # (op, key) -> template, True (in-place checked), or _UNCACHEABLE
        self.hits = 0
        self.misses = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.observe is not None:
            self.observe(func)
        kind = self.kinds.get(func, 0)
        if kind == 0:
            kind = self.kinds[func] = _kind(func)
            if kind is not None and _pointwise is not None and _pointwise in func.tags:
                self.pointwise.add(func)
        if kind is None:
            return func(*args, **(kwargs or {}))
        # Keying and building run no user code: with the profiler's line tracer off, its calls are not
        # each a trace event. The real kernel runs with the tracer as the profiler left it.
        trace = _gettrace() if _SWITCH_TRACE else None
        if trace is not None:
            _settrace(None)
        try:
            found, key, storages = self._lookup(func, args, kwargs)
            if found is not None and found is not _UNCACHEABLE:
                self.hits += 1
                return args[0] if kind == _INPLACE else _build(found)
        finally:
            if trace is not None:
                _settrace(trace)
        out = func(*args, **(kwargs or {}))
        if found is None and key is not None:
            self.misses += 1
            if kind == _INPLACE:
                self.results[key] = True if out is args[0] else _UNCACHEABLE
            else:
                template = _template(out, storages)
                self.results[key] = _UNCACHEABLE if template is None else template
        return out

    def _lookup(self, func, args, kwargs):
        """(recorded outputs or None, key, the arguments' storages); key None: not memoisable."""
        keyer = _Key(func in self.pointwise)
        try:
            key = (func, keyer.of(args), keyer.of(tuple(sorted(kwargs.items()))) if kwargs else ())
            found = self.results.get(key)
        except (_NotKeyable, TypeError):  # TypeError: an unhashable value
            return None, None, None
        if not keyer.storages:  # a factory: its output may depend on global defaults (dtype)
            return None, None, None
        return found, key, keyer.storages
