"""CUDA autocast's precision rules, emulated for meta tensors.

Autocast is a dispatch key of the tensors' device (AutocastCUDA); meta tensors have none, so
`torch.autocast("cuda")` changes nothing on meta (checked on torch 2.13: `x @ w` stays float32, and
`torch.autocast("meta")` is refused). `torch.autocast("cuda", ...)` still records its state per thread
(`torch.is_autocast_enabled("cuda")`, `torch.get_autocast_dtype("cuda")`), so the device mode reads that
state and applies the rules of aten/src/ATen/autocast_mode.cpp (CUDA lists) at the Python-call level:
- lower precision (`fp16`/`bf16`): matmul-like ops and convolutions cast their floating inputs (not
  float64) to the autocast dtype; casts of leaf tensors that require grad (parameters) are cached until
  the outermost autocast region exits (`torch.clear_autocast_cache`), as autocast's `cached_cast` does;
- fp32: pointwise transcendental ops, norms and losses cast lower-precision inputs to float32;
- fp32 unless a dtype is given: softmax, log_softmax, cumsum, cumprod, prod, sum.
Limit: ops called from C++ composites (nn.LSTM's fused kernels, MultiheadAttention's fast path) are not
seen at the Python level and keep their input precision.
"""
import torch

LOWER = frozenset((
    "linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "baddbmm", "addmm", "addbmm", "addmv", "addr",
    "mv", "einsum", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_tbc", "prelu", "chain_matmul", "multi_dot", "scaled_dot_product_attention", "lstm_cell", "gru_cell",
    "rnn_tanh_cell", "rnn_relu_cell", "convolution", "_convolution", "bilinear",
))
FP32 = frozenset((
    "layer_norm", "group_norm", "exp", "expm1", "log", "log10", "log2", "log1p", "pow", "__pow__", "__rpow__",
    "rsqrt", "reciprocal", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "cosine_similarity",
    "nll_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "binary_cross_entropy_with_logits",
    "cross_entropy_loss", "cross_entropy", "dist", "cdist", "pdist", "renorm", "logsumexp", "margin_ranking_loss",
    "hinge_embedding_loss", "soft_margin_loss", "multilabel_margin_loss", "triplet_margin_loss",
    "poisson_nll_loss", "cosine_embedding_loss", "nuclear_norm", "frobenius_norm",
))
FP32_UNLESS_DTYPE = frozenset(("softmax", "log_softmax", "cumsum", "cumprod", "prod", "sum"))
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _state():
    try:
        # torch >= 2.4 takes a device type; older ones raise TypeError (feature-detected here)
        if torch.is_autocast_enabled("cuda"):  # pyright: ignore[reportCallIssue]
            return torch.get_autocast_dtype("cuda")  # pyright: ignore[reportAttributeAccessIssue]
    except TypeError:  # torch < 2.4: no device argument
        if torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
    return None


class AutocastEmulation:
    def __init__(self):
        self.cache = {}  # id(leaf) -> (leaf, cast)
        self._clear = None

    def install(self):
        original = torch.clear_autocast_cache
        emulation = self

        def clear_autocast_cache():
            emulation.cache.clear()
            return original()

        self._clear = original
        torch.clear_autocast_cache = clear_autocast_cache

    def remove(self):
        if self._clear is not None:
            torch.clear_autocast_cache = self._clear
            self._clear = None

    def adjust(self, func, args, kwargs):
        """(args, kwargs) as autocast would pass them to `func`, or None when autocast leaves them alone."""
        name = getattr(func, "__name__", "")
        if name not in LOWER and name not in FP32 and name not in FP32_UNLESS_DTYPE:
            return None
        dtype = _state()
        if dtype is None:
            return None
        if name in LOWER:
            return self._cast(args, dtype), {k: self._cast_one(v, dtype) for k, v in kwargs.items()}
        if name in FP32:
            return self._cast(args, torch.float32, only=_LOW_PRECISION), kwargs
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is not None and first.dtype in _LOW_PRECISION and kwargs.get("dtype") is None:
            kwargs = dict(kwargs, dtype=torch.float32)
            return args, kwargs
        return None

    def _cast(self, args, dtype, only=None):
        return tuple(self._cast_one(a, dtype, only) for a in args)

    def _cast_one(self, value, dtype, only=None):
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], torch.Tensor):
            return type(value)(self._cast_one(v, dtype, only) for v in value)
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            return value
        if value.dtype == dtype or value.dtype == torch.float64 or (only is not None and value.dtype not in only):
            return value
        cacheable = value.is_leaf and value.requires_grad
        if cacheable:
            hit = self.cache.get(id(value))
            if hit is not None and hit[0] is value and hit[1].dtype == dtype:
                return hit[1]
        cast = value.to(dtype)
        if cacheable:
            self.cache[id(value)] = (value, cast)
        return cast
