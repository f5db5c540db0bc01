"""--checkpoint PATTERN: activation checkpointing (torch.utils.checkpoint, non-reentrant) of the modules whose
dotted path or class name matches PATTERN (fnmatch: `transformer.h.*`, `Block`, `layers.*.mlp`; several
patterns separated by commas). A module inside an already matched one is left alone."""
import contextlib
import fnmatch
import functools

import torch

from .autocast import _state as autocast_dtype


def _matches(patterns, path, module):
    name = type(module).__name__
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def _function_modes():
    from torch.overrides import _get_current_function_mode_stack

    return _get_current_function_mode_stack()


def checkpoint_modules(modules, pattern, device_mode=None):
    """Wraps the matching modules' forward; returns their paths."""
    from torch.utils.checkpoint import checkpoint

    patterns = [p.strip() for p in pattern.split(",") if p.strip()]
    names = _module_names(modules)
    chosen = []
    for module, path in sorted(names.items(), key=lambda item: (item[1].count("."), item[1])):
        if not path or not _matches(patterns, path, module):
            continue
        if any(path.startswith(done + ".") for done in chosen):
            continue
        forward = module.forward

        @functools.wraps(forward)
        def checkpointed(*args, __forward=forward, **kwargs):
            # checkpoint() restores autocast for the inputs' device type, which is meta here: the recompute
            # in backward must run under the forward's (emulated) CUDA autocast state itself.
            dtype = autocast_dtype()

            def run(*a, **k):
                # The recompute runs on autograd's worker thread, where neither the device mode (thread-local
                # mode stack) nor autocast (thread-local state) is on.
                with contextlib.ExitStack() as stack:
                    if device_mode is not None and device_mode not in _function_modes():
                        stack.enter_context(device_mode)
                    if dtype is not None:
                        stack.enter_context(torch.autocast("cuda", dtype=dtype))
                    return __forward(*a, **k)

            return checkpoint(run, *args, use_reentrant=False, **kwargs)

        module.forward = checkpointed
        chosen.append(path)
    return chosen


def _module_names(modules):
    """module -> dotted path from the root model. The root is the registered module that is nobody's child and
    has the most descendants; modules outside it (a loss module, a second model) are roots of their own,
    named `<ClassName>` (numbered if repeated)."""
    children = set()
    for module in modules:
        for child in module.children():
            children.add(child)
    roots = [m for m in modules if m not in children]
    roots.sort(key=lambda m: -sum(1 for _ in m.modules()))
    names = {}
    used = set()
    for index, root in enumerate(roots):
        if root in names:
            continue
        if index == 0:
            prefix = ""
        else:
            prefix = "<%s>" % type(root).__name__
            n = 2
            while prefix in used:
                prefix = "<%s#%d>" % (type(root).__name__, n)
                n += 1
        used.add(prefix)
        for name, module in root.named_modules():
            if module in names:
                continue
            names[module] = ".".join(part for part in (prefix, name) if part)
    return names
