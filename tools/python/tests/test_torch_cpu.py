#!/usr/bin/env python3
"""The torch layer of flashptx (custom ops, fake tensors, autograd, torch.compile) on a machine with
PyTorch but no GPU: the two C calls are swapped for a torch emulation on CPU tensors.

    PYTHONPATH=tools/python python3 tools/python/tests/test_torch_cpu.py     # needs torch (a CPU build will do)

It checks the plumbing, not the kernels (tests/test_gpu.py does that on the H200): the ops' schemas
and fake implementations, that the wrapper hands strided tensors to the C call without a copy when
the ABI takes them and copies them otherwise, that gradients reach q, k, v through the backward op
(GQA included) and lse carries none, torch.library.opcheck, and torch.compile(fullgraph=True)
(aot_eager) with no graph break and the eager results. Exit 0 when nothing failed.
"""
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
