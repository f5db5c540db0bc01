"""`F.scaled_dot_product_attention` as CUDA would run it.

On meta, SDPA's backend choice finds no fused kernel and takes the math path, which materialises the
(L x S) attention matrix and saves it for backward. On a GPU (sm80+, torch 2.x) the same call runs
FlashAttention for fp16/bf16 inputs without a mask, else memory-efficient attention (fp32 too, masks as an
additive bias), both of which keep only the output and a float32 logsumexp. Their aten ops have meta
kernels and autograd formulas, so the predicted step calls them directly under the same conditions that
sdp_utils.cpp checks (4-D inputs, head dim a multiple of 8 and at most 256, same head dims, no GQA).
Anything else keeps the math path, as CUDA would."""
from typing import Any

import torch

_aten: Any = torch.ops.aten  # op namespaces are resolved at run time
_FLASH_DTYPES = (torch.float16, torch.bfloat16)


def _fused_ok(q, k, v):
    if not (q.is_meta and k.is_meta and v.is_meta) or q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return False
    e = q.size(-1)
    return e % 8 == 0 and e <= 256 and k.size(-1) == e and v.size(-1) == e and q.size(1) == k.size(1) == v.size(1)


def cuda_sdpa(original, args, kwargs):
    """Runs SDPA with CUDA's kernel choice on meta tensors; None when the math path applies."""
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    q, k, v = bound.get("query"), bound.get("key"), bound.get("value")
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)) or bound.get("enable_gqa"):
        return None
    if not _fused_ok(q, k, v):
        return None
    mask = bound.get("attn_mask")
    dropout = float(bound.get("dropout_p") or 0.0)
    causal = bool(bound.get("is_causal") or False)
    scale = bound.get("scale")
    if mask is None and q.dtype in _FLASH_DTYPES and q.dtype == k.dtype == v.dtype:
        return _aten._scaled_dot_product_flash_attention(q, k, v, dropout, causal, False, scale=scale)[0]
    if q.dtype not in _FLASH_DTYPES + (torch.float32,):
        return None
    if mask is not None:
        if mask.dtype == torch.bool:
            # Boolean masks become an additive bias (-inf where False) before the kernel, as in sdp_utils.
            mask = torch.where(mask.logical_not(), torch.tensor(float("-inf"), dtype=q.dtype),
                               torch.tensor(0.0, dtype=q.dtype))
        mask = mask.expand(q.size(0), q.size(1), q.size(2), k.size(2))
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    return _aten._scaled_dot_product_efficient_attention(q, k, v, mask, grad, dropout, causal, scale=scale)[0]
