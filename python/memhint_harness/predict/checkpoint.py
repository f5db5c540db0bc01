"""--checkpoint PATTERN: activation checkpointing (torch.utils.checkpoint, non-reentrant) of the modules whose
dotted path or class name matches PATTERN (fnmatch: `transformer.h.*`, `Block`, `layers.*.mlp`; several
patterns separated by commas). A module inside an already matched one is left alone."""
import fnmatch
import functools

import torch

from .autocast import _state as autocast_dtype
from .modules import _module_names


def _matches(patterns, path, module):
    name = type(module).__name__
    return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(name, p) for p in patterns)


def checkpoint_modules(modules, pattern):
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
                if dtype is None:
                    return __forward(*a, **k)
                with torch.autocast("cuda", dtype=dtype):
                    return __forward(*a, **k)

            return checkpoint(run, *args, use_reentrant=False, **kwargs)

        module.forward = checkpointed
        chosen.append(path)
    return chosen
