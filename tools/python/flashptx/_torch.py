"""flashptx.attention: the C ABI as torch.library custom ops (forward, backward, autograd, fake tensors).

Two ops, both with fake (meta) implementations so that torch.compile traces through them:
  torch.ops.flashptx.fwd(q, k, v, causal, softmax_scale, deterministic) -> (out, lse)
  torch.ops.flashptx.bwd(dout, q, k, v, out, lse, causal, softmax_scale, deterministic) -> (dq, dk, dv)
fwd has an autograd formula that calls bwd. softmax_scale 0.0 means 1/sqrt(head_dim) (the library's
default); `deterministic` is carried by fwd for its backward only.
"""
import ctypes
from typing import Tuple

import torch

from . import _abi

# Where the tensors must live. tests/test_torch_cpu.py adds "cpu" while it swaps the two C calls below
# for a torch emulation, to check the op plumbing (fake tensors, autograd, torch.compile) without a GPU.
_DEVICE_TYPES = ("cuda",)
_DTYPES = {torch.bfloat16: _abi.FLASHPTX_BF16, torch.float16: _abi.FLASHPTX_FP16,
           torch.float32: _abi.FLASHPTX_FP32}  # fp32 is passed on so that the library says no itself


# ---- checks and layout (traced by torch.compile: shapes and strides only) ---------------------------
def _device_error(where, name, t):
    reason = None
    try:
        reason = _abi.unavailable_reason()
    except Exception:  # noqa: BLE001 - the reason is a courtesy; the error below stands on its own
        pass
    msg = "%s needs CUDA tensors; %s is on %s." % (where, name, t.device)
    if reason:
        msg += " This machine cannot run flashptx: " + reason
    return ValueError(msg)


def _check_inputs(where, q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: %s must be a torch.Tensor, got %s" % (where, name, type(t).__name__))
        if t.dim() != 4:
            raise ValueError("%s: %s must be [batch, seqlen, heads, head_dim], got %d dims %s"
                             % (where, name, t.dim(), tuple(t.shape)))
        if t.device.type not in _DEVICE_TYPES:
            raise _device_error(where, name, t)
        if t.dtype not in _DTYPES:
            raise ValueError("%s: %s is %s; the kernels take torch.bfloat16 or torch.float16" % (where, name, t.dtype))
    if k.device != q.device or v.device != q.device:
        raise ValueError("%s: q, k, v must be on one device, got %s, %s, %s" % (where, q.device, k.device, v.device))
    if k.shape != v.shape:
        raise ValueError("%s: k and v must have one shape, got %s and %s" % (where, tuple(k.shape), tuple(v.shape)))
    if k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise ValueError("%s: q %s and k %s must share batch and head_dim" % (where, tuple(q.shape), tuple(k.shape)))


def _layout_ok(t):
    """The strides the C ABI takes without a copy: last dim contiguous, the batch, row and head
    strides positive multiples of 16 bytes (in any order, with any gaps). Shapes and strides only,
    so that torch.compile traces it; the data pointer's own alignment is checked in the op."""
    if t.size(3) > 1 and t.stride(3) != 1:
        return False
    es = t.element_size()
    for i in range(3):
        if t.size(i) > 1 and (t.stride(i) <= 0 or (t.stride(i) * es) % 16 != 0):
            return False
    return True


def _prep(t):
    return t if _layout_ok(t) else t.clone(memory_format=torch.contiguous_format)


def _aligned(t):
    """In the op, on real tensors: _prep, and a copy when the data pointer is not 16-byte aligned
    (a view at an odd offset, or a storage that torch did not allocate)."""
    t = _prep(t)
    if t.data_ptr() % 16 != 0:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def _strides(t):
    return (t.stride(0), t.stride(1), t.stride(2))


def _stream(device):
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


# ---- the C calls ------------------------------------------------------------------------------------
def _launch_fwd(q, k, v, out, lse, causal, softmax_scale):
    lib = _abi.library()
    # With seqlen_k 0, k and v are never read but must not be NULL: any valid device pointer will do.
    kp = k.data_ptr() or q.data_ptr()
    vp = v.data_ptr() or q.data_ptr()
    # The dynamic schedule's counter (include/flashptx.h, tile_counter), where the plan can use it
    # (causal d64): a fresh zeroed one per call, so that calls on other streams or in CUDA graphs
    # never share one. Alive until the call is queued; PyTorch's caching allocator hands its memory
    # out again only in stream order, after the kernel. (Not yet run on the H200 through this layer.)
    ctr = torch.zeros(2, dtype=torch.int32, device=q.device) if causal and q.shape[-1] == 64 else None
    p = _abi.fwd_params({"q": q.data_ptr(), "k": kp, "v": vp, "o": out.data_ptr(), "lse": lse.data_ptr(),
                         "tile_counter": ctr.data_ptr() if ctr is not None else None},
                        tuple(q.shape), tuple(k.shape),
                        {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out)},
                        (_DTYPES[q.dtype], _DTYPES[k.dtype], _DTYPES[v.dtype], _DTYPES[out.dtype]),
                        causal, softmax_scale)
    with torch.cuda.device(q.device):
        _abi.check(lib, "flashptx_fwd", lib.flashptx_fwd(ctypes.byref(p), _stream(q.device)))


def _launch_bwd(dout, q, k, v, out, lse, dq, dk, dv, causal, softmax_scale, deterministic):
    lib = _abi.library()
    p = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": out.data_ptr(),
                         "lse": lse.data_ptr(), "dout": dout.data_ptr(), "dq": dq.data_ptr(),
                         "dk": dk.data_ptr(), "dv": dv.data_ptr()},
                        tuple(q.shape), tuple(k.shape),
                        {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out),
                         "do": _strides(dout), "dq": _strides(dq), "dk": _strides(dk), "dv": _strides(dv)},
                        _DTYPES[q.dtype], causal, softmax_scale, deterministic)
    with torch.cuda.device(q.device):
        need = ctypes.c_int64(0)
        _abi.check(lib, "flashptx_bwd_workspace_size",
                   lib.flashptx_bwd_workspace_size(ctypes.byref(p), ctypes.byref(need)))
        ws = None
        if need.value > 0:
            # From torch's caching allocator on the current stream (blocks are 512-byte aligned); it
            # goes back to the pool after the call, reusable only by work queued after it.
            ws = torch.empty(need.value, dtype=torch.uint8, device=q.device)
            p.workspace, p.workspace_bytes = ws.data_ptr(), need.value
        _abi.check(lib, "flashptx_bwd", lib.flashptx_bwd(ctypes.byref(p), _stream(q.device)))
        del ws


# ---- the ops ----------------------------------------------------------------------------------------
@torch.library.custom_op("flashptx::fwd", mutates_args=())
def _fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
         deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::fwd", q, k, v)
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    b, sq, hq, d = q.shape
    out = q.new_empty((b, sq, hq, d))
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    _launch_fwd(q, k, v, out, lse, causal, softmax_scale)
    return out, lse


@_fwd.register_fake
def _fwd_fake(q, k, v, causal, softmax_scale, deterministic):
    b, sq, hq, d = q.shape
    return q.new_empty((b, sq, hq, d)), q.new_empty((b, hq, sq), dtype=torch.float32)


@torch.library.custom_op("flashptx::bwd", mutates_args=())
def _bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
         lse: torch.Tensor, causal: bool, softmax_scale: float,
         deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    where = "flashptx::bwd"
    _check_inputs(where, q, k, v)
    for name, t in (("dout", dout), ("out", out)):
        if t.shape != q.shape or t.device != q.device:
            raise ValueError("%s: %s must have q's shape %s and device, got %s on %s"
                             % (where, name, tuple(q.shape), tuple(t.shape), t.device))
    if q.dtype != k.dtype or q.dtype != v.dtype or out.dtype != q.dtype:
        raise ValueError("%s: q, k, v and out must share one dtype, got %s, %s, %s, %s"
                         % (where, q.dtype, k.dtype, v.dtype, out.dtype))
    b, sq, hq, _ = q.shape
    if tuple(lse.shape) != (b, hq, sq) or lse.dtype != torch.float32 or lse.device != q.device:
        raise ValueError("%s: lse must be float32 [batch, heads_q, seqlen_q] = %s on q's device, got %s %s"
                         % (where, (b, hq, sq), lse.dtype, tuple(lse.shape)))
    if dout.dtype != q.dtype:
        dout = dout.to(q.dtype)
    dout, q, k, v, out = (_aligned(t) for t in (dout, q, k, v, out))
    lse = lse.contiguous()
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    _launch_bwd(dout, q, k, v, out, lse, dq, dk, dv, causal, softmax_scale, deterministic)
    return dq, dk, dv


@_bwd.register_fake
def _bwd_fake(dout, q, k, v, out, lse, causal, softmax_scale, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output):
    q, k, v, causal, softmax_scale, deterministic = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.causal, ctx.softmax_scale, ctx.deterministic = causal, softmax_scale, deterministic
    ctx.mark_non_differentiable(lse)


def _backward(ctx, dout, dlse):
    q, k, v, out, lse = ctx.saved_tensors
    if dout is None:  # only lse was used downstream, and lse carries no gradient
        dout = torch.zeros_like(out)
    dq, dk, dv = torch.ops.flashptx.bwd(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale,
                                        ctx.deterministic)
    return dq, dk, dv, None, None, None


_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---- the public function ------------------------------------------------------------------------------
def attention(q, k, v, *, softmax_scale=None, causal=False, deterministic=False, return_lse=False):
    """Scaled dot-product attention by flashptx's kernels (FA3 on sm_90; FA4 on sm_100 after
    flashptx.allow_unverified_sm100()), with autograd.

    The options are keyword-only and named as FlashAttention-3's flash_attn_func names them, so
    that code ported from it says what it means: FA3's positional flash_attn_func(q, k, v, 0.088,
    True) raises TypeError here; write attention(q, k, v, softmax_scale=0.088, causal=True).

    q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim]
    (FlashAttention's layout, not SDPA's [batch, heads, seqlen, head_dim]). CUDA tensors, all
    torch.bfloat16 or all torch.float16 (under torch.autocast, fp32 inputs are first cast to the
    autocast dtype, as SDPA does). heads_q a multiple of heads_kv: GQA, MQA (heads_kv 1).
    head_dim 64, 128 or 256 (sm_100: 64 and 128), forward and backward.

    Strides: any the C ABI accepts are used as they are, without a copy: last dim contiguous and
    the batch, row and head strides multiples of 16 bytes in any order (e.g. q, k, v unbound from
    one packed [batch, seqlen, 3, heads, head_dim] tensor, or [batch, heads, seqlen, head_dim]
    tensors passed as .transpose(1, 2)). Anything else (a non-contiguous last dim, a broadcast
    stride 0, an unaligned offset) is first copied to a contiguous tensor. The output is contiguous.

    causal: mask aligned to the bottom-right corner when seqlen_q != seqlen_k (as FlashAttention;
    SDPA's is_causal is top-left aligned). softmax_scale: a Python float, default 1/sqrt(head_dim).
    deterministic: the backward's gradients are bitwise reproducible (a fixed accumulation order;
    slower). return_lse: also return the log-sum-exp, float32 [batch, heads_q, seqlen_q], natural log
    (no gradient flows through it).

    Runs on the current CUDA stream of q's device. Registered as torch.ops.flashptx.fwd / .bwd
    custom ops, so torch.compile(fullgraph=True) traces it without a graph break. A status of the
    library becomes flashptx.FlashptxValueError (a ValueError: input rejected) or
    flashptx.FlashptxRuntimeError (a RuntimeError: no usable GPU, a CUDA error), with the
    library's message.
    """
    _check_inputs("flashptx.attention", q, k, v)
    if torch.is_autocast_enabled(q.device.type):
        # Under autocast, as SDPA: fp32 inputs run in the autocast dtype (bf16 or fp16).
        dt = torch.get_autocast_dtype(q.device.type)
        q, k, v = (t.to(dt) if t.dtype == torch.float32 else t for t in (q, k, v))
    if softmax_scale is None:
        scale = 0.0  # the library's 1/sqrt(head_dim)
    else:
        scale = float(softmax_scale)
        if scale == 0.0:
            raise ValueError("flashptx.attention: softmax_scale 0 (pass None for 1/sqrt(head_dim))")
    out, lse = torch.ops.flashptx.fwd(_prep(q), _prep(k), _prep(v), bool(causal), scale, bool(deterministic))
    return (out, lse) if return_lse else out
