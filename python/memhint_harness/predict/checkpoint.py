"""--checkpoint PATTERN: activation checkpointing (torch.utils.checkpoint, non-reentrant) of the modules whose
dotted path or class name matches PATTERN (fnmatch: `transformer.h.*`, `Block`, `layers.*.mlp`; several
patterns separated by commas). A module inside an already matched one is left alone."""
import contextlib
import fnmatch
import functools

import torch

from .autocast import _state as autocast_dtype
from .modules import _module_names


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
