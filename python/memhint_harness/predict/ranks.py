"""`--world-size N`: predict one rank of an N-rank torch.distributed job on meta tensors.

One process stands for rank `--rank` (0 by default) of the job: the default process group is torch's *fake*
process group (`torch.testing._internal.distributed.fake_pg`: a backend whose collectives complete at once
without touching data, made for tests), so that the user's `init_process_group`, `get_world_size()`, data
sharding and `DistributedDataParallel(model)` behave as in a real N-rank job while every tensor stays on meta.

DistributedDataParallel needs three adjustments to run on meta tensors over the fake group. Each is the
narrowest one that lets the real DDP code run, so that DDP's own allocations (gradient buckets, the rebuilt
buckets, the flattened parameter broadcast) are the profiler's ordinary, counted allocations:

1. The parameter-shape check across ranks (`_verify_param_shape_across_processes`) is skipped. It all-gathers
   every parameter's shape and compares the *values* with `.item()`, which meta tensors do not have; with one
   process standing for every rank the shapes are equal by construction.
2. The bucket rebuild at the start of the second iteration runs, but the copy of the broadcast bucket order
   back into a host tensor is skipped: the reducer broadcasts rank 0's order (an index tensor on the
   parameters' device, meta here) and copies it back to the host, which would read meta data. Skipping that
   copy leaves the host tensor with this rank's own order, which is what a broadcast from rank 0 gives rank 0
   (and every rank of a step that is the same on every rank). The rebuilt buckets are allocated and the old
   ones freed exactly as in a real job.
3. Gradient reduction uses a communication hook that hands the bucket back as reduced, touching no data:
   the fake group's futures carry no tensor, which the reducer rejects. The built-in allreduce divides and
   reduces the bucket in place, so the hook allocates what it does: nothing through torch. Only when the
   user registered no hook of their own (a user's hook runs unchanged and must work on the fake group).

FSDP (FullyShardedDataParallel and fully_shard) runs its own code on meta tensors too, with the few checks
that would materialise meta parameters on a real device bypassed (fsdp.py): its sharding, padding and
all-gather / reduce-scatter buffers are the rank's counted allocations. Where this torch lacks one of the
functions adjusted, FSDP is refused in one line at the user's FSDP call.

Where the fake process group is missing (torch builds without torch.distributed, or a torch that moved it),
the prediction is refused in one line.
"""
import os
import sys

FAKE_PG_MODULE = "torch.testing._internal.distributed.fake_pg"


def unavailable(torch):
    """None when this torch can stand one process for N ranks, else a one-line reason."""
    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return "predict --world-sizes needs torch.distributed, which %s's torch %s was built without" % (
            sys.executable, torch.__version__)
    try:
        import importlib

        module = importlib.import_module(FAKE_PG_MODULE)
    except Exception as error:  # noqa: BLE001 - any import failure means "no fake process group"
        return ("predict --world-sizes needs torch's fake process group (%s), which torch %s does not "
                "provide: %s" % (FAKE_PG_MODULE, torch.__version__, error))
    if not hasattr(module, "FakeStore"):
        return "predict --world-sizes needs %s.FakeStore, absent in torch %s" % (FAKE_PG_MODULE, torch.__version__)
    return None


class FsdpOnMeta(RuntimeError):
    """FSDP was asked to wrap a module whose parameters are on meta (see the module docstring)."""


FSDP_REFUSAL = ("FSDP cannot be predicted with torch %s: FSDP treats parameters on the meta device as "
                "deferred initialisation, and %s, which the prediction adjusts to run it on meta tensors, is "
                "missing; measure FSDP with `memhint profile --nproc-per-node N` (gloo on the CPU)")


def _is_meta(module):
    return any(p.device.type == "meta" for p in module.parameters())


def _bucket_sizes(text):
    """DDP's logging data lists bucket sizes in bytes as one string ("76840" or "1048576, 26214400")."""
    return [int(part) for part in str(text or "").replace(",", " ").split() if part.isdigit()]


class FakeWorld:
    """The fake default process group and the DDP adjustments above, for one predicted rank."""

    def __init__(self, torch, world_size, rank):
        self.torch = torch
        self.world_size = world_size
        self.rank = rank
        self.ddps = []  # (ddp, location, user_hook: [bool])
        self.user_inits = []  # what the user's init_process_group calls asked for
        self.notes = []
        self.fsdp_units = []  # prediction.world.fsdp: the profiler's FSDP unit records
        # prediction.world.collectives: every all-gather / reduce-scatter, as the profiler's ranks record them
        self.collectives = None
        self._fsdp_missing = None  # the FSDP function this torch lacks, when FSDP is refused
        self._refused = None  # the one line refusing what FSDP was asked for (CPU offload), when refused
        self._restore = []
        # modules whose host allocations stand for the GPU's (device.MetaDevice.device_libraries)
        self.device_libraries: tuple = ()

    # -- process group ------------------------------------------------------------------------------------
    def install(self):
        import importlib

        dist = self.torch.distributed
        fake_pg = importlib.import_module(FAKE_PG_MODULE)
        # What torchrun would set for this rank; scripts read them for device and data sharding.
        os.environ.update(RANK=str(self.rank), WORLD_SIZE=str(self.world_size), LOCAL_RANK=str(self.rank),
                          LOCAL_WORLD_SIZE=str(self.world_size), GROUP_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT="29500")
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("fake", store=fake_pg.FakeStore(), rank=self.rank, world_size=self.world_size)
        self._patch(dist, "init_process_group", self._user_init(dist))
        from ..collectives import CollectiveLog
        from ..distributed import _caller_in_user_code

        # The profile's wrappers (collectives.py), so that a prediction lists FSDP's all-gathers and
        # reduce-scatters per line and unit as `profile --nproc-per-node` does; the fake group runs them.
        self.collectives = CollectiveLog(None, _caller_in_user_code)
        self.collectives.install(self._patch)
        self._patch_ddp()
        self._patch_fsdp()

    def _patch(self, owner, name, value):
        self._restore.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def remove(self):
        for owner, name, value in reversed(self._restore):
            setattr(owner, name, value)
        self._restore = []
        dist = self.torch.distributed
        if dist.is_initialized():
            dist.destroy_process_group()

    def _user_init(self, dist):
        world = self

        def init_process_group(backend=None, *args, **kwargs):
            # The fake group is already the default one: the user's backend, store and rendezvous are not used.
            world.user_inits.append(str(backend) if backend is not None else "default")
            if not dist.is_initialized():  # the user destroyed it: stand in again
                import importlib

                store = importlib.import_module(FAKE_PG_MODULE).FakeStore()
                dist.distributed_c10d.init_process_group("fake", store=store, rank=world.rank,
                                                         world_size=world.world_size)

        return init_process_group

    # -- DistributedDataParallel -------------------------------------------------------------------------
    def _patch_ddp(self):
        import torch.nn.parallel.distributed as ddp_module
        from torch.nn.parallel import DistributedDataParallel

        from ..distributed import _caller_in_user_code

        torch = self.torch
        world = self
        # (1) see the module docstring
        self._patch(ddp_module, "_verify_param_shape_across_processes", lambda *args, **kwargs: None)

        init = DistributedDataParallel.__init__

        def ddp_init(ddp, module, *args, **kwargs):
            location = _caller_in_user_code()
            if _is_meta(module) and (kwargs.get("device_ids") or kwargs.get("output_device") is not None):
                # the user's CUDA device index: meta tensors have no device index to move inputs to
                kwargs = dict(kwargs, device_ids=None, output_device=None)
            init(ddp, module, *args, **kwargs)
            world.ddps.append((ddp, location, [False]))

        self._patch(DistributedDataParallel, "__init__", ddp_init)

        def user_hook_flag(ddp):
            for known, _location, flag in world.ddps:
                if known is ddp:
                    return flag
            return [False]

        register_original = getattr(DistributedDataParallel, "register_comm_hook")
        for name in ("register_comm_hook", "_register_builtin_comm_hook"):
            original = getattr(DistributedDataParallel, name)

            def register(ddp, *args, _original=original, **kwargs):
                user_hook_flag(ddp)[0] = True
                return _original(ddp, *args, **kwargs)

            self._patch(DistributedDataParallel, name, register)

        from torch.utils._python_dispatch import TorchDispatchMode

        copy_ = torch.ops.aten.copy_.default

        class KeepHostCopy(TorchDispatchMode):
            """(2): a copy from meta into a host tensor leaves the host tensor as it is."""

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if (func is copy_ and len(args) >= 2 and args[0].device.type == "cpu"
                        and args[1].device.type == "meta"):
                    return args[0]
                return func(*args, **(kwargs or {}))

        pre_forward = getattr(DistributedDataParallel, "_pre_forward")

        def ddp_pre_forward(ddp, *args, **kwargs):
            flag = user_hook_flag(ddp)
            if not flag[0] and _is_meta(ddp.module):
                # (3): registered through the original method, so it does not count as the user's
                flag[0] = True
                register_original(ddp, None, _bucket_as_reduced)
            with KeepHostCopy():
                return pre_forward(ddp, *args, **kwargs)

        self._patch(DistributedDataParallel, "_pre_forward", ddp_pre_forward)

    # -- FSDP ---------------------------------------------------------------------------------------------
    def refusal(self):
        """The one line that explains why FSDP is refused (FsdpOnMeta's message)."""
        if self._refused is not None:
            return self._refused
        return FSDP_REFUSAL % (self.torch.__version__, self._fsdp_missing)

    def _patch_fsdp(self):
        try:
            from torch.distributed.fsdp import FullyShardedDataParallel  # noqa: F401 - is FSDP there at all
        except Exception:  # noqa: BLE001 - torch without FSDP: nothing to adjust
            return
        from . import fsdp

        self._fsdp_missing = fsdp.missing()
        if self._fsdp_missing is not None:
            self._refuse_fsdp()
            return
        fsdp.install(self.torch, self._patch)
        self.device_libraries = fsdp.FSDP_LIBRARIES
        self._watch_fsdp()

    def _fsdp_entry_points(self):
        """(owner, name, original) of FullyShardedDataParallel.__init__ and every module's fully_shard."""
        import importlib

        from torch.distributed.fsdp import FullyShardedDataParallel

        found: list = [(FullyShardedDataParallel, "__init__", FullyShardedDataParallel.__init__)]
        for owner_name in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp",
                           "torch.distributed._composable.fsdp.fully_shard"):
            try:
                owner = importlib.import_module(owner_name)
            except Exception:  # noqa: BLE001 - an API this torch does not have
                continue
            original = getattr(owner, "fully_shard", None)
            if callable(original) and not isinstance(original, type(importlib)):
                found.append((owner, "fully_shard", original))
        return found

    def _watch_fsdp(self):
        """Describes each FSDP unit as `profile --nproc-per-node` does (distributed.py's records): the
        outermost FullyShardedDataParallel its nested units when it is built, each fully_shard call its own."""
        from ..distributed import _caller_in_user_code

        world = self
        seen, depth = set(), [0]
        for owner, name, original in self._fsdp_entry_points():
            if name == "__init__":
                def init(module_self, *args, _original=original, **kwargs):
                    world._refuse_offload("FullyShardedDataParallel", args, kwargs)
                    location = _caller_in_user_code() if depth[0] == 0 else None
                    depth[0] += 1
                    try:
                        _original(module_self, *args, **kwargs)
                    finally:
                        depth[0] -= 1
                    if location is not None:
                        world._describe_units(module_self, location, "FullyShardedDataParallel", seen)

                self._patch(owner, name, init)
            else:
                def shard(module, *args, _original=original, **kwargs):
                    world._refuse_offload("fully_shard", (module,) + args, kwargs)
                    location = _caller_in_user_code()
                    result = _original(module, *args, **kwargs)
                    world._describe_units(module, location, "fully_shard", seen)
                    return result

                shard.__wrapped__ = original
                self._patch(owner, name, shard)

    def _refuse_offload(self, api, args, kwargs):
        """FSDP's CPU offload of meta parameters: refused in one line (fsdp.offload_refusal)."""
        from . import fsdp

        module = args[0] if args else kwargs.get("module")
        message = fsdp.offload_refusal(api, args, kwargs)
        if message is not None and module is not None and hasattr(module, "parameters") and _is_meta(module):
            self._refused = message
            raise FsdpOnMeta(message)

    def _describe_units(self, module, location, api, seen):
        from . import fsdp

        try:
            names = self.collectives.names  # FSDP1 units' qualified names, shared with the collectives' records
            if api == "FullyShardedDataParallel":
                self.collectives.name_fsdp1_units(module)
            self.fsdp_units.extend(fsdp.describe_units(module, location, api, seen, names))
        except Exception as error:  # noqa: BLE001 - a description must never lose the prediction
            self.fsdp_units.append({"api": api, "location": location, "error": "%s: %s" % (type(error).__name__, error)})

    def _refuse_fsdp(self):
        message = self.refusal()

        def refusing(original):
            def wrapper(*args, **kwargs):
                module = args[1] if original.__name__ == "__init__" else (args[0] if args else kwargs.get("module"))
                if module is not None and hasattr(module, "parameters") and _is_meta(module):
                    raise FsdpOnMeta(message)
                return original(*args, **kwargs)

            wrapper.__wrapped__ = original
            return wrapper

        for owner, name, original in self._fsdp_entry_points():
            self._patch(owner, name, refusing(original))

    # -- report -------------------------------------------------------------------------------------------
    def describe(self):
        """`prediction.world`: this rank, its job, and each DDP's gradient buckets as its reducer built them."""
        from ..distributed import _ddp_description

        ddps = []
        for ddp, location, _flag in self.ddps:
            try:
                record = _ddp_description(ddp, location)
                data = ddp._get_ddp_logging_data()
                record["bucketSizes"] = _bucket_sizes(data.get("bucket_sizes"))
                rebuilt = _bucket_sizes(data.get("rebuilt_bucket_sizes"))
                record["rebuiltBucketSizes"] = rebuilt if int(data.get("has_rebuilt_buckets", 0) or 0) else None
            except Exception as error:  # noqa: BLE001 - a description must never lose the prediction
                record = {"location": location, "error": "%s: %s" % (type(error).__name__, error)}
            ddps.append(record)
        return {"worldSize": self.world_size, "rank": self.rank, "backend": "fake", "ddp": ddps,
                "fsdp": self.fsdp_units,
                "collectives": self.collectives.records if self.collectives is not None else [],
                "userInitBackends": self.user_inits}


def _bucket_as_reduced(_state, bucket):
    """(3): the bucket, as reduced, without a collective."""
    import torch

    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future
