"""Runs the user's unchanged CUDA code on the `meta` device.

Why `meta` and not FakeTensorMode: a fake *CUDA* tensor needs CUDA's DeviceGuard, which a CPU-only torch
build lacks (torch 2.13+cpu aborts the process in autograd's InputMetadata for a fake cuda tensor that
requires grad). Meta tensors need no device at all, have real storages (so the profiler's storage ledger,
weak references included, works on them unchanged) and run every op's meta kernel, which computes the
output's shape, dtype and strides and allocates nothing.

What is redirected (a TorchFunctionMode plus a few `torch.cuda` functions):
- factory calls (`torch.randn(..)`, `torch.zeros(.., device="cuda")`, `nn.Linear(..)`) land on meta,
  with or without a device; an explicit `device="cpu"` stays on the host (data loading, small scalars);
- `.cuda()`, `.to("cuda")`, `.to(torch.device("cuda:0"))`, `Module.cuda()` / `.to(device)`: a host tensor
  is copied to meta (the copy is the GPU allocation), a meta tensor stays itself (as a CUDA tensor does);
- `torch.cuda.is_available()` is True, one device named "cuda (predicted)"; synchronize, seeds, set_device
  and empty_cache do nothing; `memory_allocated()` returns the prediction's live bytes;
- values: `.item()`, `float()`, `int()`, `bool()`, `.tolist()` of a meta tensor return zeros of the right
  type (every line that did so is listed in the report's notes); `.cpu()` / `.numpy()` give zero-filled
  host arrays. Code whose control flow depends on tensor values therefore takes the zero branch.
Not supported: ops whose output shape depends on values (`nonzero`, boolean-mask indexing, `unique`,
`masked_select`, `repeat_interleave` with a tensor): they raise a clear error naming the line.
"""
import sys

import torch
from torch.overrides import TorchFunctionMode

from ..userfiles import innermost_user_frame
from .attention import cuda_sdpa
from .dropout import cuda_dropout

META = torch.device("meta")
DEVICE_NAME = "cuda (predicted)"

_Tensor = torch.Tensor
_TO = {_Tensor.to}
_TO_DEVICE = {_Tensor.cuda}
_TO_HOST = {_Tensor.cpu}
_IDENTITY = {_Tensor.pin_memory}
_VALUE_METHODS = {_Tensor.item, _Tensor.__float__, _Tensor.__int__, _Tensor.__bool__, _Tensor.__index__,
                  _Tensor.tolist}
_NUMPY = {_Tensor.numpy}
_BACKWARD = _Tensor.backward


def _constructors():
    try:
        from torch.utils._device import _device_constructors  # pyright: ignore[reportMissingImports]

        return set(_device_constructors())
    except Exception:  # pragma: no cover - older torch
        return {torch.empty, torch.zeros, torch.ones, torch.full, torch.randn, torch.rand, torch.randint,
                torch.arange, torch.tensor, torch.eye, torch.linspace}


def _is_gpu_device(value):
    """A device argument the user's code means as the GPU (or leaves to the default)."""
    if isinstance(value, torch.device):
        return value.type in ("cuda", "meta")
    if isinstance(value, str):
        return value.split(":")[0] in ("cuda", "meta")
    if isinstance(value, int) and not isinstance(value, bool):
        return True  # `.to(0)`, `device=0`: a CUDA ordinal
    return False


def _is_host_device(value):
    return (isinstance(value, torch.device) and value.type == "cpu") or value == "cpu"


_SCALAR_DATA = {torch.tensor, torch.as_tensor, torch.scalar_tensor}
_SIZED = {torch.zeros, torch.ones, torch.empty, torch.full, torch.rand, torch.randn}


def _host_scalar(func, args, kwargs):
    """A 0-dim tensor made without a device (`torch.tensor(0.0)`, `torch.zeros(())`) is a host scalar with CUDA
    too: optimizers keep their `step` counters so (Adam, AdamW when neither capturable nor fused), and CUDA
    kernels take host scalars as arguments. Kept on the host, they cost no predicted GPU memory."""
    if func in _SCALAR_DATA:
        data = args[0] if args else kwargs.get("data")
        return isinstance(data, (bool, int, float, complex))
    if func in _SIZED:
        size = args[0] if args else kwargs.get("size")
        return isinstance(size, (tuple, list)) and len(size) == 0
    return False


_DROPOUT = torch.nn.functional.dropout


class DataDependentError(RuntimeError):
    """An op whose result's size depends on tensor values, which meta tensors do not have."""


class MetaDevice(TorchFunctionMode):
    """Puts the step's tensors on the meta device (see the module docstring)."""

    def __init__(self, user_files, autocast=None):
        super().__init__()
        self.user_files = user_files
        self.constructors = _constructors()
        self.placeholders = {}  # (file, line, function) -> what was replaced by a zero
        self.autocast = autocast  # AutocastEmulation, or None
        # Modules (name prefixes) whose explicit host allocations stand for the GPU's: FSDP run on its CPU code
        # path over the fake process group allocates its buffers on its mesh's device, the host (ranks.py).
        self.device_libraries: tuple = ()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs) if kwargs else {}
        if func is _BACKWARD:
            return self._backward(args, kwargs)
        if func in self.constructors:
            device = kwargs.get("device")
            if device is None and _host_scalar(func, args, kwargs):
                return func(*args, **kwargs)
            if device is None or not _is_host_device(device) or self._library_device_call():
                kwargs["device"] = META
                kwargs.pop("pin_memory", None)
            return func(*args, **kwargs)
        if func in _TO:
            return self._to(func, args, kwargs)
        if func in _TO_DEVICE or func in _IDENTITY:
            tensor = args[0]
            return tensor if tensor.is_meta else tensor.to(META)
        if func in _TO_HOST:
            tensor = args[0]
            if not tensor.is_meta:
                return func(*args, **kwargs)
            self._placeholder("%s()" % func.__name__)
            return torch.zeros(tensor.shape, dtype=tensor.dtype, device="cpu")
        if func in _VALUE_METHODS:
            tensor = args[0]
            if tensor.is_meta:
                return self._value(func, tensor)
            return func(*args, **kwargs)
        if func in _NUMPY:
            tensor = args[0]
            if tensor.is_meta:
                self._placeholder("numpy()")
                return torch.zeros(tensor.shape, dtype=tensor.dtype, device="cpu").numpy()
            return func(*args, **kwargs)
        if "device" in kwargs and _is_gpu_device(kwargs["device"]):
            kwargs["device"] = META  # new_empty(.., device="cuda"), empty_like(.., device=...), ...
        if self.autocast is not None:
            adjusted = self.autocast.adjust(func, args, kwargs)
            if adjusted is not None:
                args, kwargs = adjusted
        if getattr(func, "__name__", "") == "scaled_dot_product_attention":
            out = cuda_sdpa(func, args, kwargs)
            if out is not None:
                return out
        if func is _DROPOUT:
            out = cuda_dropout(args, kwargs)
            if out is not None:
                return out
        try:
            return func(*args, **kwargs)
        except NotImplementedError as error:
            if "data-independent" in str(error) or "nonzero" in str(error):
                raise DataDependentError(
                    "%s depends on tensor values, which a prediction does not have (data-dependent output "
                    "size: nonzero, boolean-mask indexing, unique, masked_select...)" % _name(func)) from None
            raise

    def _library_device_call(self):
        """The factory call being handled comes from a library whose host device stands for the GPU."""
        if not self.device_libraries:
            return False
        caller = sys._getframe(2).f_globals.get("__name__", "")
        return caller.startswith(self.device_libraries)

    def _backward(self, args, kwargs):
        """`loss.backward()`: a mode is off while it handles a call, but Python code that runs inside backward
        (checkpoint recomputation, custom Functions, hooks) must still see the meta device and autocast."""
        named = dict(zip(("gradient", "retain_graph", "create_graph", "inputs"), args[1:]))
        named.update(kwargs)
        with self, _EngineSeesModes():
            return torch.autograd.backward(args[0], named.get("gradient"), named.get("retain_graph"),
                                           bool(named.get("create_graph", False)), inputs=named.get("inputs"))

    def _to(self, func, args, kwargs):
        tensor = args[0]
        rest = list(args[1:])
        for i, value in enumerate(rest):
            if _is_gpu_device(value):
                rest[i] = META
            elif _is_host_device(value) and tensor.is_meta:
                rest[i] = META  # `.to("cpu")` of a GPU tensor: a host copy, no GPU memory; keep the alias
        device = kwargs.get("device")
        if device is not None:
            if _is_gpu_device(device) or tensor.is_meta:
                kwargs["device"] = META
        return func(tensor, *rest, **kwargs)

    def _value(self, func, tensor):
        name = func.__name__.strip("_")
        self._placeholder("%s()" % name if name in ("item", "tolist") else "%s(tensor)" % name)
        dtype = tensor.dtype
        zero = False if dtype is torch.bool else (0.0 if dtype.is_floating_point or dtype.is_complex else 0)
        if func is _Tensor.tolist:
            return torch.zeros(tensor.shape, dtype=dtype, device="cpu").tolist()
        if func is _Tensor.__float__:
            return 0.0
        if func in (_Tensor.__int__, _Tensor.__index__):
            return 0
        if func is _Tensor.__bool__:
            return False
        return zero

    def _placeholder(self, what):
        frame = innermost_user_frame(sys._getframe(2), self.user_files.is_user)
        site = (frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name) if frame else ("<library>", 0, "")
        self.placeholders.setdefault(site, set()).add(what)

    def notes(self):
        result = []
        for (file, line, function), what in sorted(self.placeholders.items()):
            result.append("predicted values are zeros: %s at %s:%d (%s) returned 0; code that branches on it "
                          "took the zero branch" % (", ".join(sorted(what)), file, line, function))
        return result


class _EngineSeesModes:
    """Lets `torch.autograd.backward` start autograd's engine while this mode is on the stack.

    `torch.autograd.backward` first offers the call to the active torch-function modes; the mode handling it is
    off its stack meanwhile, so without this the engine started with no mode, and the engine's graph task keeps
    the modes that were active when it started for every hook and Python Function it runs. Hooks run in backward
    (FSDP's pre-backward all-gathers and post-backward reduce-scatters, checkpoint recomputation, custom
    Functions) then allocated on the host instead of meta. For the duration of the call the module's
    `has_torch_function` answers only for tensor subclasses with a `__torch_function__` of their own."""

    def __init__(self):
        self.module = sys.modules.get("torch.autograd")
        self.original = getattr(self.module, "has_torch_function", None)

    def __enter__(self):
        if self.original is not None:
            setattr(self.module, "has_torch_function", _subclass_overrides)
        return self

    def __exit__(self, *exc):
        if self.original is not None:
            setattr(self.module, "has_torch_function", self.original)
        return False


_PLAIN_TORCH_FUNCTION = {getattr(torch.Tensor.__torch_function__, "__func__", torch.Tensor.__torch_function__),
                         torch._C._disabled_torch_function_impl}


def _subclass_overrides(values):
    for value in values:
        override = getattr(type(value), "__torch_function__", None)
        if getattr(override, "__func__", override) not in _PLAIN_TORCH_FUNCTION:
            return True
    return False


def _name(func):
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or str(func)


class CudaStandIn:
    """Makes `torch.cuda` report one predicted device; restores everything on exit."""

    def __init__(self, live_bytes, peak_bytes, capacity=None, capability=(8, 0)):
        self.live_bytes = live_bytes
        self.peak_bytes = peak_bytes
        self.capacity = capacity
        self.capability = tuple(capability)
        self.saved = []

    def __enter__(self):
        cuda = torch.cuda
        props = _Properties(self.capacity, self.capability)
        replacements = {
            "is_available": lambda: True,
            "device_count": lambda: 1,
            "current_device": lambda: 0,
            "get_device_name": lambda device=None: DEVICE_NAME,
            "get_device_capability": lambda device=None: self.capability,
            "get_device_properties": lambda device=None: props,
            "is_bf16_supported": lambda *a, **k: True,
            "is_initialized": lambda: True,
            "init": lambda: None,
            "_lazy_init": lambda: None,
            "synchronize": lambda device=None: None,
            "set_device": lambda device: None,
            "empty_cache": lambda: None,
            "manual_seed": lambda seed: None,
            "manual_seed_all": lambda seed: None,
            "seed": lambda: None,
            "seed_all": lambda: None,
            "reset_peak_memory_stats": lambda device=None: None,
            "reset_max_memory_allocated": lambda device=None: None,
            "memory_allocated": lambda device=None: self.live_bytes(),
            "max_memory_allocated": lambda device=None: self.peak_bytes(),
            "memory_reserved": lambda device=None: self.live_bytes(),
            "max_memory_reserved": lambda device=None: self.peak_bytes(),
            "mem_get_info": lambda device=None: (max(props.total_memory - self.live_bytes(), 0), props.total_memory),
        }
        for name, value in replacements.items():
            if hasattr(cuda, name):
                self.saved.append((cuda, name, getattr(cuda, name)))
                setattr(cuda, name, value)
        self._foreach_on_meta()
        return self

    def _foreach_on_meta(self):
        """Optimizers pick their implementation by the parameters' device: on CUDA the foreach one (whose
        temporaries, e.g. Adam's denominators, exist for all parameters at once: one parameter-sized list),
        on meta the per-parameter loop (one parameter's temporaries at a time). Measured on an H200 with
        GPT-2 small + AdamW: opt.step() allocated 1x the parameters' bytes, the loop 2x, and an optimizer
        step that is a step's peak (large model, small batch) differs by up to the parameters' size. The
        _foreach ops have meta kernels, so the prediction lets meta count as a foreach device."""
        module = sys.modules.get("torch.optim.optimizer")
        original = getattr(module, "_get_foreach_kernels_supported_devices", None)
        if original is None:
            return  # a torch whose optimizers decide otherwise: the loop, as before

        def with_meta():
            return list(original()) + ["meta"]

        self.saved.append((module, "_get_foreach_kernels_supported_devices", original))
        setattr(module, "_get_foreach_kernels_supported_devices", with_meta)

    def __exit__(self, *exc):
        for owner, name, value in reversed(self.saved):
            setattr(owner, name, value)
        self.saved = []
        return False


class _Properties:
    """What `torch.cuda.get_device_properties()` answers for the predicted device."""

    def __init__(self, capacity, capability=(8, 0)):
        self.name = DEVICE_NAME
        self.total_memory = int(capacity) if capacity else 80 * 1024 ** 3
        self.major, self.minor = capability
        self.multi_processor_count = 108
        self.is_integrated = False
        self.is_multi_gpu_board = False
