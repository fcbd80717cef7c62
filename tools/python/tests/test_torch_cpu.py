#!/usr/bin/env python3
"""The torch layer of flashptx (custom ops, fake tensors, autograd, torch.compile) on a machine with
PyTorch but no GPU: the two C calls are swapped for a torch emulation on CPU tensors.

    PYTHONPATH=tools/python python3 tools/python/tests/test_torch_cpu.py     # needs torch (a CPU build will do)

It checks the plumbing, not the kernels (tests/test_gpu.py does that on the H200): the ops' schemas
and fake implementations, that the wrapper hands strided tensors to the C call without a copy when
the ABI takes them and copies them otherwise, that gradients reach q, k, v through the backward op
(GQA included) and lse carries none, torch.library.opcheck, and torch.compile(fullgraph=True)
(aot_eager) with no graph break and the eager results; and the eager fast path: the params struct kept
per thread and signature carries what one built from scratch carries (new pointers every call, hits
after shape, stride, dtype and option changes; the workspace size asked once per signature), one
struct per thread, the one-pass alignment test agrees with the traceable one, and plain calls skip
the dispatcher while calls under a TorchDispatchMode take torch.ops.flashptx.* with the same results.
Exit 0 when nothing failed.
"""
import contextlib
import math
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402

import flashptx  # noqa: E402
from flashptx import _torch as ft  # noqa: E402

CALLS = []
REAL_LAUNCHERS = (ft._launch_fwd, ft._launch_bwd)  # main() swaps them for the emulation below


def math_attention(q, k, v, causal, scale):
    """fp32 attention on [B, S, H, D], GQA, bottom-right causal; returns (o, lse)."""
    d = q.shape[-1]
    g = q.shape[2] // k.shape[2]
    qf = q.float().transpose(1, 2)
    kf = k.float().repeat_interleave(g, dim=2).transpose(1, 2)
    vf = v.float().repeat_interleave(g, dim=2).transpose(1, 2)
    s = qf @ kf.transpose(-1, -2) * (scale or 1.0 / math.sqrt(d))
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        s = s.masked_fill(~torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return (torch.exp(s - lse[..., None]) @ vf).transpose(1, 2), lse


def emu_fwd(q, k, v, out, lse, causal, softmax_scale):
    CALLS.append(("fwd", q, k, v))
    o, l = math_attention(q, k, v, causal, softmax_scale)
    out.copy_(o)
    lse.copy_(l)


def emu_bwd(dout, q, k, v, out, lse, dq, dk, dv, causal, softmax_scale, deterministic):
    """The attention backward by its formulas in fp32 (autograd is not available inside an op)."""
    CALLS.append(("bwd", dout, q, k, v))
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = hq // hk
    scale = softmax_scale or 1.0 / math.sqrt(d)
    qf = q.float().transpose(1, 2)
    kf = k.float().repeat_interleave(g, dim=2).transpose(1, 2)
    vf = v.float().repeat_interleave(g, dim=2).transpose(1, 2)
    do = dout.float().transpose(1, 2)
    s = qf @ kf.transpose(-1, -2) * scale
    if causal:
        s = s.masked_fill(~torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq), float("-inf"))
    p = torch.exp(s - lse[..., None])
    o = p @ vf
    dvf = p.transpose(-1, -2) @ do
    dp = do @ vf.transpose(-1, -2)
    ds = p * (dp - (do * o).sum(-1, keepdim=True))
    dqf = ds @ kf * scale
    dkf = ds.transpose(-1, -2) @ qf * scale
    dq.copy_(dqf.transpose(1, 2))
    dk.copy_(dkf.view(b, hk, g, sk, d).sum(2).transpose(1, 2))
    dv.copy_(dvf.view(b, hk, g, sk, d).sum(2).transpose(1, 2))


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def rnd(*shape, dtype=torch.bfloat16, grad=False):
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


@case
def the_ops_and_their_schemas():
    fwd = str(torch.ops.flashptx.fwd.default._schema)
    bwd = str(torch.ops.flashptx.bwd.default._schema)
    assert fwd == ("flashptx::fwd(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale, "
                   "bool deterministic) -> (Tensor, Tensor)"), fwd
    assert bwd.startswith("flashptx::bwd(Tensor dout, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse, "), bwd


@case
def fake_tensors_on_a_cuda_device():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q = torch.empty(2, 113, 8, 128, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 203, 2, 128, dtype=torch.bfloat16, device="cuda")
        out, lse = flashptx.attention(q, k, k, causal=True, return_lse=True)
        assert out.shape == (2, 113, 8, 128) and out.dtype == torch.bfloat16 and out.device.type == "cuda"
        assert lse.shape == (2, 8, 113) and lse.dtype == torch.float32
        dq, dk, dv = torch.ops.flashptx.bwd(out, q, k, k, out, lse, True, 0.0, False)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == k.shape


@case
def forward_and_gradients_through_the_ops():
    torch.manual_seed(0)
    for hq, hk, causal, sq, sk in ((8, 2, True, 113, 203), (4, 4, False, 64, 37), (8, 1, True, 50, 50)):
        q, k, v = rnd(2, sq, hq, 64, grad=True), rnd(2, sk, hk, 64, grad=True), rnd(2, sk, hk, 64, grad=True)
        do = rnd(2, sq, hq, 64)
        out, lse = flashptx.attention(q, k, v, causal=causal, return_lse=True)
        assert not lse.requires_grad
        o_ref, l_ref = math_attention(q, k, v, causal, None)
        assert torch.allclose(out.float(), o_ref, atol=1e-2) and torch.allclose(lse, l_ref, atol=1e-4)
        got = torch.autograd.grad(out, (q, k, v), do)
        qf, kf, vf = (t.detach().float().requires_grad_(True) for t in (q, k, v))
        ref = torch.autograd.grad(math_attention(qf, kf, vf, causal, None)[0], (qf, kf, vf), do.float())
        for name, g, r in zip("qkv", got, ref):
            assert g.shape == r.shape and g.dtype == torch.bfloat16, (name, g.shape, r.shape)
            assert torch.allclose(g.float(), r, atol=3e-2, rtol=2e-2), (name, (g.float() - r).abs().max())
    # a custom scale reaches both calls
    q = rnd(1, 16, 2, 64, grad=True)
    out = flashptx.attention(q, q, q, softmax_scale=0.3)
    assert torch.allclose(out.float(), math_attention(q, q, q, False, 0.3)[0], atol=1e-2)


@case
def fa3_positional_call_raises():
    # FA3's flash_attn_func(q, k, v, softmax_scale, causal) ported positionally: refused, not run
    # with causal=0.088 and softmax_scale=True.
    q = rnd(1, 16, 2, 64)
    CALLS.clear()
    try:
        flashptx.attention(q, q, q, 0.088, True)
    except TypeError as e:
        assert "positional" in str(e), str(e)
    else:
        raise AssertionError("flashptx.attention took a positional softmax_scale and causal")
    assert not CALLS, "the C call ran"
    out = flashptx.attention(q, q, q, softmax_scale=0.088, causal=True)
    assert torch.allclose(out.float(), math_attention(q, q, q, True, 0.088)[0], atol=1e-2)


@case
def strided_inputs_without_copies_and_others_copied():
    qkv = rnd(2, 40, 3, 4, 64, grad=True)
    q, k, v = qkv.unbind(2)
    CALLS.clear()
    out = flashptx.attention(q, k, v, causal=True)
    _, cq, ck, cv = CALLS[-1]
    assert cq.data_ptr() == q.data_ptr() and cq.stride() == q.stride(), "the packed view was copied"
    out.sum().backward()
    assert qkv.grad is not None and qkv.grad.shape == qkv.shape
    _, cdo, *_ = CALLS[-1]
    assert cdo.is_contiguous(), "the broadcast dout (stride 0) should have been made contiguous"
    t = rnd(2, 4, 40, 64).transpose(1, 2)
    flashptx.attention(t, t, t)
    assert CALLS[-1][1].data_ptr() == t.data_ptr(), "a [B,H,S,D] transposed view was copied"
    wide = rnd(2, 40, 4, 128)[..., ::2]
    flashptx.attention(wide, wide, wide)
    assert CALLS[-1][1].is_contiguous() and CALLS[-1][1].data_ptr() != wide.data_ptr()
    flat = rnd(2 * 40 * 4 * 64 + 1)[1:].view(2, 40, 4, 64)
    flashptx.attention(flat, flat, flat)
    assert CALLS[-1][1].data_ptr() % 16 == 0 and CALLS[-1][1].data_ptr() != flat.data_ptr()
    assert torch.equal(flashptx.attention(flat, flat, flat), flashptx.attention(*(flat.contiguous(),) * 3))


@case
def python_side_errors():
    def expect(exc, fn, words):
        try:
            fn()
        except exc as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError("no " + exc.__name__)
    a = flashptx.attention
    expect(ValueError, lambda: a(rnd(1, 8, 2, 64), rnd(1, 8, 2, 64), rnd(1, 9, 2, 64)), "k and v must have one shape")
    expect(ValueError, lambda: a(rnd(1, 8, 2, 64), rnd(1, 8, 2, 32), rnd(1, 8, 2, 32)), "share batch and head_dim")
    expect(ValueError, lambda: a(rnd(8, 2, 64), rnd(8, 2, 64), rnd(8, 2, 64)), "[batch, seqlen, heads, head_dim]")
    expect(ValueError, lambda: a(*(rnd(1, 8, 2, 64, dtype=torch.float64),) * 3), "torch.bfloat16 or torch.float16")
    expect(ValueError, lambda: a(*(rnd(1, 8, 2, 64),) * 3, softmax_scale=0), "softmax_scale")
    saved = ft._DEVICE_TYPES
    ft._DEVICE_TYPES = ("cuda",)
    try:
        expect(ValueError, lambda: a(*(rnd(1, 8, 2, 64),) * 3), "needs CUDA tensors; q is on cpu")
    finally:
        ft._DEVICE_TYPES = saved


@case
def autocast_casts_fp32_inputs():
    q = rnd(1, 16, 2, 64, dtype=torch.float32, grad=True)

    def f(q):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return flashptx.attention(q, q, q, causal=True)
    out = f(q)
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert q.grad.dtype == torch.float32 and torch.isfinite(q.grad).all()
    torch._dynamo.reset()
    ex = torch._dynamo.explain(f)(q)
    assert ex.graph_break_count == 0, str(ex)


@case
def opcheck():
    torch.manual_seed(1)
    q, k, v = rnd(2, 13, 4, 64, grad=True), rnd(2, 17, 2, 64, grad=True), rnd(2, 17, 2, 64, grad=True)
    torch.library.opcheck(torch.ops.flashptx.fwd.default, (q, k, v, True, 0.0, False))
    out, lse = torch.ops.flashptx.fwd(q, k, v, True, 0.0, False)
    torch.library.opcheck(torch.ops.flashptx.bwd.default,
                          (torch.randn_like(out), q.detach(), k.detach(), v.detach(), out.detach(), lse.detach(),
                           True, 0.0, False))


class Block(torch.nn.Module):
    def __init__(self, dim=128, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, dim = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, dim // self.heads).unbind(2)
        return x + self.proj(flashptx.attention(q, k, v, causal=True).reshape(b, s, dim))


@case
def torch_compile_fullgraph_no_graph_break():
    torch.manual_seed(2)
    torch._dynamo.reset()

    def f(q, k, v):
        return flashptx.attention(q, k, v, causal=True, deterministic=True) * 2
    q, k, v = rnd(2, 33, 4, 64), rnd(2, 33, 2, 64), rnd(2, 33, 2, 64)
    ex = torch._dynamo.explain(f)(q, k, v)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, str(ex)
    cf = torch.compile(f, fullgraph=True, backend="aot_eager")
    args_e = [t.clone().requires_grad_(True) for t in (q, k, v)]
    args_c = [t.clone().requires_grad_(True) for t in (q, k, v)]
    ye, yc = f(*args_e), cf(*args_c)
    assert torch.equal(ye, yc)
    do = torch.randn_like(ye)
    for a, b in zip(torch.autograd.grad(ye, args_e, do), torch.autograd.grad(yc, args_c, do)):
        assert torch.equal(a, b)
    torch._dynamo.reset()
    m = Block().to(torch.bfloat16)
    x = rnd(2, 24, 128)
    ex = torch._dynamo.explain(m)(x)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, str(ex)
    cm = torch.compile(m, fullgraph=True, backend="aot_eager")
    xe, xc = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ye, yc = m(xe), cm(xc)
    assert torch.equal(ye, yc)
    ye.sum().backward()
    yc.sum().backward()
    assert torch.equal(xe.grad, xc.grad)


class RecordingLibrary:
    """A stand-in libflashptx: records every params struct passed to it, field by field, at the
    time of the call."""

    def __init__(self):
        self.fwd, self.bwd, self.sized, self.streams = [], [], 0, []

    @staticmethod
    def fields(p):
        return {n: getattr(p, n) for n, _ in p._fields_}

    def flashptx_fwd(self, pref, stream):
        self.fwd.append(self.fields(pref._obj))
        self.streams.append(stream)
        return 0

    def flashptx_bwd(self, pref, stream):
        self.bwd.append(self.fields(pref._obj))
        return 0

    def flashptx_bwd_workspace_size(self, pref, need):
        self.sized += 1
        p = pref._obj
        need._obj.value = 256 * (p.batch * p.heads_q * p.seqlen_q + 1)
        return 0

    def flashptx_last_error(self):
        return b"recorded"


@contextlib.contextmanager
def real_launchers(lib):
    """The package's own launchers over a RecordingLibrary, on CPU tensors (stream 0, device -1)."""
    from flashptx import _abi
    saved = (ft._launch_fwd, ft._launch_bwd, _abi._lib, ft._current_stream, ft._current_device)
    ft._launch_fwd, ft._launch_bwd = REAL_LAUNCHERS
    _abi._lib, ft._current_stream, ft._current_device = lib, (lambda index: 0), (lambda: -1)
    ft._structs.fwd.clear()
    ft._structs.bwd.clear()
    try:
        yield lib
    finally:
        ft._launch_fwd, ft._launch_bwd, _abi._lib, ft._current_stream, ft._current_device = saved


def uncached_fwd(q, k, v, out, lse, causal, scale, ctr):
    """The params the package built before it kept structs: _abi.fwd_params from scratch."""
    from flashptx import _abi
    p = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr() or q.data_ptr(), "v": v.data_ptr() or q.data_ptr(),
                         "o": out.data_ptr(), "lse": lse.data_ptr(), "tile_counter": ctr},
                        tuple(q.shape), tuple(k.shape),
                        {"q": ft._strides(q), "k": ft._strides(k), "v": ft._strides(v), "o": ft._strides(out)},
                        (ft._DTYPES[q.dtype], ft._DTYPES[k.dtype], ft._DTYPES[v.dtype], ft._DTYPES[out.dtype]),
                        causal, scale)
    return RecordingLibrary.fields(p)


@case
def cached_params_equal_uncached_ones():
    """The struct kept per signature carries what a struct built from scratch carries, call after
    call: new pointers every time (never a previous call's), a shape change, a stride change, a
    dtype, causal or scale change, and back (a cache hit after a miss)."""
    lib = RecordingLibrary()
    qkv = rnd(2, 40, 3, 4, 64)
    cases = [
        lambda: (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0),
        lambda: (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0),   # same signature
        lambda: (rnd(2, 33, 4, 64), rnd(2, 57, 2, 64), rnd(2, 57, 2, 64), False, 0.0),   # shapes
        lambda: tuple(qkv.unbind(2)) + (False, 0.0),                                     # strides (packed)
        lambda: tuple(t.transpose(1, 2) for t in (rnd(2, 4, 40, 64),) * 3) + (False, 0.0),  # strides
        lambda: (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), True, 0.0),    # causal d64: counter
        lambda: (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.3),   # scale
        lambda: tuple(rnd(1, 16, 2, 128, dtype=torch.float16) for _ in range(3)) + (True, 0.0),  # dtype, d128
        lambda: (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0),   # back: a hit
        lambda: tuple(qkv.unbind(2)) + (False, 0.0),                                     # back: a hit
    ]
    with real_launchers(lib):
        for make in cases + cases:
            q, k, v, causal, scale = make()
            out = q.new_empty(q.shape)
            lse = q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)
            ft._launch_fwd(q, k, v, out, lse, causal, scale)
            got = lib.fwd[-1]
            ctr = got["tile_counter"]
            assert (ctr is not None) == (causal and q.shape[-1] == 64), got
            want = uncached_fwd(q, k, v, out, lse, causal, scale, ctr)
            assert got == want, "cached fwd params differ:\n%s\n%s" % (got, want)
        assert len(ft._structs.fwd) == 7, len(ft._structs.fwd)  # one struct per signature
        assert lib.streams == [0] * len(lib.fwd)

        # the backward: fresh pointers (the workspace's too) every call, the size asked once per signature
        def bwd_once(q, k, v, causal, scale, det):
            out, do = torch.randn_like(q), rnd(*q.shape)
            lse = torch.randn(q.shape[0], q.shape[2], q.shape[1])
            dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
            ft._launch_bwd(do, q, k, v, out, lse, dq, dk, dv, causal, scale, det)
            got = lib.bwd[-1]
            from flashptx import _abi
            want = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": out.data_ptr(),
                                    "lse": lse.data_ptr(), "dout": do.data_ptr(), "dq": dq.data_ptr(),
                                    "dk": dk.data_ptr(), "dv": dv.data_ptr()}, tuple(q.shape), tuple(k.shape),
                                   {"q": ft._strides(q), "k": ft._strides(k), "v": ft._strides(v),
                                    "o": ft._strides(out), "do": ft._strides(do), "dq": ft._strides(dq),
                                    "dk": ft._strides(dk), "dv": ft._strides(dv)},
                                   ft._DTYPES[q.dtype], causal, scale, det)
            want = RecordingLibrary.fields(want)
            assert got["workspace"] is not None and got["workspace_bytes"] == 256 * (q.shape[0] * q.shape[2] * q.shape[1] + 1)
            want["workspace"], want["workspace_bytes"] = got["workspace"], got["workspace_bytes"]
            assert got == want, "cached bwd params differ:\n%s\n%s" % (got, want)
            return got
        sized = lib.sized
        seen = []
        for q, k, v, causal, scale, det in [
                (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0, False),
                (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0, False),
                (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), True, 0.0, True),
                (rnd(1, 77, 8, 128), rnd(1, 90, 2, 128), rnd(1, 90, 2, 128), True, 0.5, False),
                tuple(qkv.unbind(2)) + (True, 0.0, False),
                (rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), rnd(2, 40, 4, 64), False, 0.0, False)]:
            seen.append(bwd_once(q, k, v, causal, scale, det))
        assert lib.sized - sized == 4, lib.sized - sized  # 4 signatures among the 6 calls
        assert seen[0]["q"] != seen[1]["q"] or seen[0]["dq"] != seen[1]["dq"]


@case
def structs_are_per_thread():
    """The C call runs without the GIL: two threads must never share a struct."""
    import threading
    lib = RecordingLibrary()
    q = rnd(1, 16, 2, 64)
    ids = []

    def one():
        out, lse = q.new_empty(q.shape), q.new_empty((1, 2, 16), dtype=torch.float32)
        ft._launch_fwd(q, q, q, out, lse, False, 0.0)
        ids.append(id(next(iter(ft._structs.fwd.values()))[0]))
    with real_launchers(lib):
        one()
        t = threading.Thread(target=one)
        t.start()
        t.join()
    assert len(ids) == 2 and ids[0] != ids[1], ids


@case
def eager_alignment_test_matches_the_traced_one():
    """_aligned_eager (one pass, eager only) copies exactly where _aligned (traceable) does."""
    base = rnd(2, 40, 3, 4, 128)
    views = [rnd(2, 40, 4, 64), base.unbind(2)[1], base[..., :64], base[..., ::2], rnd(2, 4, 40, 64).transpose(1, 2),
             rnd(2 * 40 * 4 * 64 + 1)[1:].view(2, 40, 4, 64), rnd(1, 40, 4, 64).expand(3, 40, 4, 64),
             rnd(0, 40, 4, 64), rnd(2, 1, 4, 64), rnd(2, 40, 4, 8), rnd(2, 40, 4, 9)[..., :8],
             rnd(2, 40, 4, 64, dtype=torch.float16)[:, ::3], rnd(2, 40, 1, 64).expand(2, 40, 4, 64)]
    for t in views:
        a, b = ft._aligned(t), ft._aligned_eager(t)
        assert (a.data_ptr() == t.data_ptr()) == (b.data_ptr() == t.data_ptr()), (t.shape, t.stride())
        assert a.stride() == b.stride() and torch.equal(a, b), (t.shape, t.stride())


@case
def eager_path_and_op_path():
    """Plain eager calls take the autograd.Function; under a TorchDispatchMode (as FakeTensorMode,
    make_fx, selective checkpointing) the call goes through torch.ops.flashptx.fwd/bwd, with the same
    results."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))
    torch.manual_seed(5)
    q, k, v = rnd(2, 24, 4, 64, grad=True), rnd(2, 31, 2, 64, grad=True), rnd(2, 31, 2, 64, grad=True)
    do = rnd(2, 24, 4, 64)
    out = flashptx.attention(q, k, v, causal=True)
    assert type(out.grad_fn).__name__ == "_AttentionBackward", type(out.grad_fn).__name__
    g = torch.autograd.grad(out, (q, k, v), do)
    seen = Seen()
    with seen:
        out2 = flashptx.attention(q, k, v, causal=True)
        g2 = torch.autograd.grad(out2, (q, k, v), do)
    assert "flashptx.fwd.default" in seen.ops and "flashptx.bwd.default" in seen.ops, seen.ops
    assert torch.equal(out, out2) and all(torch.equal(a, b) for a, b in zip(g, g2))
    with torch.no_grad():
        assert torch.equal(flashptx.attention(q, k, v, causal=True), out)
    # create_graph=True: the op path in the backward, as the custom op's own formula
    out3 = flashptx.attention(q, k, v, causal=True)
    g3 = torch.autograd.grad(out3, (q, k, v), do, create_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(g, g3))


def main():
    ft._launch_fwd, ft._launch_bwd = emu_fwd, emu_bwd
    ft._DEVICE_TYPES = ("cuda", "cpu")
    failed = 0
    for fn in CASES:
        try:
            fn()
            print("ok   %s" % fn.__name__, flush=True)
        except Exception:  # noqa: BLE001
            failed += 1
            print("FAIL %s: %s" % (fn.__name__, traceback.format_exc()), flush=True)
    print("%d passed, %d failed" % (len(CASES) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
