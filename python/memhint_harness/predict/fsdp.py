"""FSDP on meta tensors over the fake process group: one process stands for one rank of an FSDP job.

FSDP treats parameters on the meta device as deferred initialisation: both APIs check for them and insist on
materialising them on a real device. In a prediction the meta tensors *are* the GPU's tensors, so each check
that would move them, or refuse them, is bypassed, and nothing else: FSDP's own code shards the parameters,
pads the shards, allocates the all-gather and reduce-scatter buffers, frees the gathered parameters after
forward and backward, and hands the optimizer its shards, all as ordinary, counted allocations on meta.

`fully_shard` (FSDP2), torch 2.13 measured:
1. `FSDPParamGroup._validate_no_meta_params` ("FSDP parameters should be materialized from meta device
   before training") is skipped.
2. Its device is the default mesh's, the host on a CPU-only torch (FSDP2's CPU path is its CUDA path with
   torch.cpu's no-op streams and events). Its buffers are allocated with `device=<that device>`; a factory
   call from FSDP's modules with an explicit host device lands on meta (`device.MetaDevice.device_libraries`).

`FullyShardedDataParallel` (FSDP1):
3. `device_id` (the user's CUDA device) becomes the host for FSDP's device handle, and its compute device is
   meta (`_get_compute_device`): its checks compare every flat parameter with the compute device, and with
   meta they hold as they do on CUDA. A device handle for meta is torch.cpu's (no-op streams: one stream, as
   the allocator model assumes).
4. `_materialize_meta_module` (`to_empty` + `reset_parameters` on the device) is skipped; a `param_init_fn`
   of the user's still runs, on meta.
5. `_check_flat_params_on_expected_device` is skipped (it compares with the host, as the handle's device).

Parameter CPU offload (FSDP1 `CPUOffload(offload_params=True)`, FSDP2 `CPUOffloadPolicy`) is refused in one
line (`offload_refusal`): FSDP requires the offloaded shards on the CPU and rejects meta ones, and host memory
could not be told from the GPU's in a prediction on meta tensors.

Each bypass is looked up by name; where this torch lacks one, `missing()` names it and the prediction of FSDP
is refused in one line rather than run wrong.
"""
import importlib

FSDP_LIBRARIES = ("torch.distributed.fsdp",)

_FSDP2_GROUP = "torch.distributed.fsdp._fully_shard._fsdp_param_group"
_FSDP1_INIT = "torch.distributed.fsdp._init_utils"
_FSDP1_RUNTIME = "torch.distributed.fsdp._runtime_utils"
_FSDP1_COMMON = "torch.distributed.fsdp._common_utils"

# (module, attribute path) of every function bypassed above, for the feature check
_NEEDED = ((_FSDP2_GROUP, "FSDPParamGroup._validate_no_meta_params"),
           (_FSDP1_INIT, "_materialize_meta_module"), (_FSDP1_INIT, "_get_compute_device"),
           (_FSDP1_RUNTIME, "_check_flat_params_on_expected_device"),
           (_FSDP1_COMMON, "_FSDPDeviceHandle.from_device"))


def _lookup(module_name, path):
    owner = importlib.import_module(module_name)
    for part in path.split("."):
        owner = getattr(owner, part)
    return owner


def missing():
    """None when this torch has every FSDP function the prediction adjusts, else the first one it lacks."""
    for module_name, path in _NEEDED:
        try:
            _lookup(module_name, path)
        except Exception:  # noqa: BLE001 - a torch that moved or renamed it
            return "%s.%s" % (module_name, path)
    return None


def _is_meta(module):
    return any(p.device.type == "meta" for p in module.parameters())


def install(torch, patch):
    """Applies adjustments 1-5; `patch(owner, name, value)` records what to restore."""
    group = importlib.import_module(_FSDP2_GROUP).FSDPParamGroup
    original_validate = group._validate_no_meta_params

    def validate_no_meta_params(self):
        if not any(p.sharded_param.device.type == "meta" for p in self.fsdp_params):
            original_validate(self)

    patch(group, "_validate_no_meta_params", validate_no_meta_params)  # (1)

    from torch.distributed.fsdp import FullyShardedDataParallel

    init = FullyShardedDataParallel.__init__

    def fsdp_init(fsdp, module, *args, **kwargs):
        if _is_meta(module) and kwargs.get("device_id") is not None:
            kwargs = dict(kwargs, device_id=torch.device("cpu"))  # (3)
        init(fsdp, module, *args, **kwargs)

    fsdp_init.__wrapped__ = init
    patch(FullyShardedDataParallel, "__init__", fsdp_init)

    init_utils = importlib.import_module(_FSDP1_INIT)
    materialize = init_utils._materialize_meta_module
    compute_device = init_utils._get_compute_device

    def materialize_meta_module(module, *args, **kwargs):
        if not _is_meta(module):
            materialize(module, *args, **kwargs)

    def get_compute_device(module, ignored_params, device_from_device_id, *args, **kwargs):
        if _is_meta(module):
            return torch.device("meta")
        return compute_device(module, ignored_params, device_from_device_id, *args, **kwargs)

    patch(init_utils, "_materialize_meta_module", materialize_meta_module)  # (4)
    patch(init_utils, "_get_compute_device", get_compute_device)  # (3)

    runtime = importlib.import_module(_FSDP1_RUNTIME)
    check = runtime._check_flat_params_on_expected_device

    def check_flat_params_on_expected_device(state, module):
        if not _is_meta(module):
            check(state, module)

    patch(runtime, "_check_flat_params_on_expected_device", check_flat_params_on_expected_device)  # (5)

    handle_class = importlib.import_module(_FSDP1_COMMON)._FSDPDeviceHandle
    from_device = handle_class.from_device

    def handle_from_device(cls, device):
        if device.type == "meta":
            return cls(device, backend=torch.cpu)
        return from_device(device)

    patch(handle_class, "from_device", classmethod(handle_from_device))  # (3)


OFFLOAD_REFUSAL = ("FSDP with CPU offload (%s) is not predicted: its shards live in host memory, which a prediction "
                   "on meta tensors cannot tell from the GPU's, and FSDP requires them on the CPU; predict without "
                   "offload, or measure it with `memhint profile --nproc-per-node N` (gloo on the CPU)")


def offload_refusal(api, args, kwargs):
    """The one line refusing FSDP's parameter CPU offload (FSDP1 `cpu_offload=CPUOffload(offload_params=True)`,
    positional or not; FSDP2 `offload_policy=CPUOffloadPolicy()`), else None. FSDP itself rejects meta
    parameters there (measured, torch 2.13), with a traceback that does not say what to do instead."""
    if api == "FullyShardedDataParallel":
        offload = kwargs.get("cpu_offload", args[2] if len(args) > 2 else None)
        if getattr(offload, "offload_params", False):
            return OFFLOAD_REFUSAL % "CPUOffload(offload_params=True)"
        return None
    policy = kwargs.get("offload_policy")
    if policy is not None and type(policy).__name__ == "CPUOffloadPolicy":
        return OFFLOAD_REFUSAL % "CPUOffloadPolicy"
    return None


def describe_units(root_or_module, location, api, seen, names):
    """The unit records of the profiler's FSDP report (distributed.py), for `prediction.world.fsdp`."""
    from ..distributed import _fsdp1_units, _fsdp2_unit

    if api == "FullyShardedDataParallel":
        return _fsdp1_units(root_or_module, location, names)
    record = _fsdp2_unit(root_or_module, location, seen)
    return [record] if record is not None else []
