"""--checkpoint PATTERN: activation checkpointing (torch.utils.checkpoint, non-reentrant) of the modules whose
dotted path or class name matches PATTERN (fnmatch: `transformer.h.*`, `Block`, `layers.*.mlp`; several
patterns separated by commas). A module inside an already matched one is left alone."""
import fnmatch
import functools

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
            return checkpoint(__forward, *args, use_reentrant=False, **kwargs)

        module.forward = checkpointed
        chosen.append(path)
    return chosen
