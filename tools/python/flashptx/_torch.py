"""flashptx.attention: the C ABI as torch.library custom ops (forward, backward, autograd, fake tensors).

Two ops, both with fake (meta) implementations so that torch.compile traces through them:
  torch.ops.flashptx.fwd(q, k, v, causal, softmax_scale, deterministic) -> (out, lse)
  torch.ops.flashptx.bwd(dout, q, k, v, out, lse, causal, softmax_scale, deterministic) -> (dq, dk, dv)
fwd has an autograd formula that calls bwd. softmax_scale 0.0 means 1/sqrt(head_dim) (the library's
default); `deterministic` is carried by fwd for its backward only. flashptx.attention_varlen has its
pair too (flashptx::fwd_varlen, flashptx::bwd_varlen: the packed layout, cu_seqlens, seqused), and the
window, softcap and sinks theirs (below).

Host cost. flashptx.attention in plain eager mode (no torch.compile, no dispatch or function mode,
no functorch transform, no tracer, plain tensors: _eager_ok) does not go through the custom ops:
it calls the same launchers through a plain torch.autograd.Function (_Attention), which skips the
dispatcher's Python kernels, the custom op's torch._dynamo.disable wrapper, its aliasing check and
its generated autograd.Function. Everything else, and every call under a tracer or a mode, takes the
ops. The launchers keep one ctypes params struct per thread and per (shapes, strides, dtypes,
options), and write only the data pointers into it per call (the backward's workspace size is kept
with it); the stream and device come from torch._C's raw queries.
"""
import ctypes
import math
import struct
import threading
from typing import Optional, Tuple

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


def _check_inputs(where, q, k, v, v_dim=False):
    """v_dim: v's head dim may differ from q's and k's (the plain forward's (192, 128): head_dim_v)."""
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
    if (k.shape[:3] != v.shape[:3]) if v_dim else (k.shape != v.shape):
        raise ValueError("%s: k and v must have one shape%s, got %s and %s"
                         % (where, " but for head_dim" if v_dim else "", tuple(k.shape), tuple(v.shape)))
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


# ---- eager fast helpers (run on real tensors only, never traced) --------------------------------------
def _aligned_eager(t):
    """_aligned in one pass over t's shape and strides (the same answer: test_torch_cpu.py compares
    the two)."""
    z = t.shape
    es = t.element_size()
    # A contiguous tensor whose rows are whole 16-byte units passes every stride test below (each
    # stride is a multiple of z[3]): only its address is left to test.
    if (z[3] * es) % 16 == 0 and t.is_contiguous():
        return t if t.data_ptr() % 16 == 0 else t.clone(memory_format=torch.contiguous_format)
    st = t.stride()
    ok = not (z[3] > 1 and st[3] != 1)
    if ok:
        for i in (0, 1, 2):
            if z[i] > 1 and (st[i] <= 0 or (st[i] * es) % 16 != 0):
                ok = False
                break
    if not ok or t.data_ptr() % 16 != 0:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def _inputs_ok(q, k, v):
    """True when q, k, v are CUDA tensors that pass _check_inputs (a quick test, for the common case;
    False means: ask _check_inputs, which raises with the message, or passes them)."""
    if not (q.is_cuda and k.is_cuda and v.is_cuda and q.dim() == 4 and k.dim() == 4 and v.dim() == 4
            and q.dtype in _DTYPES and k.dtype in _DTYPES and v.dtype in _DTYPES):
        return False
    dev = q.get_device()
    if k.get_device() != dev or v.get_device() != dev:
        return False
    qs, ks = q.shape, k.shape
    return ks[:3] == v.shape[:3] and ks[0] == qs[0] and ks[3] == qs[3]


def _check_inputs_eager(where, q, k, v):
    if not _inputs_ok(q, k, v):
        _check_inputs(where, q, k, v, v_dim=True)


# The backward's (head_dim, V's head dim) pairs (sm_90; 96 and 192 run on the d128 and d256 kernels over
# zero columns, and so does DeepSeek's (192, 128): include/flashptx.h, flashptx_bwd_params::head_dim_v);
# another pair the forward takes would raise when a gradient is asked for, not in the forward.
_BWD_HEAD_DIMS = (64, 96, 128, 192, 256)
_BWD_HEAD_DIM_PAIRS = tuple((d, d) for d in _BWD_HEAD_DIMS) + ((192, 128),)


def _check_backward_dims(where, q, v):
    if (q.shape[3], v.shape[3]) not in _BWD_HEAD_DIM_PAIRS:
        raise NotImplementedError(
            "%s: the backward is not built for head_dim %d with a V head dim of %d (the backward takes "
            "head_dim 64, 96, 128, 192 or 256 with V's equal to it, and (192, 128)); the forward runs alone: "
            "on inputs that do not require grad, or under torch.no_grad()" % (where, q.shape[3], v.shape[3]))


# The varlen backward takes the fixed-length backward's (head_dim, V's head dim) pairs (flashptx_bwd_varlen;
# 96, 192 and (192, 128) on the d128 and d256 shapes over zero columns); raised when a gradient is asked
# for, not in the forward.
def _check_varlen_backward_dims(where, q, v):
    if (q.shape[2], v.shape[2]) not in _BWD_HEAD_DIM_PAIRS:
        raise NotImplementedError(
            "%s: the varlen backward is not built for head_dim %d with a V head dim of %d (it takes head_dim "
            "64, 96, 128, 192 or 256 with V's equal to it, and (192, 128)); the forward runs alone: on inputs that "
            "do not require grad, or under torch.no_grad()" % (where, q.shape[2], v.shape[2]))


def _torch_c(name, default):
    fn = getattr(torch._C, name, None)
    return fn if fn is not None else default


_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_is_compiling = torch.compiler.is_compiling
_dispatch_modes = _torch_c("_len_torch_dispatch_stack", None)
_function_mode = _torch_c("_is_torch_function_mode_enabled", None)
_functorch_active = _torch_c("_are_functorch_transforms_active", None)
_tracing_state = _torch_c("_get_tracing_state", None)
_profiling = getattr(getattr(torch._C, "_autograd", None), "_profiler_enabled", None)
_FAST = None not in (_dispatch_modes, _function_mode, _functorch_active, _tracing_state, _profiling)


def _eager_ok(*tensors):
    """Whether flashptx.attention may skip the dispatcher: plain tensors (no subclass: fake,
    functional, DTensor...), no TorchDispatchMode or TorchFunctionMode (FakeTensorMode, make_fx,
    selective checkpointing, `with torch.device(...)`), no functorch transform (vmap, grad), no
    torch.jit tracer. Called after torch.compiler.is_compiling() said False, and never traced."""
    if not _FAST:
        return False
    for t in tensors:
        if type(t) not in _PLAIN_TYPES:
            return False
    return not (_dispatch_modes() or _function_mode() or _functorch_active() or _tracing_state() is not None)


# The current device and its current stream, without a torch.cuda.Stream object per call.
# (host_cost.py swaps them for CPU stand-ins.)
_current_device = _torch_c("_cuda_getDevice", None) or (lambda: torch.cuda.current_device())
_current_stream = _torch_c("_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


def _call(lib, name, fn, pref, index):
    """fn(pref, the current stream of device `index`) with `index` the current device; the status
    raised as an exception."""
    if _current_device() == index:
        st = fn(pref, _current_stream(index))
    else:
        with torch.cuda.device(index):
            st = fn(pref, _current_stream(index))
    if st != _abi.FLASHPTX_OK:
        _abi.check(lib, name, st)


# ---- the params structs, one per thread and per signature ------------------------------------------------
class _Structs(threading.local):
    """Per thread (a struct is written then read by the C call, which runs without the GIL: another
    thread must never write the same one): {signature: (struct, byref(struct)[, workspace bytes])}."""

    def __init__(self):
        self.fwd = {}
        self.bwd = {}


_structs = _Structs()
_CACHE_MAX = 256  # signatures per thread and direction; past it the cache starts again (dynamic shapes)


def _packer(cls, names):
    """struct.Struct writing the pointer fields `names` of cls, which must be consecutive, and their
    offset."""
    off = getattr(cls, names[0]).offset
    size = ctypes.sizeof(ctypes.c_void_p)
    for i, n in enumerate(names):
        assert getattr(cls, n).offset == off + i * size and getattr(cls, n).size == size, (cls, n)
    return struct.Struct("@%dP" % len(names)), off


_FWD_PTRS, _FWD_PTRS_AT = _packer(_abi.FwdParams, ("q", "k", "v", "o", "lse"))
_FWD_CTR, _FWD_CTR_AT = _packer(_abi.FwdParams, ("tile_counter",))
_BWD_PTRS, _BWD_PTRS_AT = _packer(_abi.BwdParams, ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"))
_BWD_WS, _BWD_WS_AT = _packer(_abi.BwdParams, ("workspace",))
assert _abi.BwdParams.workspace_bytes.offset == _BWD_WS_AT + ctypes.sizeof(ctypes.c_void_p)
_BWD_WS = struct.Struct("@Pq")


def _fwd_struct(q, k, v, out, causal, softmax_scale):
    """A new FwdParams of this signature, its pointers 0 (_launch_fwd writes them)."""
    return _abi.fwd_params({}, tuple(q.shape), tuple(k.shape),
                           {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out)},
                           (_DTYPES[q.dtype], _DTYPES[k.dtype], _DTYPES[v.dtype], _DTYPES[out.dtype]),
                           causal, softmax_scale, head_dim_v=v.shape[3])


def _bwd_struct(dout, q, k, v, out, dq, dk, dv, causal, softmax_scale, deterministic):
    """A new BwdParams of this signature, its pointers and workspace 0 (_launch_bwd writes them)."""
    return _abi.bwd_params({}, tuple(q.shape), tuple(k.shape),
                           {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out),
                            "do": _strides(dout), "dq": _strides(dq), "dk": _strides(dk), "dv": _strides(dv)},
                           _DTYPES[q.dtype], causal, softmax_scale, deterministic, head_dim_v=v.shape[3])


# ---- the C calls ------------------------------------------------------------------------------------
# The dynamic schedule's counters, one per (device, stream): include/flashptx.h (tile_counter) says
# every call leaves its counter zero again, so calls queued one after another on one stream can
# share one (each starts after the previous one's reset, in stream order). Calls on other streams
# get their own; a call being captured into a CUDA graph gets a fresh zeroed one (a graph replays
# its calls alongside anything else, so it must not share one with eager calls).
_counters = {}
_is_capturing = _torch_c("_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing


def _tile_counter(device):
    if device.type != "cuda" or _is_capturing():
        return torch.zeros(2, dtype=torch.int32, device=device)
    index = device.index if device.index is not None else _current_device()
    key = (index, _current_stream(index))
    ctr = _counters.get(key)
    if ctr is None:
        if len(_counters) >= _CACHE_MAX:
            _counters.clear()
        ctr = _counters[key] = torch.zeros(2, dtype=torch.int32, device=device)
    return ctr


def _launch_fwd(q, k, v, out, lse, causal, softmax_scale):
    lib = _abi._lib or _abi.library()
    qp = q.data_ptr()
    # With seqlen_k 0, k and v are never read but must not be NULL: any valid device pointer will do.
    kp = k.data_ptr() or qp
    vp = v.data_ptr() or qp
    qs = q.shape
    # Everything the struct holds but the pointers (the sign of the scale too: -0.0 == 0.0).
    key = (qs, k.shape, v.shape[3], q.stride(), k.stride(), v.stride(), out.stride(), q.dtype, k.dtype, v.dtype, out.dtype,
           bool(causal), softmax_scale, math.copysign(1.0, softmax_scale))
    cache = _structs.fwd
    entry = cache.get(key)
    fresh = entry is None
    if fresh:
        p = _fwd_struct(q, k, v, out, causal, softmax_scale)
        entry = (p, ctypes.byref(p))
    p, pref = entry
    # The dynamic schedule's counter (include/flashptx.h, tile_counter), where the plan can use it
    # (causal d64): this stream's (_tile_counter).
    ctr = _tile_counter(q.device) if causal and qs[3] == 64 else None
    _FWD_PTRS.pack_into(p, _FWD_PTRS_AT, qp, kp, vp, out.data_ptr(), lse.data_ptr())
    _FWD_CTR.pack_into(p, _FWD_CTR_AT, ctr.data_ptr() if ctr is not None else 0)
    _call(lib, "flashptx_fwd", lib.flashptx_fwd, pref, q.get_device())
    if fresh:  # kept once the library took it (a rejected signature is built again, and fails again)
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = entry


def _launch_bwd(dout, q, k, v, out, lse, dq, dk, dv, causal, softmax_scale, deterministic):
    lib = _abi._lib or _abi.library()
    key = (q.shape, k.shape, v.shape[3], q.stride(), k.stride(), v.stride(), out.stride(), dout.stride(), dq.stride(),
           dk.stride(), dv.stride(), q.dtype, bool(causal), softmax_scale, math.copysign(1.0, softmax_scale),
           bool(deterministic))
    cache = _structs.bwd
    entry = cache.get(key)
    fresh = entry is None
    ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(), dout.data_ptr(),
            dq.data_ptr(), dk.data_ptr(), dv.data_ptr())
    if fresh:
        p = _bwd_struct(dout, q, k, v, out, dq, dk, dv, causal, softmax_scale, deterministic)
        _BWD_PTRS.pack_into(p, _BWD_PTRS_AT, *ptrs)
        # The workspace of these sizes, dtype and head dim (include/flashptx.h: pointers, strides
        # and the workspace fields are not read; the same on every device and whatever the options).
        need = ctypes.c_int64(0)
        _abi.check(lib, "flashptx_bwd_workspace_size", lib.flashptx_bwd_workspace_size(ctypes.byref(p),
                                                                                        ctypes.byref(need)))
        entry = (p, ctypes.byref(p), need.value)
    p, pref, need = entry
    _BWD_PTRS.pack_into(p, _BWD_PTRS_AT, *ptrs)
    ws = None
    if need > 0:
        # From torch's caching allocator on the current stream (blocks are 512-byte aligned); it
        # goes back to the pool after the call, reusable only by work queued after it.
        ws = torch.empty(need, dtype=torch.uint8, device=q.device)
        _BWD_WS.pack_into(p, _BWD_WS_AT, ws.data_ptr(), need)
    else:
        _BWD_WS.pack_into(p, _BWD_WS_AT, 0, 0)
    _call(lib, "flashptx_bwd", lib.flashptx_bwd, pref, q.get_device())
    del ws
    if fresh:
        if len(cache) >= _CACHE_MAX:
            cache.clear()
        cache[key] = entry


def _fwd_impl(q, k, v, causal, softmax_scale):
    """The forward on checked inputs (the op's body, and the eager path's)."""
    q, k, v = _aligned_eager(q), _aligned_eager(k), _aligned_eager(v)
    b, sq, hq, _ = q.shape
    out = q.new_empty((b, sq, hq, v.shape[3]))  # V's head dim (head_dim_v)
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    _launch_fwd(q, k, v, out, lse, causal, softmax_scale)
    return q, k, v, out, lse


def _bwd_impl(dout, q, k, v, out, lse, causal, softmax_scale, deterministic, saved=False):
    """The backward on checked inputs (the op's body, and the eager path's). saved: q, k, v, out and
    lse are the ones _Attention's forward ran on and made (aligned, lse contiguous): only dout is
    looked at."""
    if dout.dtype != q.dtype:
        dout = dout.to(q.dtype)
    if saved:
        dout = _aligned_eager(dout)
    else:
        dout, q, k, v, out = (_aligned_eager(t) for t in (dout, q, k, v, out))
        lse = lse.contiguous()
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    _launch_bwd(dout, q, k, v, out, lse, dq, dk, dv, causal, softmax_scale, deterministic)
    return dq, dk, dv


# ---- the ops ----------------------------------------------------------------------------------------
@torch.library.custom_op("flashptx::fwd", mutates_args=())
def _fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
         deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::fwd", q, k, v, v_dim=True)
    out, lse = _fwd_impl(q, k, v, causal, softmax_scale)[3:]
    return out, lse


@_fwd.register_fake
def _fwd_fake(q, k, v, causal, softmax_scale, deterministic):
    b, sq, hq, _ = q.shape
    return q.new_empty((b, sq, hq, v.shape[3])), q.new_empty((b, hq, sq), dtype=torch.float32)


@torch.library.custom_op("flashptx::bwd", mutates_args=())
def _bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
         lse: torch.Tensor, causal: bool, softmax_scale: float,
         deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    where = "flashptx::bwd"
    _check_inputs(where, q, k, v, v_dim=True)
    o_shape = tuple(q.shape[:3]) + (v.shape[3],)  # O and dO have v's head dim (the (192, 128) split)
    for name, t in (("dout", dout), ("out", out)):
        if tuple(t.shape) != o_shape or t.device != q.device:
            raise ValueError("%s: %s must have shape %s (q's, with v's head dim) and q's device, got %s on %s"
                             % (where, name, o_shape, tuple(t.shape), t.device))
    if q.dtype != k.dtype or q.dtype != v.dtype or out.dtype != q.dtype:
        raise ValueError("%s: q, k, v and out must share one dtype, got %s, %s, %s, %s"
                         % (where, q.dtype, k.dtype, v.dtype, out.dtype))
    b, sq, hq, _ = q.shape
    if tuple(lse.shape) != (b, hq, sq) or lse.dtype != torch.float32 or lse.device != q.device:
        raise ValueError("%s: lse must be float32 [batch, heads_q, seqlen_q] = %s on q's device, got %s %s"
                         % (where, (b, hq, sq), lse.dtype, tuple(lse.shape)))
    return _bwd_impl(dout, q, k, v, out, lse, causal, softmax_scale, deterministic)


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
    _check_backward_dims("flashptx::fwd backward", q, v)
    if dout is None:  # only lse was used downstream, and lse carries no gradient
        dout = torch.zeros_like(out)
    dq, dk, dv = torch.ops.flashptx.bwd(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale,
                                        ctx.deterministic)
    return dq, dk, dv, None, None, None


_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---- the score modifiers: the sliding window and the softcap (the library's local kernels) ---------------
# Their own ops: flashptx::fwd_local (the forward's local kernels) and flashptx::bwd_local (the
# backward's, src/sm90/fa3_bwd_local.cu: the C ABI's flashptx_bwd with the window and the softcap);
# `deterministic` is carried by fwd_local for its backward only (as fwd's). Uncached params (the
# struct is built per call).
def _launch_fwd_local(q, k, v, out, lse, causal, softmax_scale, window, softcap):
    lib = _abi._lib or _abi.library()
    qp = q.data_ptr()
    p = _abi.fwd_params({"q": qp, "k": k.data_ptr() or qp, "v": v.data_ptr() or qp, "o": out.data_ptr(),
                         "lse": lse.data_ptr()}, tuple(q.shape), tuple(k.shape),
                        {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out)},
                        (_DTYPES[q.dtype], _DTYPES[k.dtype], _DTYPES[v.dtype], _DTYPES[out.dtype]),
                        causal, softmax_scale, window, softcap, head_dim_v=v.shape[3])
    _call(lib, "flashptx_fwd", lib.flashptx_fwd, ctypes.byref(p), q.get_device())


@torch.library.custom_op("flashptx::fwd_local", mutates_args=())
def _fwd_local(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, softmax_scale: float,
               window_left: int, window_right: int, softcap: float,
               deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::fwd_local", q, k, v, v_dim=True)
    q, k, v = _aligned_eager(q), _aligned_eager(k), _aligned_eager(v)
    b, sq, hq, _ = q.shape
    out = q.new_empty((b, sq, hq, v.shape[3]))  # O has v's head dim (the (192, 128) split)
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    window = None if (window_left, window_right) == (-1, -1) else (window_left, window_right)
    _launch_fwd_local(q, k, v, out, lse, causal, softmax_scale, window, softcap)
    return out, lse


@_fwd_local.register_fake
def _fwd_local_fake(q, k, v, causal, softmax_scale, window_left, window_right, softcap, deterministic):
    b, sq, hq, _ = q.shape
    return q.new_empty((b, sq, hq, v.shape[3])), q.new_empty((b, hq, sq), dtype=torch.float32)


@torch.library.custom_op("flashptx::bwd_local", mutates_args=())
def _bwd_local(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
               lse: torch.Tensor, causal: bool, softmax_scale: float, window_left: int, window_right: int,
               softcap: float, deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::bwd_local", q, k, v, v_dim=True)
    if dout.dtype != q.dtype:
        dout = dout.to(q.dtype)
    dout, q, k, v, out = (_aligned_eager(t) for t in (dout, q, k, v, out))
    lse = lse.contiguous()
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    window = None if (window_left, window_right) == (-1, -1) else (window_left, window_right)
    _launch_bwd_modified(dout, q, k, v, out, lse, None, dq, dk, dv, None, causal, softmax_scale, deterministic,
                         window, softcap)
    return dq, dk, dv


@_bwd_local.register_fake
def _bwd_local_fake(dout, q, k, v, out, lse, causal, softmax_scale, window_left, window_right, softcap,
                    deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _local_setup_context(ctx, inputs, output):
    q, k, v, causal, softmax_scale, wl, wr, softcap, deterministic = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.causal, ctx.softmax_scale, ctx.deterministic = causal, softmax_scale, deterministic
    ctx.window, ctx.softcap = (wl, wr), softcap
    ctx.mark_non_differentiable(lse)


def _local_backward(ctx, dout, dlse):
    q, k, v, out, lse = ctx.saved_tensors
    _check_backward_dims("flashptx.attention backward", q, v)
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv = torch.ops.flashptx.bwd_local(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale, ctx.window[0],
                                              ctx.window[1], ctx.softcap, ctx.deterministic)
    return dq, dk, dv, None, None, None, None, None, None


_fwd_local.register_autograd(_local_backward, setup_context=_local_setup_context)


# ---- the attention sinks (gpt-oss): their own ops, the sinks' gradient from the backward ---------------
# flashptx::fwd_sink runs the library's sink kernels (with or without a window and a softcap);
# flashptx::bwd_sink the backward with the sinks, which also writes dL/dsinks (include/flashptx.h,
# flashptx_bwd_params::dsinks), with the forward's window and softcap; `deterministic` is carried by
# fwd_sink for its backward only (as fwd's). Uncached params (the struct is built per call).
def _sink_ptrs(q, k, v):
    qp = q.data_ptr()
    return qp, k.data_ptr() or qp, v.data_ptr() or qp


@torch.library.custom_op("flashptx::fwd_sink", mutates_args=())
def _fwd_sink(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sinks: torch.Tensor, causal: bool,
              softmax_scale: float, window_left: int, window_right: int, softcap: float,
              deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::fwd_sink", q, k, v, v_dim=True)
    _check_sinks("flashptx::fwd_sink", sinks, q)
    q, k, v = _aligned_eager(q), _aligned_eager(k), _aligned_eager(v)
    sinks = sinks.contiguous()
    b, sq, hq, _ = q.shape
    out = q.new_empty((b, sq, hq, v.shape[3]))  # O has v's head dim (the (192, 128) split)
    lse = q.new_empty((b, hq, sq), dtype=torch.float32)
    window = None if (window_left, window_right) == (-1, -1) else (window_left, window_right)
    _launch_fwd_sink(q, k, v, sinks, out, lse, causal, softmax_scale, window, softcap)
    return out, lse


def _launch_fwd_sink(q, k, v, sinks, out, lse, causal, softmax_scale, window, softcap):
    """The C call of fwd_sink (a function of its own, as _launch_fwd, so that a CPU test can swap it)."""
    qp, kp, vp = _sink_ptrs(q, k, v)
    lib = _abi._lib or _abi.library()
    p = _abi.fwd_params({"q": qp, "k": kp, "v": vp, "o": out.data_ptr(), "lse": lse.data_ptr(),
                         "sinks": sinks.data_ptr()}, tuple(q.shape), tuple(k.shape),
                        {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out)},
                        (_DTYPES[q.dtype], _DTYPES[k.dtype], _DTYPES[v.dtype], _DTYPES[out.dtype]),
                        causal, softmax_scale, window, softcap, head_dim_v=v.shape[3])
    _call(lib, "flashptx_fwd", lib.flashptx_fwd, ctypes.byref(p), q.get_device())


@_fwd_sink.register_fake
def _fwd_sink_fake(q, k, v, sinks, causal, softmax_scale, window_left, window_right, softcap, deterministic):
    b, sq, hq, _ = q.shape
    return q.new_empty((b, sq, hq, v.shape[3])), q.new_empty((b, hq, sq), dtype=torch.float32)


@torch.library.custom_op("flashptx::bwd_sink", mutates_args=())
def _bwd_sink(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
              lse: torch.Tensor, sinks: torch.Tensor, causal: bool, softmax_scale: float, window_left: int,
              window_right: int, softcap: float,
              deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_inputs("flashptx::bwd_sink", q, k, v, v_dim=True)
    _check_sinks("flashptx::bwd_sink", sinks, q)
    if dout.dtype != q.dtype:
        dout = dout.to(q.dtype)
    dout, q, k, v, out = (_aligned_eager(t) for t in (dout, q, k, v, out))
    lse, sinks = lse.contiguous(), sinks.contiguous()
    dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
    # Zeros, not empty: a call with batch 0 launches nothing (include/flashptx.h), and its gradient is 0.
    dsinks = torch.zeros_like(sinks)
    window = None if (window_left, window_right) == (-1, -1) else (window_left, window_right)
    _launch_bwd_modified(dout, q, k, v, out, lse, sinks, dq, dk, dv, dsinks, causal, softmax_scale, deterministic,
                         window, softcap)
    return dq, dk, dv, dsinks


def _launch_bwd_modified(dout, q, k, v, out, lse, sinks, dq, dk, dv, dsinks, causal, softmax_scale, deterministic,
                         window=None, softcap=0.0):
    """The C call of bwd_sink and bwd_local (sinks, dsinks None: none; its own function, as _launch_bwd),
    the workspace from torch's allocator."""
    lib = _abi._lib or _abi.library()
    qp, kp, vp = _sink_ptrs(q, k, v)
    ptrs = {"q": qp, "k": kp, "v": vp, "o": out.data_ptr(), "lse": lse.data_ptr(), "dout": dout.data_ptr(),
            "dq": dq.data_ptr(), "dk": dk.data_ptr(), "dv": dv.data_ptr()}
    if sinks is not None:
        ptrs.update(sinks=sinks.data_ptr(), dsinks=dsinks.data_ptr())
    p = _abi.bwd_params(ptrs, tuple(q.shape), tuple(k.shape),
                        {"q": _strides(q), "k": _strides(k), "v": _strides(v), "o": _strides(out),
                         "do": _strides(dout), "dq": _strides(dq), "dk": _strides(dk), "dv": _strides(dv)},
                        _DTYPES[q.dtype], causal, softmax_scale, deterministic, window, softcap,
                        head_dim_v=v.shape[3])
    need = ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_workspace_size", lib.flashptx_bwd_workspace_size(ctypes.byref(p), ctypes.byref(need)))
    ws = torch.empty(max(need.value, 1), dtype=torch.uint8, device=q.device)
    p.workspace, p.workspace_bytes = ws.data_ptr(), need.value
    _call(lib, "flashptx_bwd", lib.flashptx_bwd, ctypes.byref(p), q.get_device())


@_bwd_sink.register_fake
def _bwd_sink_fake(dout, q, k, v, out, lse, sinks, causal, softmax_scale, window_left, window_right, softcap,
                   deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape), sinks.new_empty(sinks.shape)


def _check_sinks(where, sinks, q):
    if not isinstance(sinks, torch.Tensor):
        raise TypeError("%s: sinks must be a torch.Tensor, got %s" % (where, type(sinks).__name__))
    _abi.check_sinks(where, tuple(sinks.shape), str(sinks.dtype).replace("torch.", ""), q.shape[2])
    if sinks.device != q.device:
        raise ValueError("%s: sinks must be on q's device %s, got %s" % (where, q.device, sinks.device))


def _sink_setup_context(ctx, inputs, output):
    q, k, v, sinks, causal, softmax_scale, wl, wr, softcap, deterministic = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, sinks, out, lse)
    ctx.causal, ctx.softmax_scale, ctx.deterministic = causal, softmax_scale, deterministic
    ctx.window, ctx.softcap = (wl, wr), softcap
    ctx.mark_non_differentiable(lse)


def _sink_backward(ctx, dout, dlse):
    q, k, v, sinks, out, lse = ctx.saved_tensors
    _check_backward_dims("flashptx.attention backward", q, v)
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv, dsinks = torch.ops.flashptx.bwd_sink(dout, q, k, v, out, lse, sinks, ctx.causal, ctx.softmax_scale,
                                                     ctx.window[0], ctx.window[1], ctx.softcap, ctx.deterministic)
    return dq, dk, dv, dsinks, None, None, None, None, None, None


_fwd_sink.register_autograd(_sink_backward, setup_context=_sink_setup_context)


# ---- the eager path: the same launchers without the dispatcher -------------------------------------------
class _Attention(torch.autograd.Function):
    """flashptx::fwd and its autograd formula as a plain autograd.Function, for _eager_ok inputs.
    It saves the aligned tensors the forward ran on, so that the backward copies nothing again."""

    @staticmethod
    def forward(ctx, q, k, v, causal, softmax_scale, deterministic):
        q, k, v, out, lse = _fwd_impl(q, k, v, causal, softmax_scale)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.causal, ctx.softmax_scale, ctx.deterministic = causal, softmax_scale, deterministic
        ctx.mark_non_differentiable(lse)
        # No zero tensors for the gradients autograd would otherwise make up: lse's (never used) and
        # out's when only lse went on (backward makes that one itself).
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        _check_backward_dims("flashptx.attention backward", q, v)
        if dout is None:  # only lse was used downstream, and lse carries no gradient
            dout = torch.zeros_like(out)
        if torch.is_grad_enabled() or _is_compiling() or not _eager_ok(dout):
            # create_graph=True (the op says there is no double backward), or a mode or a subclass
            # in the backward: the op, as flashptx::fwd's own formula calls it
            dq, dk, dv = torch.ops.flashptx.bwd(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale,
                                                ctx.deterministic)
        elif _profiling():
            with torch.autograd.profiler.record_function("flashptx::bwd"):
                dq, dk, dv = _bwd_impl(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale, ctx.deterministic,
                                       saved=True)
        else:
            dq, dk, dv = _bwd_impl(dout, q, k, v, out, lse, ctx.causal, ctx.softmax_scale, ctx.deterministic,
                                   saved=True)
        return dq, dk, dv, None, None, None


def _attention_eager(q, k, v, causal, scale, deterministic):
    """(out, lse) as torch.ops.flashptx.fwd(q, k, v, causal, scale, deterministic) gives them, on
    _eager_ok inputs already checked."""
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return _Attention.apply(q, k, v, causal, scale, deterministic)
    return _fwd_impl(q, k, v, causal, scale)[3:]


# ---- the public function ------------------------------------------------------------------------------
def attention(q, k, v, *, softmax_scale=None, causal=False, deterministic=False, return_lse=False,
              window_size=(-1, -1), softcap=0.0, sinks=None):
    """Scaled dot-product attention by flashptx's kernels (FA3 on sm_90; FA4 on sm_100 after
    flashptx.allow_unverified_sm100()), with autograd.

    The options are keyword-only and named as FlashAttention-3's flash_attn_func names them, so
    that code ported from it says what it means: FA3's positional flash_attn_func(q, k, v, 0.088,
    True) raises TypeError here; write attention(q, k, v, softmax_scale=0.088, causal=True).

    q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim]
    (FlashAttention's layout, not SDPA's [batch, heads, seqlen, head_dim]). CUDA tensors, all
    torch.bfloat16 or all torch.float16 (under torch.autocast, fp32 inputs are first cast to the
    autocast dtype, as SDPA does). heads_q a multiple of heads_kv: GQA, MQA (heads_kv 1).
    head_dim 64, 128 or 256 (sm_100: 64 and 128), forward and backward; on sm_90 also head_dim 96
    and 192, forward and backward (with the window, softcap and sinks as the other head dims), and
    v of head_dim 128 beside q and k of 192 (DeepSeek's split; the output then has v's head dim),
    forward and backward, with the window, softcap and sinks too.

    Strides: any the C ABI accepts are used as they are, without a copy: last dim contiguous and
    the batch, row and head strides multiples of 16 bytes in any order (e.g. q, k, v unbound from
    one packed [batch, seqlen, 3, heads, head_dim] tensor, or [batch, heads, seqlen, head_dim]
    tensors passed as .transpose(1, 2)). Anything else (a non-contiguous last dim, a broadcast
    stride 0, an unaligned offset) is first copied to a contiguous tensor. The output is contiguous.

    causal: mask aligned to the bottom-right corner when seqlen_q != seqlen_k (as FlashAttention;
    SDPA's is_causal is top-left aligned). softmax_scale: a Python float, default 1/sqrt(head_dim).
    window_size=(left, right): FlashAttention's sliding window, bottom-right aligned: query i sees key
    j iff i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right, -1 unbounded on that
    side ((-1, -1): none; with causal, right is 0). softcap > 0: scores become softcap *
    tanh(score / softcap) (after the scale, before the mask; FA3's convention). Both forward and
    backward on sm_90 (head dims 64, 128, 256; not on sm_100). A bound below -1, a softcap below 0,
    NaN or infinite: ValueError.
    sinks: learnable attention sinks (gpt-oss), a float32 CUDA tensor [heads_q] (None: none): head h's
    sink logit joins every row's softmax denominator and adds no value (LSE = log(sum_j exp(score_j)
    + exp(sinks[h])); a row that sees no key gets O = 0). With autograd, sinks receive their gradient
    (sinks.requires_grad), also with a window and a softcap. sm_90 only. Another shape or dtype:
    ValueError.
    deterministic: the backward's gradients are bitwise reproducible (a fixed accumulation order;
    slower). return_lse: also return the log-sum-exp, float32 [batch, heads_q, seqlen_q], natural log
    (no gradient flows through it).

    Runs on the current CUDA stream of q's device. Registered as torch.ops.flashptx.fwd / .bwd
    custom ops, so torch.compile(fullgraph=True) traces it without a graph break. A status of the
    library becomes flashptx.FlashptxValueError (a ValueError: input rejected) or
    flashptx.FlashptxRuntimeError (a RuntimeError: no usable GPU, a CUDA error), with the
    library's message.
    """
    if type(window_size) is tuple and window_size == (-1, -1) and type(softcap) is float and softcap == 0.0:
        # the defaults: nothing to check
        window, cap = None, 0.0
    else:
        window, cap = _abi.check_modifiers("flashptx.attention", window_size, softcap)
    eager = not _is_compiling() and _eager_ok(q, k, v)
    if eager:
        _check_inputs_eager("flashptx.attention", q, k, v)
    else:
        _check_inputs("flashptx.attention", q, k, v, v_dim=True)
    device_type = "cuda" if q.is_cuda else q.device.type
    if torch.is_autocast_enabled(device_type):
        # Under autocast, as SDPA: fp32 inputs run in the autocast dtype (bf16 or fp16).
        dt = torch.get_autocast_dtype(device_type)
        q, k, v = (t.to(dt) if t.dtype == torch.float32 else t for t in (q, k, v))
    if softmax_scale is None:
        scale = 0.0  # the library's 1/sqrt(head_dim)
    else:
        scale = float(softmax_scale)
        if scale == 0.0:
            raise ValueError("flashptx.attention: softmax_scale 0 (pass None for 1/sqrt(head_dim))")
    if sinks is not None:
        _check_sinks("flashptx.attention", sinks, q)
        wl, wr = window if window is not None else (-1, -1)
        out, lse = torch.ops.flashptx.fwd_sink(_prep(q), _prep(k), _prep(v), sinks, bool(causal), scale, wl, wr, cap,
                                               bool(deterministic))
    elif window is not None or cap != 0.0:
        wl, wr = window if window is not None else (-1, -1)
        out, lse = torch.ops.flashptx.fwd_local(_prep(q), _prep(k), _prep(v), bool(causal), scale, wl, wr, cap,
                                                bool(deterministic))
    elif not eager:
        out, lse = torch.ops.flashptx.fwd(_prep(q), _prep(k), _prep(v), bool(causal), scale, bool(deterministic))
    elif _profiling():  # the profiler shows the call under the op's name, as when it runs the op
        with torch.autograd.profiler.record_function("flashptx::fwd"):
            out, lse = _attention_eager(q, k, v, bool(causal), scale, bool(deterministic))
    else:
        out, lse = _attention_eager(q, k, v, bool(causal), scale, bool(deterministic))
    return (out, lse) if return_lse else out


# ---- inference: attention over a KV cache ---------------------------------------------------------------
# A plain function, not a custom op: it writes the cache in place (the append) and has no backward
# (FlashAttention's flash_attn_with_kvcache has none either). Nothing it does reads device memory on
# the host, so a call can be captured in a CUDA graph (torch.cuda.graph): the lengths, the page
# table and the batch index are read by the kernels, and the workspace comes from the caching
# allocator (the graph's private pool under capture).
_WORD_DTYPES = tuple(t for t in (torch.int32, getattr(torch, "uint32", None)) if t is not None)


def _spec(t):
    """The _abi.TensorSpec of a tensor (anything else as it is: check_kvcache names its type)."""
    if isinstance(t, torch.Tensor):
        return _abi.TensorSpec(t.shape, t.stride(), str(t.dtype).replace("torch.", ""), str(t.device))
    return t


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, *, rotary_cos=None, rotary_sin=None,
                           cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, page_table=None,
                           block_table=None, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           rotary_interleaved=True, num_splits=0, return_softmax_lse=False, error_word=None):
    """Attention of a few new query rows per sequence against a KV cache (decode, chunked prefill),
    FlashAttention-3's flash_attn_with_kvcache with its argument names (the C ABI's
    flashptx_fwd_kvcache; include/flashptx.h documents every rule). sm_90, bf16, head_dim 64, 128
    or 256 (the library says so otherwise: ValueError). No backward.

    q: [batch, seqlen_q, heads_q, head_dim]. The cache, written in place where k/v are given:
      contiguous: k_cache, v_cache [batch_cache, seqlen_cache, heads_kv, head_dim]; sequence b uses
        cache row cache_batch_idx[b] (int32 [batch]), or row b without it;
      paged: page_table (FA2's name block_table also taken) int32 [batch, max_pages], k_cache,
        v_cache [num_pages, page_size, heads_kv, head_dim]; key j of sequence b is row j % page_size
        of page page_table[b, j // page_size]. page_size a multiple of 64, or 8, 16, 32.
      The cache is never copied: its strides must be the library's (last dim contiguous, the others
      multiples of 16 bytes), else ValueError.
    cache_seqlens: the keys each sequence holds, an int (every sequence) or an int32 tensor [batch]
      on q's device (read by the kernel only: a captured CUDA graph replays with new lengths); None:
      the full cache. k, v: optional new keys/values [batch, seqlen_new, heads_kv, head_dim], written
      into the cache at cache_seqlens[b] + j before attending (cache_seqlens is not advanced: the
      caller does that). rotary_cos/sin [seqlen_ro, rotary_dim / 2] (used as float32; needs k):
      rotary embedding of q and the new keys, interleaved pairs (2i, 2i+1) with rotary_interleaved
      (the default, as FA), else halves (i, i + rotary_dim / 2); new key j at position
      cache_seqlens[b] + j, query row i at cache_seqlens[b] + i when causal, cache_seqlens[b]
      otherwise. rotary_dim a multiple of 16.
    causal: bottom-right within each sequence (query row i sees key j iff j <= i + L - seqlen_q, L
      the sequence's length after the append; a row that sees no key gets 0, LSE -inf).
    softmax_scale: default 1/sqrt(head_dim). num_splits: 0 the library's split-KV choice, 1 none,
      up to 128. window_size and softcap: only their defaults (no KV-cache kernel has them yet;
      ValueError otherwise). cache_leftpad: int32 [batch] on q's device (read by the kernel only), FA's
      left padding: sequence b attends to cache positions [cache_leftpad[b], cache_seqlens[b] +
      seqlen_new); the append, the rotary positions and the causal diagonal stay cache positions.
    error_word (flashptx's, not FA's): an optional int32 CUDA tensor of one element, into which the
      kernels OR flashptx.KVCACHE_ERR_* bits when device data is out of range (a length beyond the
      cache, a page index outside it, a left padding past the length, ...); the output is then not meaningful for those sequences.
    Returns out [batch, seqlen_q, heads_q, head_dim] (q's dtype), and with return_softmax_lse the
    LSE, float32 [batch, heads_q, seqlen_q]. Runs on the current CUDA stream of q's device.
    """
    where = "flashptx.attention_with_kvcache"
    if block_table is not None:
        if page_table is not None:
            raise ValueError("%s: page_table and block_table (its FA2 name) are one argument; pass one" % where)
        page_table = block_table
    a = _abi.check_kvcache(where, _spec(q), _spec(k_cache), _spec(v_cache), _spec(k), _spec(v), _spec(rotary_cos),
                           _spec(rotary_sin), _spec(cache_seqlens), _spec(cache_batch_idx), _spec(cache_leftpad),
                           _spec(page_table), softmax_scale, causal, window_size, softcap, rotary_interleaved,
                           num_splits)
    if q.device.type not in _DEVICE_TYPES:
        raise _device_error(where, "q", q)
    if error_word is not None:
        if (not isinstance(error_word, torch.Tensor) or error_word.dtype not in _WORD_DTYPES
                or error_word.numel() != 1 or error_word.device != q.device):
            raise ValueError("%s: error_word must be an int32 tensor of one element on q's device" % where)
    batch, sq, hq, d = q.shape
    q = _aligned_eager(q)
    ptrs = {"q": q.data_ptr(), "k_cache": k_cache.data_ptr(), "v_cache": v_cache.data_ptr()}
    strides = {"q": _strides(q), "k": _strides(k_cache), "v": _strides(v_cache)}
    keep = []  # tensors made here that the call reads: alive until it is queued
    if k is not None:
        k, v = _aligned_eager(k), _aligned_eager(v)
        # seqlen_new 0: nothing is appended, but a pointer marks "new keys given" (rotary rotates q)
        ptrs["k_new"], ptrs["v_new"] = k.data_ptr() or q.data_ptr(), v.data_ptr() or q.data_ptr()
        strides["k_new"], strides["v_new"] = _strides(k), _strides(v)
        keep += [k, v]
    if rotary_cos is not None:
        cos = rotary_cos.to(torch.float32).contiguous()
        sin = rotary_sin.to(torch.float32).contiguous()
        ptrs["rotary_cos"], ptrs["rotary_sin"] = cos.data_ptr(), sin.data_ptr()
        keep += [cos, sin]
    if a["seqlens"] is not None:
        lens = torch.full((batch,), a["seqlens"], dtype=torch.int32, device=q.device)
    else:
        lens = cache_seqlens.contiguous()
    ptrs["cache_seqlens"] = lens.data_ptr()
    keep.append(lens)
    if cache_batch_idx is not None:
        idx = cache_batch_idx.contiguous()
        ptrs["cache_batch_idx"] = idx.data_ptr()
        keep.append(idx)
    if cache_leftpad is not None:
        pad = cache_leftpad.contiguous()
        ptrs["cache_leftpad"] = pad.data_ptr()
        keep.append(pad)
    if page_table is not None:
        ptrs["page_table"] = page_table.data_ptr()
    if error_word is not None:
        ptrs["error_word"] = error_word.data_ptr()
    out = q.new_empty((batch, sq, hq, d))
    ptrs["o"] = out.data_ptr()
    strides["o"] = _strides(out)
    lse = None
    if return_softmax_lse:
        lse = q.new_empty((batch, hq, sq), dtype=torch.float32)
        ptrs["lse"] = lse.data_ptr()
    p = _abi.kvcache_params(ptrs, a, strides, _DTYPES.get(q.dtype, -1), causal, num_splits, rotary_interleaved)
    _launch_kvcache(p, q.get_device())
    del keep
    return (out, lse) if return_softmax_lse else out


def _launch_kvcache(p, index):
    """The workspace query (its split count is the plan's on device `index` when num_splits is 0),
    the workspace from torch's caching allocator, and the call on the current stream of `index`."""
    lib = _abi._lib or _abi.library()
    with torch.cuda.device(index):
        need = ctypes.c_int64(0)
        _abi.check(lib, "flashptx_fwd_kvcache_workspace_size",
                   lib.flashptx_fwd_kvcache_workspace_size(ctypes.byref(p), ctypes.byref(need)))
        ws = None
        if need.value > 0:
            # 512-byte aligned blocks (the library needs 256); back to the pool after the call,
            # reusable only by work queued after it (and under capture: the graph's own pool).
            ws = torch.empty(need.value, dtype=torch.uint8, device=torch.device("cuda", index))
            p.workspace, p.workspace_bytes = ws.data_ptr(), need.value
        _call(lib, "flashptx_fwd_kvcache", lib.flashptx_fwd_kvcache, ctypes.byref(p), index)
        del ws


# ---- variable-length batches: packed sequences with cu_seqlens (flashptx_fwd_varlen / _bwd_varlen) ----
# Two ops, as fwd and bwd: flashptx::fwd_varlen (its autograd formula calls flashptx::bwd_varlen) and
# an eager autograd.Function over the same bodies (_AttentionVarlen). The C ABI reads the prefix sums
# and the used lengths on the HOST (include/flashptx.h: it validates every entry before anything
# launches): each call copies cu_seqlens_q/_k (and seqused_q/_k) to the host, a synchronisation with
# the device when they live there; the backward copies them again. Rows past seqused_q get out = 0
# and lse = -inf, and the gradients of the rows and keys past the used lengths are 0 (the library
# leaves them untouched: they are allocated zeroed here).
def _host_int32(where, name, t):
    """The host copy of an int32 index tensor (a device tensor: a synchronising copy) and its values."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s: %s must be an int32 torch.Tensor, got %s" % (where, name, type(t).__name__))
    if t.dtype != torch.int32 or t.dim() != 1:
        raise ValueError("%s: %s must be a 1-D int32 tensor, got %s %s" % (where, name, t.dtype, tuple(t.shape)))
    h = t.to("cpu").contiguous()
    return h, h.tolist()


def _aligned_packed(t):
    """A [total, heads, head_dim] tensor as the C ABI takes it without a copy (head_dim contiguous,
    row and head strides positive multiples of 16 bytes, a 16-byte-aligned address), else a
    contiguous copy."""
    z, st, es = t.shape, t.stride(), t.element_size()
    ok = not (z[2] > 1 and st[2] != 1) and t.data_ptr() % 16 == 0
    for i in (0, 1):
        if ok and z[i] > 1 and (st[i] <= 0 or (st[i] * es) % 16 != 0):
            ok = False
    return t if ok else t.clone(memory_format=torch.contiguous_format)


def _varlen_args(where, q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, scale, causal, wl, wr, softcap):
    """The host copies (kept alive by the caller for the call) and _abi.check_varlen's dict."""
    hq, lq = _host_int32(where, "cu_seqlens_q", cu_q)
    hk, lk = _host_int32(where, "cu_seqlens_k", cu_k)
    hu = [None, None]
    uv = [None, None]
    for i, (name, t) in enumerate((("seqused_q", used_q), ("seqused_k", used_k))):
        if t is not None:
            hu[i], uv[i] = _host_int32(where, name, t)
    a = _abi.check_varlen(where, _spec(q), _spec(k), _spec(v), lq, lk, max_q, max_k, uv[0], uv[1],
                          scale if scale != 0.0 else None, causal, (wl, wr), softcap)
    ptrs = {"cu_seqlens_q": hq.data_ptr(), "cu_seqlens_k": hk.data_ptr()}
    if hu[0] is not None:
        ptrs["seqused_q"] = hu[0].data_ptr()
    if hu[1] is not None:
        ptrs["seqused_k"] = hu[1].data_ptr()
    return (hq, hk, hu[0], hu[1]), ptrs, a


def _launch_fwd_varlen(p, index):
    """The C call of fwd_varlen (its own function, as _launch_fwd, so that a CPU test can swap it)."""
    lib = _abi._lib or _abi.library()
    _call(lib, "flashptx_fwd_varlen", lib.flashptx_fwd_varlen, ctypes.byref(p), index)


def _launch_bwd_varlen(p, device):
    """The workspace from torch's caching allocator (on the current stream: back to the pool after
    the call, reusable only by work queued after it), then the C call."""
    lib = _abi._lib or _abi.library()
    need = ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_varlen_workspace_size",
               lib.flashptx_bwd_varlen_workspace_size(ctypes.byref(p), ctypes.byref(need)))
    ws = torch.empty(max(need.value, 1), dtype=torch.uint8, device=device)
    p.workspace, p.workspace_bytes = ws.data_ptr(), need.value
    _call(lib, "flashptx_bwd_varlen", lib.flashptx_bwd_varlen, ctypes.byref(p), device.index
          if device.index is not None else _current_device())
    del ws


def _fwd_varlen_impl(q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, causal, scale, wl, wr, softcap):
    where = "flashptx.attention_varlen"
    keep, ptrs, a = _varlen_args(where, q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, scale, causal, wl, wr,
                                 softcap)
    q, k, v = _aligned_packed(q), _aligned_packed(k), _aligned_packed(v)
    total_q, hq, _ = q.shape
    o_shape = (total_q, hq, v.shape[2])  # O has v's head dim (the (192, 128) split)
    if used_q is None:
        out = q.new_empty(o_shape)
        lse = q.new_empty((hq, total_q), dtype=torch.float32)
    else:  # rows past seqused_q are not written by the library
        out = q.new_zeros(o_shape)
        lse = torch.full((hq, total_q), float("-inf"), dtype=torch.float32, device=q.device)
    qp = q.data_ptr()
    ptrs.update(q=qp, k=k.data_ptr() or qp, v=v.data_ptr() or qp, o=out.data_ptr() or qp, lse=lse.data_ptr() or qp)
    p = _abi.fwd_varlen_params(ptrs, a, {"q": q.stride()[:2], "k": k.stride()[:2], "v": v.stride()[:2],
                                         "o": out.stride()[:2]}, _DTYPES[q.dtype], causal)
    _launch_fwd_varlen(p, q.get_device())
    del keep
    return q, k, v, out, lse


def _bwd_varlen_impl(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, used_q, used_k, causal, scale,
                     deterministic, wl=-1, wr=-1, softcap=0.0):
    where = "flashptx.attention_varlen backward"
    if dout.dtype != q.dtype:
        dout = dout.to(q.dtype)
    keep, ptrs, a = _varlen_args(where, q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, scale, causal, wl, wr,
                                 softcap)
    dout, q, k, v, out = (_aligned_packed(t) for t in (dout, q, k, v, out))
    lse = lse.contiguous()
    # Zeros where the library writes nothing: the rows and keys past the used lengths.
    dq = q.new_zeros(q.shape) if used_q is not None else q.new_empty(q.shape)
    dk, dv = (k.new_zeros(k.shape), v.new_zeros(v.shape)) if used_k is not None else \
        (k.new_empty(k.shape), v.new_empty(v.shape))
    qp = q.data_ptr() or k.data_ptr()
    kp = k.data_ptr() or qp
    ptrs.update(q=qp, k=kp, v=v.data_ptr() or kp, o=out.data_ptr() or qp, lse=lse.data_ptr() or qp,
                dout=dout.data_ptr() or qp, dq=dq.data_ptr() or qp, dk=dk.data_ptr() or kp, dv=dv.data_ptr() or kp)
    strides = {n: t.stride()[:2] for n, t in (("q", q), ("k", k), ("v", v), ("o", out), ("do", dout), ("dq", dq),
                                               ("dk", dk), ("dv", dv))}
    p = _abi.bwd_varlen_params(ptrs, a, strides, _DTYPES[q.dtype], causal, deterministic)
    _launch_bwd_varlen(p, q.device)
    del keep
    return dq, dk, dv


def _check_varlen_tensors(where, q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("%s: %s must be a torch.Tensor, got %s" % (where, name, type(t).__name__))
        if t.dim() != 3:
            raise ValueError("%s: %s must be [total, heads, head_dim] (packed sequences), got %d dims %s"
                             % (where, name, t.dim(), tuple(t.shape)))
        if t.device.type not in _DEVICE_TYPES:
            raise _device_error(where, name, t)


@torch.library.custom_op("flashptx::fwd_varlen", mutates_args=())
def _fwd_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, seqused_q: Optional[torch.Tensor],
                seqused_k: Optional[torch.Tensor], causal: bool, softmax_scale: float, window_left: int,
                window_right: int, softcap: float, deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    _check_varlen_tensors("flashptx::fwd_varlen", q, k, v)
    return _fwd_varlen_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k,
                            causal, softmax_scale, window_left, window_right, softcap)[3:]


@_fwd_varlen.register_fake
def _fwd_varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, causal,
                     softmax_scale, window_left, window_right, softcap, deterministic):
    return (q.new_empty((q.shape[0], q.shape[1], v.shape[2])),
            q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32))


@torch.library.custom_op("flashptx::bwd_varlen", mutates_args=())
def _bwd_varlen(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                lse: torch.Tensor, cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                max_seqlen_k: int, seqused_q: Optional[torch.Tensor], seqused_k: Optional[torch.Tensor],
                causal: bool, softmax_scale: float, window_left: int, window_right: int, softcap: float,
                deterministic: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    where = "flashptx::bwd_varlen"
    _check_varlen_tensors(where, q, k, v)
    o_shape = tuple(q.shape[:2]) + (v.shape[2],)  # O and dO have v's head dim (the (192, 128) split)
    for name, t in (("dout", dout), ("out", out)):
        if tuple(t.shape) != o_shape or t.device != q.device:
            raise ValueError("%s: %s must have shape %s (q's, with v's head dim) and q's device, got %s on %s"
                             % (where, name, o_shape, tuple(t.shape), t.device))
    if tuple(lse.shape) != (q.shape[1], q.shape[0]) or lse.dtype != torch.float32 or lse.device != q.device:
        raise ValueError("%s: lse must be float32 [heads_q, total_q] = %s on q's device, got %s %s"
                         % (where, (q.shape[1], q.shape[0]), lse.dtype, tuple(lse.shape)))
    return _bwd_varlen_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                            seqused_q, seqused_k, causal, softmax_scale, deterministic, window_left, window_right,
                            softcap)


@_bwd_varlen.register_fake
def _bwd_varlen_fake(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q,
                     seqused_k, causal, softmax_scale, window_left, window_right, softcap, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _varlen_setup_context(ctx, inputs, output):
    (q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, causal, scale, wl, wr, softcap, deterministic) = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, used_q, used_k)
    ctx.args = (max_q, max_k, causal, scale, deterministic, (wl, wr), softcap)
    ctx.mark_non_differentiable(lse)


def _varlen_backward(ctx, dout, dlse):
    q, k, v, out, lse, cu_q, cu_k, used_q, used_k = ctx.saved_tensors
    max_q, max_k, causal, scale, deterministic, window, softcap = ctx.args
    _check_varlen_backward_dims("flashptx.attention_varlen backward", q, v)
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv = torch.ops.flashptx.bwd_varlen(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, used_q, used_k,
                                               causal, scale, window[0], window[1], softcap, deterministic)
    return (dq, dk, dv) + (None,) * 12


_fwd_varlen.register_autograd(_varlen_backward, setup_context=_varlen_setup_context)


class _AttentionVarlen(torch.autograd.Function):
    """flashptx::fwd_varlen and its autograd formula as a plain autograd.Function, for _eager_ok
    inputs (as _Attention for flashptx::fwd)."""

    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, causal, scale, wl, wr, softcap,
                deterministic):
        q, k, v, out, lse = _fwd_varlen_impl(q, k, v, cu_q, cu_k, max_q, max_k, used_q, used_k, causal, scale, wl,
                                             wr, softcap)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.index = (cu_q, cu_k, used_q, used_k)  # int32 index tensors: no gradient, never modified here
        ctx.args = (max_q, max_k, causal, scale, deterministic, (wl, wr), softcap)
        ctx.mark_non_differentiable(lse)
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        cu_q, cu_k, used_q, used_k = ctx.index
        max_q, max_k, causal, scale, deterministic, window, softcap = ctx.args
        _check_varlen_backward_dims("flashptx.attention_varlen backward", q, v)
        if dout is None:
            dout = torch.zeros_like(out)
        if torch.is_grad_enabled() or _is_compiling() or not _eager_ok(dout):
            dq, dk, dv = torch.ops.flashptx.bwd_varlen(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, used_q,
                                                       used_k, causal, scale, window[0], window[1], softcap,
                                                       deterministic)
        else:
            dq, dk, dv = _bwd_varlen_impl(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, used_q, used_k, causal,
                                          scale, deterministic, window[0], window[1], softcap)
        return (dq, dk, dv) + (None,) * 12


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, softmax_scale=None,
                     causal=False, window_size=(-1, -1), softcap=0.0, seqused_q=None, seqused_k=None,
                     deterministic=False, return_lse=False):
    """Attention over packed variable-length sequences (FlashAttention-3's flash_attn_varlen_func
    with its argument names; the C ABI's flashptx_fwd_varlen and flashptx_bwd_varlen), with autograd.

    q: [total_q, heads_q, head_dim]; k, v: [total_k, heads_kv, head_dim] (v may have a head dim of
    its own: 128 beside q's and k's 192): the sequences packed one after another, no padding. cu_seqlens_q/_k: int32 [num_seqs + 1] prefix sums (0 first, total
    last); sequence b owns query rows [cu_seqlens_q[b], cu_seqlens_q[b+1]) and keys likewise, and
    attends only to its own keys. max_seqlen_q/_k: ints, at least the longest sequence. seqused_q/_k:
    optional int32 [num_seqs]: sequence b uses only its first seqused_q[b] query rows and
    seqused_k[b] keys (0 to its cu_seqlens length); rows past seqused_q get out = 0 and lse = -inf,
    and the rows and keys past the used lengths get zero gradients. Values past the used keys and
    rows must be finite: a partial block loads them before the mask removes them.
    The library reads cu_seqlens and seqused on the host: each call (and the backward again) copies
    them there, which waits for the device when they are CUDA tensors.

    CUDA tensors, all bfloat16 or all float16, head_dim 64, 96, 128, 192 or 256 (sm_90), forward and
    backward; the forward also takes v of head_dim 128 beside q and k of 192, whose varlen backward
    is not built: a gradient through it raises NotImplementedError.
    heads_q a multiple of heads_kv. causal: per sequence, bottom-right aligned. softmax_scale: default 1/sqrt(head_dim).
    window_size, softcap: as flashptx.attention's, per sequence, forward and backward.
    deterministic: bitwise reproducible gradients.
    Returns out [total_q, heads_q, v's head_dim], and with return_lse also the LSE, float32
    [heads_q, total_q] (FlashAttention's varlen layout), natural log, no gradient. Bad values raise
    ValueError before anything launches (the library's own refusals are flashptx.FlashptxValueError).
    """
    where = "flashptx.attention_varlen"
    window, cap = _abi.check_modifiers(where, window_size, softcap)
    _check_varlen_tensors(where, q, k, v)
    if not isinstance(causal, bool):
        raise ValueError("%s: causal must be a bool, got %r" % (where, causal))
    for name, m in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(m, bool) or not isinstance(m, int):
            raise ValueError("%s: %s must be an int, got %r" % (where, name, m))
    if softmax_scale is None:
        scale = 0.0
    else:
        scale = float(softmax_scale)
        if scale == 0.0:
            raise ValueError("%s: softmax_scale 0 (pass None for 1/sqrt(head_dim))" % where)
    wl, wr = window if window is not None else (-1, -1)
    args = (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q, seqused_k, causal, scale,
            wl, wr, cap, bool(deterministic))
    if not _is_compiling() and _eager_ok(q, k, v):
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
            out, lse = _AttentionVarlen.apply(*args)
        else:
            out, lse = _fwd_varlen_impl(*args[:-1])[3:]
    else:
        out, lse = torch.ops.flashptx.fwd_varlen(*args)
    return (out, lse) if return_lse else out
