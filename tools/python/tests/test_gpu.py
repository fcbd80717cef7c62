#!/usr/bin/env python3
"""flashptx.attention on an sm_90 GPU (H200), through the package: numerics, gradients, layouts,
errors, the deterministic mode, torch.compile.

    PYTHONPATH=tools/python python3 tools/python/tests/test_gpu.py [--json results.json]
    PYTHONPATH=tools/python python3 -m pytest -q tools/python/tests/test_gpu.py     # the same cases

Tolerance (FlashAttention's rule): the reference is SDPA's math backend in fp64 on the same inputs
(upcast), with GQA heads repeated and the causal mask aligned bottom-right as flashptx's; for each
output g (O, dQ, dK, dV)
    max|g - g_ref| <= 2 * max|g_same - g_ref| + 1e-5
where g_same is SDPA's math backend run in the inputs' own dtype (bf16/fp16, with its reductions
allowed in that dtype: a plain same-precision implementation). LSE against the fp64 log-sum-exp to
1e-3. Every case prints its errors and bounds, so that a log shows the margins, not only pass/fail.
"""
import contextlib
import json
import math
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import flashptx  # noqa: E402
from flashptx import _torch as ft  # noqa: E402

DEV = "cuda"
LOG = []


def log(msg):
    LOG.append(msg)
    print(msg, flush=True)


# ---- references --------------------------------------------------------------------------------------
@contextlib.contextmanager
def same_dtype_reductions():
    """SDPA's math backend computes bf16/fp16 in fp32 unless told otherwise: tell it otherwise."""
    allow = getattr(torch.backends.cuda, "allow_fp16_bf16_reduction_math_sdp", None)
    allowed = getattr(torch.backends.cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    if allow is None or allowed is None:
        yield
        return
    prev = allowed()
    allow(True)
    try:
        yield
    finally:
        allow(prev)


def sdpa_ref(q, k, v, causal, scale):
    """SDPA math backend on [B, S, H, D] tensors (any dtype), GQA by repeating kv heads, causal
    aligned bottom-right (flashptx's and FlashAttention's convention)."""
    g = q.shape[2] // k.shape[2]
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if g > 1:
        kt, vt = kt.repeat_interleave(g, dim=1), vt.repeat_interleave(g, dim=1)
    mask = None
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
    with sdpa_kernel(SDPBackend.MATH):
        o = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale)
    return o.transpose(1, 2)


def lse_ref(q, k, causal, scale):
    g = q.shape[2] // k.shape[2]
    s = torch.einsum("bqhd,bkhd->bhqk", q.double(), k.double().repeat_interleave(g, dim=2)) * scale
    if causal:
        sq, sk = q.shape[1], k.shape[1]
        mask = torch.ones(sq, sk, dtype=torch.bool, device=q.device).tril(sk - sq)
        s = s.masked_fill(~mask, float("-inf"))
    return torch.logsumexp(s, dim=-1)


def run_impl(fn, q, k, v, do, grads):
    """Output (and dq, dk, dv when grads) of fn on leaf copies of q, k, v."""
    q, k, v = (t.detach().clone().requires_grad_(grads) for t in (q, k, v))
    o = fn(q, k, v)
    if not grads:
        return (o.detach(),)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    return o.detach(), dq, dk, dv


def compare(label, got, ref64, same, problems):
    """FlashAttention's rule for each tensor; appends a line per violation to problems."""
    parts = []
    for name, g, r, s in zip(("out", "dq", "dk", "dv"), got, ref64, same):
        if not torch.isfinite(g).all():
            problems.append("%s %s: non-finite values" % (label, name))
            parts.append("%s NaN/inf" % name)
            continue
        err = (g.double() - r).abs().max().item()
        bound = 2 * (s.double() - r).abs().max().item() + 1e-5
        parts.append("%s %.2e<=%.2e" % (name, err, bound))
        if err > bound:
            problems.append("%s %s: max err %.3e > bound %.3e" % (label, name, err, bound))
    return "  ".join(parts)


def check_case(b, sq, sk, hq, hk, d, causal, grads, dtype=torch.bfloat16, scale=None, deterministic=False,
               seed=0, problems=None, dv=None):
    """dv: v's (and so out's and do's) head dim, default d."""
    dv = d if dv is None else dv
    torch.manual_seed(seed)
    q = torch.randn(b, sq, hq, d, device=DEV, dtype=dtype)
    k = torch.randn(b, sk, hk, d, device=DEV, dtype=dtype)
    v = torch.randn(b, sk, hk, dv, device=DEV, dtype=dtype)
    do = torch.randn(b, sq, hq, dv, device=DEV, dtype=dtype)
    sc = scale if scale is not None else 1.0 / math.sqrt(d)
    got = run_impl(lambda q, k, v: flashptx.attention(q, k, v, causal=causal, softmax_scale=scale,
                                                      deterministic=deterministic), q, k, v, do, grads)
    ref = run_impl(lambda q, k, v: sdpa_ref(q, k, v, causal, sc), q.double(), k.double(), v.double(),
                   do.double(), grads)
    with same_dtype_reductions():
        same = run_impl(lambda q, k, v: sdpa_ref(q, k, v, causal, sc), q, k, v, do, grads)
    label = "%s d%d%s %s b%d sq%d sk%d h%d/%d%s" % (str(dtype).replace("torch.", ""), d, "/%d" % dv if dv != d else "",
                                                   "causal" if causal else "full", b, sq, sk, hq, hk,
                                                   " scale %.3g" % scale if scale else "")
    line = compare(label, got, [r.double() for r in ref], same, problems)
    _, lse = flashptx.attention(q, k, v, causal=causal, softmax_scale=scale, return_lse=True)
    lerr = (lse.double() - lse_ref(q, k, causal, sc)).abs().max().item()
    if not lerr <= 1e-3:
        problems.append("%s lse: max err %.3e > 1e-3" % (label, lerr))
    log("  %-44s %s  lse %.1e" % (label, line, lerr))
    return got


# ---- cases ---------------------------------------------------------------------------------------------
def test_forward_numerics():
    """head_dim 64/128/256, causal or not, GQA 8/2 and MHA, odd lengths, seqlen_q <> seqlen_k."""
    problems = []
    for d in (64, 128, 256):
        for causal in (False, True):
            shapes = [(2, 113, 203, 8, 2), (1, 203, 203, 8, 8)] + ([] if causal else [(1, 203, 113, 8, 8)])
            for shape in shapes:
                check_case(*shape, d, causal, grads=False, problems=problems)
    check_case(1, 1024, 1024, 8, 2, 128, True, grads=False, problems=problems)
    check_case(2, 113, 203, 8, 2, 128, False, grads=False, scale=0.3, problems=problems)
    assert not problems, "\n".join(problems)


def test_backward_numerics():
    """Gradients for head_dim 64/128 (the backward's), causal or not, GQA 8/2, MQA 8/1, odd lengths."""
    problems = []
    for d in (64, 128):
        for causal in (False, True):
            shapes = [(2, 113, 203, 8, 2), (1, 203, 203, 8, 8)] + ([] if causal else [(1, 203, 113, 8, 1)])
            for shape in shapes:
                check_case(*shape, d, causal, grads=True, problems=problems)
    check_case(1, 1024, 1024, 8, 2, 128, True, grads=True, problems=problems)
    check_case(2, 113, 203, 8, 2, 64, True, grads=True, dtype=torch.float16, problems=problems)
    check_case(1, 203, 203, 8, 2, 128, False, grads=True, scale=0.3, problems=problems)
    assert not problems, "\n".join(problems)


def test_deterministic_bitwise():
    """deterministic=True: dq, dk, dv bitwise equal across two calls (GQA, 8 key blocks per dq row)."""
    problems = []
    a = check_case(2, 1024, 1024, 8, 2, 128, False, grads=True, deterministic=True, problems=problems)
    b = check_case(2, 1024, 1024, 8, 2, 128, False, grads=True, deterministic=True, problems=problems)
    for name, x, y in zip(("out", "dq", "dk", "dv"), a, b):
        if not torch.equal(x, y):
            problems.append("deterministic %s differs between two calls (max |diff| %.3e)"
                            % (name, (x.float() - y.float()).abs().max().item()))
    assert not problems, "\n".join(problems)


def test_head_dim_256_backward():
    """head_dim 256 (the backward's 64 x 64 tiles, head dim split between the MMA warpgroups):
    gradients causal or not, GQA, and the deterministic mode bitwise equal across two calls."""
    problems = []
    for causal in (False, True):
        check_case(2, 113, 203, 8, 2, 256, causal, grads=True, problems=problems)
    check_case(1, 203, 203, 4, 4, 256, True, grads=True, dtype=torch.float16, problems=problems)
    a = check_case(1, 517, 517, 4, 2, 256, True, grads=True, deterministic=True, problems=problems)
    b = check_case(1, 517, 517, 4, 2, 256, True, grads=True, deterministic=True, problems=problems)
    for name, x, y in zip(("out", "dq", "dk", "dv"), a, b):
        if not torch.equal(x, y):
            problems.append("d256 deterministic %s differs between two calls" % name)
    assert not problems, "\n".join(problems)


def test_backward_head_dims_96_192():
    """head_dim 96 and 192 (the d128 and d256 backward kernels over zero columns), and v's 128 beside
    192 (DeepSeek's split, on the d256 kernels too): gradients causal or not, GQA and MQA, fp16, ragged
    lengths, and the deterministic mode bitwise equal across two calls."""
    problems = []
    for d, dv in ((96, 96), (192, 192), (192, 128)):
        for causal in (False, True):
            check_case(2, 113, 203, 8, 2, d, causal, grads=True, problems=problems, dv=dv)
        check_case(1, 203, 113, 4, 1, d, False, grads=True, dtype=torch.float16, problems=problems, dv=dv)
        a = check_case(1, 517, 517, 4, 2, d, True, grads=True, deterministic=True, problems=problems, dv=dv)
        b = check_case(1, 517, 517, 4, 2, d, True, grads=True, deterministic=True, problems=problems, dv=dv)
        for name, x, y in zip(("out", "dq", "dk", "dv"), a, b):
            if not torch.equal(x, y):
                problems.append("d%d/%d deterministic %s differs between two calls" % (d, dv, name))
    assert not problems, "\n".join(problems)


def test_layouts():
    """Strided q/k/v the ABI takes as they are (packed qkv, [B,H,S,D] transposed), and ones that
    are copied first (non-contiguous last dim, misaligned offset): same results as contiguous."""
    torch.manual_seed(1)
    b, s, h, d = 2, 203, 4, 128
    qkv = torch.randn(b, s, 3, h, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    q, k, v = qkv.unbind(2)
    assert ft._layout_ok(q) and ft._layout_ok(k), "packed qkv views should need no copy"
    ref_q, ref_k, ref_v = (t.detach().contiguous().requires_grad_(True) for t in (q, k, v))
    out = flashptx.attention(q, k, v, causal=True, deterministic=True)
    ref = flashptx.attention(ref_q, ref_k, ref_v, causal=True, deterministic=True)
    assert torch.equal(out, ref), "packed qkv gives another output"
    do = torch.randn_like(out)
    out.backward(do)
    ref.backward(do)
    for i, r in enumerate((ref_q, ref_k, ref_v)):
        assert torch.equal(qkv.grad[:, :, i], r.grad), "packed qkv gradient %d differs" % i
    bhsd = torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16)
    t = bhsd.transpose(1, 2)
    assert ft._layout_ok(t)
    assert torch.equal(flashptx.attention(t, t, t), flashptx.attention(*(t.contiguous(),) * 3))
    wide = torch.randn(b, s, h, 2 * d, device=DEV, dtype=torch.bfloat16)[..., ::2]  # last dim stride 2
    assert not ft._layout_ok(wide)
    assert torch.equal(flashptx.attention(wide, wide, wide), flashptx.attention(*(wide.contiguous(),) * 3))
    flat = torch.randn(b * s * h * d + 1, device=DEV, dtype=torch.bfloat16)[1:].view(b, s, h, d)  # 2-byte offset
    assert torch.equal(flashptx.attention(flat, flat, flat), flashptx.attention(*(flat.contiguous(),) * 3))


def test_current_stream_and_empty():
    torch.manual_seed(2)
    q = torch.randn(2, 512, 8, 128, device=DEV, dtype=torch.bfloat16)
    want = flashptx.attention(q, q, q, causal=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = flashptx.attention(q, q, q, causal=True)
    s.synchronize()
    assert torch.equal(got, want), "side stream result differs"
    e = torch.empty(0, 64, 8, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    o = flashptx.attention(e, e, e)
    o.sum().backward()
    assert o.shape == e.shape and e.grad.shape == e.shape


def test_tile_counter_per_stream():
    """The causal d64 forward's tile counter (the dynamic schedule): one per stream, reused call
    after call (each call leaves it zero), separate on a side stream running at the same time, and
    the results those calls give equal to a fresh counter's and within the fp64 rule."""
    from flashptx import _torch as ft
    problems = []
    for _ in range(2):  # the second call reuses the first one's counter
        check_case(2, 1000, 1000, 8, 8, 64, True, grads=False, seed=11, problems=problems)
    assert not problems, "\n".join(problems)
    dev = torch.cuda.current_device()
    mine = [c for (i, st), c in ft._counters.items() if i == dev and st == torch.cuda.current_stream().cuda_stream]
    assert len(mine) == 1, "one counter for this stream: %d" % len(mine)
    torch.cuda.synchronize()
    assert torch.equal(mine[0], torch.zeros_like(mine[0])), "the counter is zero after the calls: %s" % mine[0]
    torch.manual_seed(12)
    q, k, v = (torch.randn(4, 2048, 8, 64, device=DEV, dtype=torch.bfloat16) for _ in range(3))
    want = flashptx.attention(q, k, v, causal=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    outs = []
    for _ in range(8):  # both streams' calls in flight together, each on its own counter
        outs.append(flashptx.attention(q, k, v, causal=True))
        with torch.cuda.stream(side):
            outs.append(flashptx.attention(q, k, v, causal=True))
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    for i, o in enumerate(outs):
        assert torch.equal(o, want), "call %d (%s stream) differs from the first call" % (i, "side" if i % 2 else "main")
    for (i, st), c in ft._counters.items():
        assert torch.equal(c, torch.zeros_like(c)), "counter of stream %x not zero after the calls" % st


def expect(exc, fn, *words):
    try:
        fn()
    except exc as e:
        for w in words:
            assert w in str(e), "%r not in %r" % (w, str(e))
        return e
    raise AssertionError("no %s raised" % exc.__name__)


def test_errors_carry_the_librarys_message():
    def t(*shape, dtype=torch.bfloat16, device=DEV):
        return torch.randn(*shape, device=device, dtype=dtype)
    a = flashptx.attention
    expect(ValueError, lambda: a(t(1, 64, 2, 64, device="cpu"), t(1, 64, 2, 64, device="cpu"),
                                 t(1, 64, 2, 64, device="cpu")), "needs CUDA tensors")
    e = expect(ValueError, lambda: a(*(t(1, 64, 2, 64, dtype=torch.float32),) * 3), "FLASHPTX_ERR_UNSUPPORTED_DTYPE")
    assert isinstance(e, flashptx.FlashptxValueError)
    expect(ValueError, lambda: a(*(t(1, 64, 2, 80),) * 3), "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM", "(80, 80)")
    # head dims 96 and 192 and v's 128 beside 192: the forward runs (their backward:
    # test_backward_head_dims_96_192)
    for dq, dv in ((96, 96), (192, 192), (192, 128)):
        q, k, v = t(1, 64, 2, dq), t(1, 64, 2, dq), t(1, 64, 2, dv)
        o = a(q, k, v, causal=True)
        assert o.shape == (1, 64, 2, dv), o.shape
        ref = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2).float(), k.transpose(1, 2).float(), v.transpose(1, 2).float(), is_causal=True)
        assert (o.float() - ref.transpose(1, 2)).abs().max().item() < 2e-2
    expect(ValueError, lambda: a(t(1, 64, 8, 64), t(1, 64, 3, 64), t(1, 64, 3, 64)), "FLASHPTX_ERR_BAD_HEADS")
    expect(ValueError, lambda: a(t(1, 64, 8, 64), t(1, 64, 2, 64), t(1, 32, 2, 64)), "k and v must have one shape")
    expect(ValueError, lambda: a(*(t(1, 64, 2, 64),) * 3, softmax_scale=0.0), "softmax_scale")
    expect(ValueError, lambda: a(*(t(1, 64, 2, 64),) * 3, softmax_scale=float("nan")), "FLASHPTX_ERR_BAD_SHAPE")
    _, lse = a(*(t(1, 64, 2, 64).requires_grad_(True),) * 3, return_lse=True)
    assert not lse.requires_grad and lse.dtype == torch.float32 and lse.shape == (1, 2, 64)


def test_opcheck():
    """torch.library.opcheck: schema, autograd registration, fake tensors, AOT dispatch (dynamic)."""
    torch.manual_seed(3)
    q = torch.randn(2, 113, 8, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(2, 203, 2, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(2, 203, 2, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True)
    torch.library.opcheck(torch.ops.flashptx.fwd.default, (q, k, v, True, 0.0, True))
    out, lse = torch.ops.flashptx.fwd(q, k, v, True, 0.0, True)
    do = torch.randn_like(out)
    torch.library.opcheck(torch.ops.flashptx.bwd.default,
                          (do, q.detach(), k.detach(), v.detach(), out.detach(), lse, True, 0.0, True))
    # (192, 128): O and dO with v's 128 columns through the plain and the local backward ops (their
    # shape checks and fake tensors at V's head dim)
    q2 = torch.randn(1, 77, 4, 192, device=DEV, dtype=torch.bfloat16)
    k2 = torch.randn(1, 90, 2, 192, device=DEV, dtype=torch.bfloat16)
    v2 = torch.randn(1, 90, 2, 128, device=DEV, dtype=torch.bfloat16)
    out2, lse2 = torch.ops.flashptx.fwd(q2, k2, v2, True, 0.0, True)
    do2 = torch.randn_like(out2)
    torch.library.opcheck(torch.ops.flashptx.bwd.default, (do2, q2, k2, v2, out2, lse2, True, 0.0, True))
    out3, lse3 = torch.ops.flashptx.fwd_local(q2, k2, v2, False, 0.0, 32, 0, 5.0, True)
    torch.library.opcheck(torch.ops.flashptx.bwd_local.default,
                          (do2, q2, k2, v2, out3, lse3, False, 0.0, 32, 0, 5.0, True))


class TinyBlock(torch.nn.Module):
    def __init__(self, dim=512, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, dim = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, dim // self.heads).unbind(2)
        o = flashptx.attention(q, k, v, causal=True, deterministic=True)
        return x + self.proj(o.reshape(b, s, dim))


def test_torch_compile_fullgraph():
    """torch.compile(fullgraph=True): the same output and gradients as eager (bitwise for the op
    alone), one graph, no graph break (torch._dynamo.explain)."""
    torch.manual_seed(4)
    q, k, v, do = (torch.randn(2, 203, 8, 128, device=DEV, dtype=torch.bfloat16) for _ in range(4))

    def f(q, k, v):
        return flashptx.attention(q, k, v, causal=True, deterministic=True) * 2

    torch._dynamo.reset()
    t0 = time.time()
    cf = torch.compile(f, fullgraph=True)
    eager = run_impl(f, q, k, v, do, True)
    comp = run_impl(cf, q, k, v, do, True)
    for name, x, y in zip(("out", "dq", "dk", "dv"), eager, comp):
        assert torch.equal(x, y), "compiled %s differs from eager (max %.3e)" % (name, (x.float() - y.float()).abs().max())
    ex = torch._dynamo.explain(f)(q, k, v)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, str(ex)

    torch._dynamo.reset()
    m = TinyBlock().to(DEV, torch.bfloat16)
    x = torch.randn(2, 256, 512, device=DEV, dtype=torch.bfloat16)
    ex = torch._dynamo.explain(m)(x)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, str(ex)
    torch._dynamo.reset()
    cm = torch.compile(m, fullgraph=True)
    xe, xc = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ye, yc = m(xe), cm(xc)
    tol = 0.02 * ye.abs().max().item()
    assert (ye - yc).abs().max().item() <= tol, "compiled block output differs: %.3e" % (ye - yc).abs().max()
    gy = torch.randn_like(ye)
    ye.backward(gy)
    ge, gw = xe.grad.clone(), m.qkv.weight.grad.clone()
    m.zero_grad()
    yc.backward(gy)
    for name, a, b in (("dx", ge, xc.grad), ("dW_qkv", gw, m.qkv.weight.grad)):
        assert torch.isfinite(b).all(), name
        err = (a.float() - b.float()).abs().max().item()
        assert err <= 0.02 * a.abs().max().item(), "compiled block %s differs: %.3e" % (name, err)
    log("  torch.compile: op bitwise equal to eager; block fwd/bwd close; 0 graph breaks (%.0f s)" % (time.time() - t0))


def _sink_reference(q, k, v, sinks, causal):
    """O in fp64 with a sink logit per query head joining each row's softmax denominator (no value)."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    kd, vd = (t.repeat_interleave(hq // hk, dim=1) for t in (kd, vd))
    s = (qd @ kd.transpose(-1, -2)) * d ** -0.5
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    sink = sinks.double().view(1, hq, 1, 1).expand(b, hq, sq, 1)
    p = torch.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., :sk]
    return (p @ vd).transpose(1, 2)


def test_sinks_forward_backward():
    """Attention sinks through flashptx.attention: O, dQ, dK, dV and dsinks against fp64 autograd."""
    problems = []
    for d, causal, shape in ((64, False, (2, 113, 203, 8, 2)), (128, True, (1, 203, 203, 8, 2)),
                             (128, False, (1, 300, 300, 4, 4))):
        b, sq, sk, hq, hk = shape
        g = torch.Generator(device=DEV).manual_seed(d + sq)
        q, k, v, do = (torch.randn(b, n, h, d, device=DEV, generator=g).to(torch.bfloat16)
                       for n, h in ((sq, hq), (sk, hk), (sk, hk), (sq, hq)))
        sinks = (torch.randn(hq, device=DEV, generator=g) * 2).float()
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v, sinks)]
        out = flashptx.attention(*leaves[:3], causal=causal, sinks=leaves[3])
        grads = torch.autograd.grad(out, leaves, do)
        ref_leaves = [t.detach().double().requires_grad_(True) for t in (q, k, v, sinks)]
        ref = _sink_reference(*ref_leaves, causal)
        ref_grads = torch.autograd.grad(ref, ref_leaves, do.double())
        # The package's plumbing (the sinks' autograd and gradient): bf16 outputs within 2% of their
        # largest magnitude; the kernels' fp64 rule is the C++ suite's (tests/gpu/test_fa3_sinks.cpp).
        for name, got, want in [("O", out, ref)] + list(zip(("dQ", "dK", "dV", "dsinks"), grads, ref_grads)):
            err = (got.double() - want).abs().max().item()
            tol = 2e-2 * max(1.0, want.abs().max().item())
            log("  sinks d%d causal=%d %s: max err %.3e (bound %.3e)" % (d, causal, name, err, tol))
            if not err <= tol:
                problems.append("sinks d%d causal=%d %s: %.3e > %.3e" % (d, causal, name, err, tol))
    assert not problems, "\n".join(problems)


def _modified_reference(q, k, v, causal, window, softcap, sinks):
    """O in fp64 under FlashAttention's window (bottom-right aligned, -1 unbounded), the softcap
    (softcap * tanh(score / softcap), after the scale, before the mask) and the sinks (None: none),
    v of its own head dim; a row that sees nothing gets O = 0."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    kd, vd = (t.repeat_interleave(hq // hk, dim=1) for t in (kd, vd))
    s = (qd @ kd.transpose(-1, -2)) * d ** -0.5
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    left, right = window
    if causal:
        right = 0
    i = torch.arange(sq, device=q.device)[:, None] + sk - sq
    j = torch.arange(sk, device=q.device)[None, :]
    hidden = torch.zeros(sq, sk, dtype=torch.bool, device=q.device)
    if right >= 0:
        hidden |= j > i + right
    if left >= 0:
        hidden |= j < i - left
    s = s.masked_fill(hidden, float("-inf"))
    col = torch.full((b, hq, sq, 1), float("-inf"), dtype=torch.float64, device=q.device)
    if sinks is not None:
        col = sinks.double().view(1, hq, 1, 1).expand(b, hq, sq, 1)
    p = torch.nan_to_num(torch.softmax(torch.cat([s, col], dim=-1), dim=-1)[..., :sk])
    return (p @ vd).transpose(1, 2)


def test_head_dims_96_192_modifiers():
    """Head dims 96 and 192 and v's 128 beside 192 with a window, a softcap and sinks (the library's
    local kernels at those dims): O against fp64; at (192, 128) also the backward (dq, dk, dv and
    dsinks against fp64 autograd, within 2e-2 of their largest magnitude, as test_window_softcap_backward)."""
    problems = []
    cases = [((96, 96), False, (32, 0), 0.0, False), ((96, 96), True, (-1, -1), 20.0, True),
             ((192, 192), False, (50, 17), 0.0, True), ((192, 192), True, (100, 0), 30.0, False),
             ((192, 128), False, (-1, 40), 0.0, True), ((192, 128), True, (64, 0), 10.0, True)]
    for (dq, dv), causal, window, cap, with_sinks in cases:
        g = torch.Generator(device=DEV).manual_seed(dq + dv + window[0])
        b, sq, sk, hq, hk = 2, 300, 333, 4, 2
        q = torch.randn(b, sq, hq, dq, device=DEV, generator=g).to(torch.bfloat16)
        k = torch.randn(b, sk, hk, dq, device=DEV, generator=g).to(torch.bfloat16)
        v = torch.randn(b, sk, hk, dv, device=DEV, generator=g).to(torch.bfloat16)
        sinks = (torch.randn(hq, device=DEV, generator=g) * 2).float() if with_sinks else None
        out = flashptx.attention(q, k, v, causal=causal, window_size=window, softcap=cap, sinks=sinks)
        assert out.shape == (b, sq, hq, dv), out.shape
        ref = _modified_reference(q, k, v, causal, window, cap, sinks)
        err = (out.double() - ref).abs().max().item()
        tol = 2e-2 * max(1.0, ref.abs().max().item())
        name = "d%d/%d causal=%d window=%r softcap=%g sinks=%d" % (dq, dv, causal, window, cap, with_sinks)
        log("  %s: max err %.3e (bound %.3e)" % (name, err, tol))
        if not err <= tol:
            problems.append("%s: %.3e > %.3e" % (name, err, tol))
        if dv != dq:  # (192, 128): its backward through the same modifiers
            do = torch.randn(b, sq, hq, dv, device=DEV, generator=g).to(torch.bfloat16)
            leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
            sl = sinks.clone().requires_grad_(True) if with_sinks else None
            flashptx.attention(*leaves, causal=causal, window_size=window, softcap=cap, sinks=sl).backward(do)
            got = [t.grad for t in leaves] + ([sl.grad] if with_sinks else [])
            r = [t.double().clone().requires_grad_(True) for t in (q, k, v)]
            rs = sinks.double().clone().requires_grad_(True) if with_sinks else None
            _modified_reference(*r, causal, window, cap, rs).backward(do.double())
            want = [t.grad for t in r] + ([rs.grad] if with_sinks else [])
            for gname, x, r64 in zip(("dq", "dk", "dv", "dsinks"), got, want):
                err = (x.double() - r64).abs().max().item()
                gtol = 2e-2 * max(1.0, r64.abs().max().item())
                log("  %s %s: max err %.3e (bound %.3e)" % (name, gname, err, gtol))
                if not err <= gtol:
                    problems.append("%s %s: %.3e > %.3e" % (name, gname, err, gtol))
    assert not problems, "\n".join(problems)


def test_window_softcap_backward():
    """The backward through a window and a softcap (the fa3_bwd_local kernels), with and without sinks,
    every head dim, both dtypes, GQA, seqlen_q != seqlen_k: dq, dk, dv (and dsinks) against fp64
    autograd of _modified_reference, within 2e-2 of their largest magnitude (the forward's bound for
    these kernels; the C++ suites hold them to FlashAttention's rule); the deterministic backward
    bitwise equal over two runs."""
    problems = []
    cases = [(64, torch.bfloat16, False, (32, 0), 0.0, False), (64, torch.float16, True, (100, -1), 15.0, True),
             (128, torch.bfloat16, False, (-1, -1), 5.0, False), (128, torch.float16, False, (40, 17), 0.0, True),
             (256, torch.bfloat16, True, (64, 0), 10.0, False), (256, torch.float16, False, (0, 80), 3.0, True)]
    for d, dtype, causal, window, cap, with_sinks in cases:
        g = torch.Generator(device=DEV).manual_seed(d + window[0] + int(cap))
        b, sq, sk, hq, hk = 2, 300, 333, 4, 2
        q, k, v, do = (torch.randn(b, n, h, d, device=DEV, generator=g).to(dtype)
                       for n, h in ((sq, hq), (sk, hk), (sk, hk), (sq, hq)))
        sinks = (torch.randn(hq, device=DEV, generator=g) * 2).float() if with_sinks else None
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
        sl = sinks.clone().requires_grad_(True) if with_sinks else None
        out = flashptx.attention(*leaves, causal=causal, window_size=window, softcap=cap, sinks=sl)
        out.backward(do)
        got = [t.grad for t in leaves] + ([sl.grad] if with_sinks else [])
        r = [t.double().clone().requires_grad_(True) for t in (q, k, v)]
        rs = sinks.double().clone().requires_grad_(True) if with_sinks else None
        _modified_reference(*r, causal, window, cap, rs).backward(do.double())
        want = [t.grad for t in r] + ([rs.grad] if with_sinks else [])
        name = "d%d %s causal=%d window=%r softcap=%g sinks=%d" % (d, dtype, causal, window, cap, with_sinks)
        for gname, x, r64 in zip(("dq", "dk", "dv", "dsinks"), got, want):
            err = (x.double() - r64).abs().max().item()
            tol = 2e-2 * max(1.0, r64.abs().max().item())  # as the forward's check of these kernels
            log("  %s %s: max err %.3e (bound %.3e)" % (name, gname, err, tol))
            if not err <= tol:
                problems.append("%s %s: %.3e > %.3e" % (name, gname, err, tol))
        if with_sinks:
            continue
        # Deterministic: two runs bitwise equal.
        runs = []
        for _ in range(2):
            ls = [t.clone().requires_grad_(True) for t in (q, k, v)]
            flashptx.attention(*ls, causal=causal, window_size=window, softcap=cap, deterministic=True).backward(do)
            runs.append([t.grad for t in ls])
        if not all(torch.equal(x, y) for x, y in zip(*runs)):
            problems.append("%s: the deterministic backward differs between two runs" % name)
    assert not problems, "\n".join(problems)


# ---- attention_with_kvcache ------------------------------------------------------------------------------
def _rotate(x, cos, sin, pos, interleaved):
    """Rotary embedding of x [n, heads, d] at positions pos [n] (fp64; cos/sin [seqlen_ro, r / 2]):
    pairs (2i, 2i+1) interleaved, else (i, i + r / 2); dims past r unchanged."""
    x = x.double().clone()
    half = cos.shape[1]
    c, s = cos.double()[pos][:, None, :], sin.double()[pos][:, None, :]
    ia = torch.arange(half, device=x.device) * 2 if interleaved else torch.arange(half, device=x.device)
    ib = ia + 1 if interleaved else ia + half
    a, b = x[..., ia].clone(), x[..., ib].clone()
    x[..., ia], x[..., ib] = a * c - b * s, b * c + a * s
    return x


def _rotate_mag(x, half, interleaved):
    """|x_a| + |x_b| of each rotated element's pair (0 past the rotary dims): the scale of the
    kernel's fp32 rounding in x_a c - x_b s, far above the result's bf16 ulp where the pair cancels."""
    x = x.double()
    m = torch.zeros_like(x)
    ia = torch.arange(half, device=x.device) * 2 if interleaved else torch.arange(half, device=x.device)
    ib = ia + 1 if interleaved else ia + half
    pair = x[..., ia].abs() + x[..., ib].abs()
    m[..., ia], m[..., ib] = pair, pair
    return m


def _kv_ref(q, k, v, causal, scale, dtype):
    """One sequence: q [sq, hq, d], k, v [L, hk, d], in `dtype` throughout (float64: the reference;
    bf16: a same-precision implementation); causal bottom-right; a row that sees no key gives 0 and
    LSE -inf."""
    sq, hq, d = q.shape
    L, hk = k.shape[0], k.shape[1]
    g = hq // hk
    qd, kd, vd = q.to(dtype), k.to(dtype).repeat_interleave(g, dim=1), v.to(dtype).repeat_interleave(g, dim=1)
    s = torch.einsum("qhd,khd->hqk", qd, kd) * scale
    mask = torch.ones(sq, L, dtype=torch.bool, device=q.device)
    if causal:
        mask = mask.tril(L - sq)
    s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s.double(), dim=-1)
    seen = mask.any(dim=-1)[None, :, None]
    p = torch.where(seen, torch.softmax(s, dim=-1), torch.zeros((), dtype=dtype, device=q.device))
    p = torch.nan_to_num(p, nan=0.0)
    o = torch.einsum("hqk,khd->qhd", p, vd)
    return o, lse


def _kv_case(label, problems, *, batch, sq, hq, hk, lens, cap, paged=False, page=64, seqlen_new=0, rotary_dim=0,
             interleaved=True, causal=False, num_splits=0, batch_idx=False, lens_as_int=False, leftpad=None, seed=0,
             d=128):
    """One attention_with_kvcache call against the fp64 reference, the cache after it checked
    (appended rows: V exact, K within one bf16 rounding of the fp64 rotation; everything else
    untouched), the error word 0."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    rnd = lambda *shape: torch.randn(*shape, device=DEV, generator=g).to(torch.bfloat16)
    q = rnd(batch, sq, hq, d)
    knew, vnew = (rnd(batch, seqlen_new, hk, d), rnd(batch, seqlen_new, hk, d)) if seqlen_new else (None, None)
    kw = {}
    if paged:
        max_pages = cap // page
        need = [(l + seqlen_new + page - 1) // page for l in lens]
        pages = sum(need) + 3  # pages no sequence uses
        perm = torch.randperm(pages, device=DEV, generator=g).to(torch.int32)
        table = torch.full((batch, max_pages), -1, dtype=torch.int32, device=DEV)  # unused entries: never read
        at = 0
        for b, n in enumerate(need):
            table[b, :n] = perm[at:at + n]
            at += n
        kc, vc = rnd(pages, page, hk, d), rnd(pages, page, hk, d)
        kw["page_table"] = table
        where = lambda b, j: (table[b, j // page].long(), j % page)
    else:
        rows = batch + (2 if batch_idx else 0)
        kc, vc = rnd(rows, cap, hk, d), rnd(rows, cap, hk, d)
        idx = torch.randperm(rows, device=DEV, generator=g)[:batch].to(torch.int32) if batch_idx else None
        if batch_idx:
            kw["cache_batch_idx"] = idx
        where = lambda b, j: (idx[b].long() if batch_idx else torch.full_like(j, b), j)
    cos = sin = None
    if rotary_dim:
        ang = (torch.rand(cap, rotary_dim // 2, device=DEV, generator=g, dtype=torch.float64) * 2 - 1) * math.pi
        cos, sin = ang.cos().float(), ang.sin().float()
        kw["rotary_cos"], kw["rotary_sin"] = cos, sin
    kw["cache_seqlens"] = lens[0] if lens_as_int else torch.tensor(lens, dtype=torch.int32, device=DEV)
    pad = leftpad or [0] * batch  # sequence b's keys: cache positions [pad[b], lens[b] + seqlen_new)
    if leftpad is not None:
        kw["cache_leftpad"] = torch.tensor(leftpad, dtype=torch.int32, device=DEV)
    k_before, v_before = kc.clone(), vc.clone()
    err = torch.zeros(1, dtype=torch.int32, device=DEV)
    out, lse = flashptx.attention_with_kvcache(q, kc, vc, knew, vnew, causal=causal, num_splits=num_splits,
                                               rotary_interleaved=interleaved, return_softmax_lse=True,
                                               error_word=err, **kw)
    torch.cuda.synchronize()
    scale = d ** -0.5
    # the expected cache: the new rows (rotated in fp64, rounded once) at lens[b] + j
    k_want, v_want = k_before.clone(), v_before.clone()
    written = torch.zeros(kc.shape[:2], dtype=torch.bool, device=DEV)
    k_mag = torch.zeros(kc.shape, dtype=torch.float64, device=DEV)
    q_used = q.double()
    for b in range(batch):
        if seqlen_new:
            pos = torch.arange(lens[b], lens[b] + seqlen_new, device=DEV)
            kn = _rotate(knew[b], cos, sin, pos, interleaved) if rotary_dim else knew[b].double()
            o_, r_ = where(b, pos)
            k_want[o_, r_] = kn.to(torch.bfloat16)
            if rotary_dim:
                k_mag[o_, r_] = _rotate_mag(knew[b], cos.shape[1], interleaved)
            v_want[o_, r_] = vnew[b]
            written[o_, r_] = True
        if rotary_dim:  # the kernel attends with the rotated q rounded to bf16, as this reference
            qpos = lens[b] + (torch.arange(sq, device=DEV) if causal else torch.zeros(sq, dtype=torch.long, device=DEV))
            q_used[b] = _rotate(q[b], cos, sin, qpos, interleaved).to(torch.bfloat16).double()
    if seqlen_new:
        kd, kw_ = kc.double(), k_want.double()
        # one bf16 ulp of the result, plus the fp32 rotation's rounding (2^-20 of the pair's magnitude)
        err_k = (kd - kw_).abs()
        off = err_k > kw_.abs() * 2.0 ** -7 + k_mag * 2.0 ** -20
        n_k = int(off[written].sum())
        n_touched = int((kc != k_want)[~written].sum())
        n_v = int((vc != v_want).sum())
        if n_k or n_touched or n_v:
            worst = ""
            if n_k:
                i = int(torch.argmax(torch.where(written[..., None, None] & off, err_k, torch.zeros_like(err_k))))
                worst = " (worst: got %r, want %r, pair magnitude %r)" % (
                    kd.flatten()[i].item(), kw_.flatten()[i].item(), k_mag.flatten()[i].item())
            problems.append("%s cache: %d appended K elements off by more than one bf16 ulp and the fp32 rotation's "
                            "rounding%s, %d K elements outside the appended rows changed, %d V elements differ"
                            % (label, n_k, worst, n_touched, n_v))
    if int(err.item()) != 0:
        problems.append("%s: error word %d on valid device data" % (label, int(err.item())))
    q_same = q_used.to(torch.bfloat16)
    e_o = e_same = e_lse = 0.0
    inf_mismatch = 0
    for b in range(batch):
        L = lens[b] + seqlen_new
        o_, r_ = where(b, torch.arange(pad[b], L, device=DEV))
        kb, vb = kc[o_, r_], vc[o_, r_]
        o64, l64 = _kv_ref(q_used[b], kb, vb, causal, scale, torch.float64)
        o16, _ = _kv_ref(q_same[b], kb, vb, causal, scale, torch.bfloat16)
        e_o = max(e_o, (out[b].double() - o64).abs().max().item())
        e_same = max(e_same, (o16.double() - o64).abs().max().item())
        got = lse[b].double()
        inf = torch.isinf(l64) | torch.isinf(got)
        inf_mismatch += int((got[inf] != l64[inf]).sum())
        if (~inf).any():
            e_lse = max(e_lse, (got[~inf] - l64[~inf]).abs().max().item())
    bound = 2 * e_same + 1e-5
    log("  %-60s out %.2e<=%.2e  lse %.1e" % (label, e_o, bound, e_lse))
    if not torch.isfinite(out).all():
        problems.append("%s: non-finite output" % label)
    if not e_o <= bound:
        problems.append("%s out: max err %.3e > bound %.3e" % (label, e_o, bound))
    if not e_lse <= 1e-3 or inf_mismatch:
        problems.append("%s lse: max err %.3e (bound 1e-3), %d -inf on one side only" % (label, e_lse, inf_mismatch))
    return out


def test_attention_with_kvcache():
    """attention_with_kvcache against the fp64 reference: contiguous (with cache_batch_idx) and
    paged caches, ragged lengths with 0 and the full cache, GQA and MQA, decode and a chunked
    prefill, split-KV forced and the library's choice, append with and without rotary (both
    layouts; the cache checked after the call), an int cache_seqlens."""
    problems = []
    c = dict(problems=problems)
    _kv_case("contiguous GQA 8/2 decode", batch=4, sq=1, hq=8, hk=2, lens=[0, 1, 300, 512], cap=512, **c)
    _kv_case("contiguous batch_idx causal sq 16 splits 3", batch=3, sq=16, hq=8, hk=2, lens=[5, 200, 1000],
             cap=1024, batch_idx=True, causal=True, num_splits=3, seed=1, **c)
    _kv_case("paged 64 MQA 8/1 decode splits 0", batch=3, sq=1, hq=8, hk=1, lens=[0, 129, 1024], cap=1024,
             paged=True, page=64, seed=2, **c)
    _kv_case("paged 16 causal sq 40 splits 5", batch=2, sq=40, hq=4, hk=2, lens=[10, 333], cap=512, paged=True,
             page=16, causal=True, num_splits=5, seed=3, **c)
    _kv_case("paged 256 decode long", batch=2, sq=1, hq=32, hk=8, lens=[4000, 8191], cap=8192, paged=True,
             page=256, seed=4, **c)
    _kv_case("append 3, no rotary, contiguous", batch=3, sq=3, hq=4, hk=2, lens=[0, 70, 125], cap=128,
             seqlen_new=3, causal=True, seed=5, **c)
    _kv_case("append 1 + rotary 64 interleaved, paged 64", batch=3, sq=1, hq=8, hk=2, lens=[0, 63, 500], cap=512,
             paged=True, seqlen_new=1, rotary_dim=64, interleaved=True, seed=6, **c)
    _kv_case("append 4 + rotary 128 half, causal, splits 2", batch=2, sq=4, hq=4, hk=1, lens=[7, 90], cap=192,
             seqlen_new=4, rotary_dim=128, interleaved=False, causal=True, num_splits=2, seed=7, **c)
    _kv_case("leftpad, contiguous causal sq 8 splits 3", batch=3, sq=8, hq=8, hk=2, lens=[300, 64, 20], cap=512,
             leftpad=[100, 64, 3], causal=True, num_splits=3, seed=9, **c)
    _kv_case("leftpad, paged 64 append 2 + rotary 64", batch=2, sq=2, hq=4, hk=1, lens=[200, 129], cap=320,
             paged=True, seqlen_new=2, rotary_dim=64, leftpad=[130, 0], causal=True, seed=10, **c)
    _kv_case("int cache_seqlens, append 2 + rotary 32, paged 32", batch=2, sq=2, hq=4, hk=2, lens=[100, 100],
             cap=256, paged=True, page=32, seqlen_new=2, rotary_dim=32, interleaved=False, causal=False,
             lens_as_int=True, seed=8, **c)
    assert not problems, "\n".join(problems)


def test_attention_with_kvcache_head_dims():
    """attention_with_kvcache at head_dim 64 and 256 (their own kernels and combines) against the fp64
    reference: contiguous and paged (pages of 16 and 64) caches, ragged lengths with 0 and the full
    cache, GQA and MQA, decode and a chunked prefill, splits 1, several and the library's choice,
    append with and without rotary (partial and whole-head; the cache checked after the call)."""
    problems = []
    c = dict(problems=problems)
    for d in (64, 256):
        s = d * 10
        _kv_case("d%d contiguous GQA 8/2 decode" % d, batch=4, sq=1, hq=8, hk=2, lens=[0, 1, 300, 512], cap=512,
                 d=d, seed=s, **c)
        _kv_case("d%d contiguous batch_idx causal sq 16 splits 3" % d, batch=3, sq=16, hq=8, hk=2,
                 lens=[5, 200, 1000], cap=1024, batch_idx=True, causal=True, num_splits=3, d=d, seed=s + 1, **c)
        _kv_case("d%d paged 64 MQA 8/1 decode splits 0" % d, batch=3, sq=1, hq=8, hk=1, lens=[0, 129, 1024],
                 cap=1024, paged=True, page=64, d=d, seed=s + 2, **c)
        _kv_case("d%d paged 16 causal sq 40 splits 5" % d, batch=2, sq=40, hq=4, hk=2, lens=[10, 333], cap=512,
                 paged=True, page=16, causal=True, num_splits=5, d=d, seed=s + 3, **c)
        _kv_case("d%d append 3, no rotary, contiguous" % d, batch=3, sq=3, hq=4, hk=2, lens=[0, 70, 125], cap=128,
                 seqlen_new=3, causal=True, d=d, seed=s + 4, **c)
        _kv_case("d%d append 1 + rotary %d interleaved, paged 64" % (d, d), batch=3, sq=1, hq=8, hk=2,
                 lens=[0, 63, 511], cap=512, paged=True, seqlen_new=1, rotary_dim=d, interleaved=True, d=d,
                 seed=s + 5, **c)
        _kv_case("d%d append 4 + rotary 32 half, causal, splits 2" % d, batch=2, sq=4, hq=4, hk=1, lens=[7, 90],
                 cap=192, seqlen_new=4, rotary_dim=32, interleaved=False, causal=True, num_splits=2, d=d,
                 seed=s + 6, **c)
    assert not problems, "\n".join(problems)


def test_attention_with_kvcache_cuda_graph():
    """One decode call (paged, split) captured in a CUDA graph, replayed with new lengths and a new
    page table written into the same device tensors: each replay against the fp64 reference."""
    problems = []
    g = torch.Generator(device=DEV).manual_seed(11)
    batch, hq, hk, d, page, max_pages = 2, 8, 2, 128, 64, 8
    pages = batch * max_pages + 4
    q = torch.randn(batch, 1, hq, d, device=DEV, generator=g).to(torch.bfloat16)
    kc = torch.randn(pages, page, hk, d, device=DEV, generator=g).to(torch.bfloat16)
    vc = torch.randn(pages, page, hk, d, device=DEV, generator=g).to(torch.bfloat16)
    lens = torch.tensor([100, 300], dtype=torch.int32, device=DEV)
    table = torch.randperm(pages, device=DEV, generator=g)[:batch * max_pages].to(torch.int32).view(batch, max_pages)
    call = lambda: flashptx.attention_with_kvcache(q, kc, vc, page_table=table, cache_seqlens=lens, num_splits=4,
                                                   return_softmax_lse=True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()  # warm-up outside the capture (the library's first launch loads its modules)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = call()
    for step, new_lens in enumerate(([100, 300], [0, 511], [512, 1], [257, 64])):
        lens.copy_(torch.tensor(new_lens, dtype=torch.int32))
        table.copy_(torch.randperm(pages, device=DEV, generator=g)[:batch * max_pages].to(torch.int32)
                    .view(batch, max_pages))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        for b in range(batch):
            L = new_lens[b]
            j = torch.arange(L, device=DEV)
            kb, vb = kc[table[b, j // page].long(), j % page], vc[table[b, j // page].long(), j % page]
            o64, l64 = _kv_ref(q[b], kb, vb, False, d ** -0.5, torch.float64)
            o16, _ = _kv_ref(q[b], kb, vb, False, d ** -0.5, torch.bfloat16)
            e, bound = (out[b].double() - o64).abs().max().item(), 2 * (o16.double() - o64).abs().max().item() + 1e-5
            label = "graph replay %d lens %s seq %d" % (step, new_lens, b)
            if not e <= bound:
                problems.append("%s: max err %.3e > %.3e" % (label, e, bound))
            if L and not (lse[b].double() - l64).abs().max().item() <= 1e-3:
                problems.append("%s: lse off" % label)
            log("  %-40s out %.2e<=%.2e" % (label, e, bound))
    assert not problems, "\n".join(problems)


def test_attention_with_kvcache_errors():
    """Bad values are ValueError before any launch (the package's checks and the library's)."""
    t = lambda *shape, dtype=torch.bfloat16: torch.randn(*shape, device=DEV).to(dtype)
    f = flashptx.attention_with_kvcache
    q, kc = t(2, 1, 8, 128), t(2, 64, 2, 128)
    lens = torch.tensor([3, 4], dtype=torch.int32, device=DEV)
    expect(ValueError, lambda: f(q, kc, kc, cache_seqlens=lens.long()), "cache_seqlens must be int32")
    expect(ValueError, lambda: f(q, kc, kc, cache_seqlens=lens, window_size=(8, 0)), "no sliding window")
    expect(ValueError, lambda: f(q, kc, kc, cache_seqlens=lens, cache_leftpad=lens.long()), "cache_leftpad must be int32")
    expect(ValueError, lambda: f(q, kc, kc, cache_seqlens=65), "cache_seqlens 65")
    expect(ValueError, lambda: f(q.cpu(), kc.cpu(), kc.cpu(), cache_seqlens=3), "needs CUDA tensors")
    e = expect(ValueError, lambda: f(t(2, 1, 8, 96), t(2, 64, 2, 96), t(2, 64, 2, 96), cache_seqlens=lens),
               "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM", "64, 128 or 256")
    assert isinstance(e, flashptx.FlashptxValueError)
    expect(ValueError, lambda: f(q, t(2, 64, 2, 256)[..., ::2], t(2, 64, 2, 128), cache_seqlens=lens),
           "last dim has stride 2")
    expect(ValueError, lambda: f(q, t(2, 64, 2, 132)[..., :128], t(2, 64, 2, 128), cache_seqlens=lens),
           "FLASHPTX_ERR_MISALIGNED", "k_cache")
    expect(ValueError, lambda: f(q, t(4, 48, 2, 128), t(4, 48, 2, 128), cache_seqlens=lens,
                                 page_table=torch.zeros(2, 2, dtype=torch.int32, device=DEV)), "page_size 48")
    out = f(t(0, 1, 8, 128), kc, kc, cache_seqlens=0)
    assert out.shape == (0, 1, 8, 128)


# ---- flashptx.attention_varlen: packed sequences, cu_seqlens, seqused ------------------------------------
def _varlen_batch(lq, lk, hq, hk, d, dtype, seed):
    """Packed q, k, v, dO (fresh random values in every row, the rows past seqused too) and the
    prefix sums as int32 CUDA tensors."""
    torch.manual_seed(seed)
    tq, tk = sum(lq), sum(lk)
    q = torch.randn(tq, hq, d, device=DEV, dtype=dtype)
    k = torch.randn(tk, hk, d, device=DEV, dtype=dtype)
    v = torch.randn(tk, hk, d, device=DEV, dtype=dtype)
    do = torch.randn(tq, hq, d, device=DEV, dtype=dtype)
    cu = lambda l: torch.tensor([0] + list(__import__("itertools").accumulate(l)), dtype=torch.int32, device=DEV)
    return q, k, v, do, cu(lq), cu(lk)


def _masked_attention(q, k, v, causal, scale):
    """Attention of one sequence, q [n, hq, d], k and v [m, hk, d], in their dtype, causal bottom-right;
    a row that sees no key gets 0 (the softmax of an empty row is taken as 0, not NaN, so that its
    gradients stay finite and leak nowhere). Returns (out, lse) with lse [hq, n] (-inf: no key)."""
    g = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s = torch.einsum("qhd,khd->hqk", q, kk) * scale
    if causal:
        n, m = q.shape[0], k.shape[0]
        mask = torch.ones(n, m, dtype=torch.bool, device=q.device).tril(m - n)
        s = s.masked_fill(~mask, float("-inf"))
    mx = s.amax(dim=-1, keepdim=True).detach()
    mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
    p = torch.exp(s - mx)
    l = p.sum(dim=-1, keepdim=True)
    out = torch.einsum("hqk,khd->qhd", p / l.clamp_min(torch.finfo(l.dtype).tiny), vv)
    lse = (torch.log(l) + mx).squeeze(-1)
    return out, lse


def _varlen_reference(q, k, v, do, lq, lk, uq, uk, causal, scale):
    """Per sequence, its used rows and keys through _masked_attention and autograd: (out, dq, dk, dv)
    packed (zeros past the used lengths, as attention_varlen gives them) and the LSE [heads_q,
    total_q] in float64 (-inf where no key is seen or the row is past seqused_q), in q's dtype."""
    outs = [torch.zeros_like(t) for t in (q, q, k, v)]
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"), dtype=torch.float64, device=DEV)
    cq = ck = 0
    for b in range(len(lq)):
        nq, nk = uq[b], uk[b]
        if nq > 0 and nk > 0:
            x, y, z = (t.detach().clone().requires_grad_(True) for t in (q[cq:cq + nq], k[ck:ck + nk], v[ck:ck + nk]))
            o, l = _masked_attention(x, y, z, causal, scale)
            gx, gy, gz = torch.autograd.grad(o, (x, y, z), do[cq:cq + nq])
            for dst, src, c, n in zip(outs, (o.detach(), gx, gy, gz), (cq, cq, ck, ck), (nq, nq, nk, nk)):
                dst[c:c + n] = src
            lse[:, cq:cq + nq] = l.detach().double()
        cq += lq[b]
        ck += lk[b]
    return outs, lse


def _varlen_case(lq, lk, uq, uk, hq, hk, d, causal, dtype, seed, problems, deterministic=False):
    q, k, v, do, cu_q, cu_k = _varlen_batch(lq, lk, hq, hk, d, dtype, seed)
    sc = 1.0 / math.sqrt(d)
    used_q = torch.tensor(uq, dtype=torch.int32, device=DEV) if uq is not None else None
    used_k = torch.tensor(uk, dtype=torch.int32, device=DEV) if uk is not None else None
    uq, uk = (uq if uq is not None else lq), (uk if uk is not None else lk)

    def run(x, y, z):
        return flashptx.attention_varlen(x, y, z, cu_q, cu_k, max(lq), max(lk), causal=causal, seqused_q=used_q,
                                         seqused_k=used_k, deterministic=deterministic)
    got = run_impl(run, q, k, v, do, True)
    ref, lref = _varlen_reference(q.double(), k.double(), v.double(), do.double(), lq, lk, uq, uk, causal, sc)
    same, _ = _varlen_reference(q, k, v, do, lq, lk, uq, uk, causal, sc)  # in q's dtype
    label = "varlen %s d%d %s h%d/%d lq=%s lk=%s%s%s" % (
        str(dtype).replace("torch.", ""), d, "causal" if causal else "full", hq, hk, lq, lk,
        " seqused_q=%s" % uq if used_q is not None else "", " seqused_k=%s" % uk if used_k is not None else "")
    line = compare(label, got, ref, same, problems)
    _, lse = flashptx.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk), causal=causal, seqused_q=used_q,
                                       seqused_k=used_k, return_lse=True)
    fin = torch.isfinite(lref)
    if not torch.equal(torch.isfinite(lse), fin):
        problems.append("%s lse: finite where the reference is not, or the reverse" % label)
    lerr = (lse.double()[fin] - lref[fin]).abs().max().item() if fin.any() else 0.0
    if not lerr <= 1e-3:
        problems.append("%s lse: max err %.3e > 1e-3" % (label, lerr))
    log("  %-60s %s  lse %.1e" % (label, line, lerr))
    return got


def test_attention_varlen_forward_backward():
    """attention_varlen against the per-sequence reference: ragged lengths (0, 1, block edges, more
    queries than keys), GQA and MHA, causal or not, bf16 and fp16, d64/128/256; out, dq, dk, dv, lse."""
    problems = []
    lq, lk = [1, 0, 70, 130, 9, 300], [1, 40, 0, 150, 100, 257]
    seed = 0
    for d in (64, 128, 256):
        for causal in (False, True):
            for dtype in (torch.bfloat16, torch.float16):
                _varlen_case(lq, lk, None, None, 8, 2 if causal else 8, d, causal, dtype, seed, problems)
                seed += 1
    assert not problems, "\n".join(problems)


def test_attention_varlen_seqused():
    """seqused_q / seqused_k: used lengths 0, 1, partial (inside a block, across an edge) and full;
    rows past them: out 0, lse -inf, zero gradients; the rows' random values never leak in."""
    problems = []
    lq, lk = [70, 600, 9, 64, 300, 0, 1000], [100, 650, 0, 64, 700, 20, 900]
    uq, uk = [33, 600, 0, 1, 300, 0, 517], [65, 7, 0, 64, 0, 20, 129]
    seed = 100
    for d in (64, 128):
        for causal in (False, True):
            _varlen_case(lq, lk, uq, uk, 4, 1 if causal else 4, d, causal, torch.bfloat16, seed, problems)
            seed += 1
    _varlen_case(lq, lk, uq, None, 4, 2, 128, True, torch.float16, seed, problems)  # seqused_q alone
    _varlen_case(lq, lk, None, uk, 4, 2, 256, False, torch.float16, seed + 1, problems)  # seqused_k alone
    assert not problems, "\n".join(problems)


def test_attention_varlen_deterministic_bitwise():
    """deterministic=True: two backward passes give the same bits (with seqused)."""
    problems = []
    lq, lk = [130, 1, 0, 70, 500], [200, 3, 60, 70, 480]
    uq, uk = [100, 1, 0, 70, 257], [200, 0, 60, 33, 480]
    a = _varlen_case(lq, lk, uq, uk, 8, 2, 128, True, torch.bfloat16, 7, problems, deterministic=True)
    b = _varlen_case(lq, lk, uq, uk, 8, 2, 128, True, torch.bfloat16, 7, problems, deterministic=True)
    for name, x, y in zip(("out", "dq", "dk", "dv"), a, b):
        if not torch.equal(x, y):
            problems.append("deterministic %s differs between two runs" % name)
    assert not problems, "\n".join(problems)


def test_attention_varlen_errors_and_compile():
    """Bad values are ValueError before any launch; a window's backward runs (the local varlen kernels:
    its gradient against the per-sequence fixed-length one); torch.compile(fullgraph=True) traces the ops
    and gives eager's bits."""
    q, k, v, do, cu_q, cu_k = _varlen_batch([10, 20], [15, 5], 4, 2, 128, torch.bfloat16, 3)
    f = flashptx.attention_varlen
    i32 = lambda *x: torch.tensor(x, dtype=torch.int32, device=DEV)
    expect(ValueError, lambda: f(q, k, v, cu_q, cu_k, 20, 15, seqused_q=i32(11, 0)), "seqused_q[0] is 11")
    expect(ValueError, lambda: f(q, k, v, cu_q, cu_k, 20, 15, seqused_k=i32(-1, 0)), "seqused_k[0] is -1")
    expect(ValueError, lambda: f(q, k, v, cu_q, cu_k, 20, 15, seqused_k=i32(1, 2, 3)), "3 entries for 2")
    expect(ValueError, lambda: f(q, k, v, cu_q.long(), cu_k, 20, 15), "cu_seqlens_q must be a 1-D int32")
    expect(ValueError, lambda: f(q, k, v, cu_q, cu_k, 19, 15), "max_seqlen_q 19 is below")
    expect(ValueError, lambda: f(q, k, v, i32(0, 10, 31), cu_k, 21, 15), "ends at 31")
    expect(ValueError, lambda: f(q.unsqueeze(0), k, v, cu_q, cu_k, 20, 15), "[total, heads, head_dim]")
    expect(ValueError, lambda: f(q, k, v, cu_q, cu_k, 20, 15, window_size=(-2, 0)), "window_size")
    expect(flashptx.FlashptxValueError, lambda: f(q[..., :80].contiguous(), k[..., :80].contiguous(),
                                                  v[..., :80].contiguous(), cu_q, cu_k, 20, 15), "(80, 80)")
    qg = q.detach().clone().requires_grad_(True)
    out = f(qg, k, v, cu_q, cu_k, 20, 15, window_size=(4, 0), softcap=5.0)
    out.backward(do)
    # The same through the fixed-length backward, sequence by sequence (batch 1 each).
    for s0, s1, k0, k1 in ((0, 10, 0, 15), (10, 30, 15, 20)):
        qs = q[s0:s1].unsqueeze(0).detach().clone().requires_grad_(True)
        o1 = flashptx.attention(qs, k[k0:k1].unsqueeze(0), v[k0:k1].unsqueeze(0), window_size=(4, 0), softcap=5.0)
        o1.backward(do[s0:s1].unsqueeze(0))
        err = (qs.grad[0].double() - qg.grad[s0:s1].double()).abs().max().item()
        assert err <= 2e-2 * max(1.0, qs.grad.abs().max().item()), "varlen window backward: dq off by %.3e" % err
    eager = f(q, k, v, cu_q, cu_k, 20, 15, causal=True)
    compiled = torch.compile(lambda a, b, c: f(a, b, c, cu_q, cu_k, 20, 15, causal=True), fullgraph=True)(q, k, v)
    assert torch.equal(eager, compiled), "compiled attention_varlen differs from eager"


def test_attention_varlen_head_dims_96_192():
    """attention_varlen at head dims 96 and 192 and v's 128 beside 192 (the library's local varlen
    kernels at those dims, plain or with a window and a softcap): O per sequence against fp64
    (_modified_reference), ragged and empty sequences, GQA, bf16 and fp16; O has v's head dim; rows
    past seqused_q are 0; the gradients per sequence against the fixed-length backward's (the d96, d192
    and d192_v128 varlen backward kernels)."""
    problems = []
    lq, lk = [1, 0, 70, 130, 9, 300], [1, 40, 0, 150, 100, 257]
    cases = [((96, 96), False, (-1, -1), 0.0, torch.bfloat16), ((96, 96), True, (32, 0), 0.0, torch.float16),
             ((192, 192), False, (50, 17), 0.0, torch.float16), ((192, 192), True, (-1, -1), 30.0, torch.bfloat16),
             ((192, 128), False, (-1, -1), 0.0, torch.bfloat16), ((192, 128), True, (64, 0), 10.0, torch.float16)]
    cu = lambda l: torch.tensor([0] + list(__import__("itertools").accumulate(l)), dtype=torch.int32, device=DEV)
    cu_q, cu_k = cu(lq), cu(lk)
    for n, ((dq, dv), causal, window, cap, dtype) in enumerate(cases):
        torch.manual_seed(1000 + n)
        hq, hk = 4, 2
        q = torch.randn(sum(lq), hq, dq, device=DEV, dtype=dtype)
        k = torch.randn(sum(lk), hk, dq, device=DEV, dtype=dtype)
        v = torch.randn(sum(lk), hk, dv, device=DEV, dtype=dtype)
        out = flashptx.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk), causal=causal, window_size=window,
                                        softcap=cap)
        assert out.shape == (sum(lq), hq, dv), out.shape
        name = "varlen d%d/%d %s causal=%d window=%r softcap=%g" % (dq, dv, str(dtype).replace("torch.", ""), causal,
                                                                  window, cap)
        err, mag, cq, ck = 0.0, 1.0, 0, 0
        for b in range(len(lq)):
            if lq[b] > 0:
                ref = _modified_reference(q[cq:cq + lq[b]].unsqueeze(0), k[ck:ck + lk[b]].unsqueeze(0),
                                          v[ck:ck + lk[b]].unsqueeze(0), causal, window, cap, None)[0]
                err = max(err, (out[cq:cq + lq[b]].double() - ref).abs().max().item())
                mag = max(mag, ref.abs().max().item())
            cq += lq[b]
            ck += lk[b]
        tol = 2e-2 * mag
        log("  %s: max err %.3e (bound %.3e)" % (name, err, tol))
        if not err <= tol:
            problems.append("%s: %.3e > %.3e" % (name, err, tol))
        # seqused_q: the rows past it are 0
        used = torch.tensor([1, 0, 33, 130, 0, 17], dtype=torch.int32, device=DEV)
        o2 = flashptx.attention_varlen(q, k, v, cu_q, cu_k, max(lq), max(lk), causal=causal, seqused_q=used)
        cq = 0
        for b in range(len(lq)):
            u = used[b].item()
            if lq[b] > u and o2[cq + u:cq + lq[b]].abs().max().item() != 0.0:
                problems.append("%s seqused_q: rows past seqused_q[%d] are not 0" % (name, b))
            cq += lq[b]
        # The varlen backward at 96, 192 and (192, 128) (the d128 and d256 varlen kernels over zero
        # columns; at (192, 128) dv has v's 128 columns): per
        # sequence equal, within the dtype's rounding, to the fixed-length backward of that sequence
        # alone (test_backward_head_dims_96_192 holds that one against fp64); a sequence without query
        # rows gets dk = dv = 0, one without keys dq = 0.
        qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
        o = flashptx.attention_varlen(qg, kg, vg, cu_q, cu_k, max(lq), max(lk), causal=causal, window_size=window,
                                      softcap=cap, deterministic=True)
        do = torch.randn_like(o)
        o.backward(do)
        cq, ck = 0, 0
        for b in range(len(lq)):
            rq, rk = slice(cq, cq + lq[b]), slice(ck, ck + lk[b])
            if lq[b] > 0 and lk[b] > 0:
                fq, fk, fv = (t[r].detach().clone().unsqueeze(0).requires_grad_(True)
                              for t, r in ((q, rq), (k, rk), (v, rk)))
                fo = flashptx.attention(fq, fk, fv, causal=causal, window_size=window, softcap=cap, deterministic=True)
                fo.backward(do[rq].unsqueeze(0))
                for g, got, ref in (("dq", qg.grad[rq], fq.grad[0]), ("dk", kg.grad[rk], fk.grad[0]),
                                    ("dv", vg.grad[rk], fv.grad[0])):
                    e = (got.double() - ref.double()).abs().max().item()
                    bound = 2e-2 * max(ref.double().abs().max().item(), 1e-3)
                    log("  %s backward seq %d %s: max |varlen - fixed| %.3e (bound %.3e)" % (name, b, g, e, bound))
                    if not e <= bound:
                        problems.append("%s backward seq %d %s: %.3e > %.3e" % (name, b, g, e, bound))
            elif lk[b] > 0:  # no query rows
                if kg.grad[rk].abs().max().item() != 0.0 or vg.grad[rk].abs().max().item() != 0.0:
                    problems.append("%s backward seq %d: dk, dv of a sequence without query rows are not 0" % (name, b))
            elif lq[b] > 0:  # no keys
                if qg.grad[rq].abs().max().item() != 0.0:
                    problems.append("%s backward seq %d: dq of a sequence without keys is not 0" % (name, b))
            cq += lq[b]
            ck += lk[b]
    assert not problems, "\n".join(problems)


TESTS = [test_forward_numerics, test_backward_numerics, test_deterministic_bitwise,
         test_head_dim_256_backward, test_backward_head_dims_96_192, test_layouts, test_current_stream_and_empty, test_tile_counter_per_stream,
         test_errors_carry_the_librarys_message, test_opcheck, test_torch_compile_fullgraph,
         test_sinks_forward_backward, test_head_dims_96_192_modifiers, test_window_softcap_backward,
         test_attention_with_kvcache,
         test_attention_with_kvcache_head_dims, test_attention_with_kvcache_cuda_graph,
         test_attention_with_kvcache_errors, test_attention_varlen_forward_backward, test_attention_varlen_seqused,
         test_attention_varlen_deterministic_bitwise, test_attention_varlen_errors_and_compile,
         test_attention_varlen_head_dims_96_192]


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("-k", help="run only the tests whose name contains this")
    args = ap.parse_args()
    if not flashptx.available():
        print("test_gpu: flashptx cannot run here: %s" % flashptx.unavailable_reason())
        print("0 passed, 1 failed")
        return 1
    log("torch %s, CUDA %s, cuDNN %s, %s; library %s" % (torch.__version__, torch.version.cuda,
                                                        torch.backends.cudnn.version(),
                                                        torch.cuda.get_device_name(), flashptx.library_path()))
    results = []
    for fn in TESTS:
        if args.k and args.k not in fn.__name__:
            continue
        t0 = time.time()
        log("%s: %s" % (fn.__name__, (fn.__doc__ or "").strip().split("\n")[0]))
        try:
            fn()
            status, detail = "ok", ""
        except Exception:  # noqa: BLE001 - run every case, report every failure
            status, detail = "FAIL", traceback.format_exc()
        torch.cuda.synchronize()
        results.append({"test": fn.__name__, "status": status, "seconds": round(time.time() - t0, 1), "detail": detail})
        log("%-4s %s (%.1f s)%s" % (status, fn.__name__, time.time() - t0, "\n" + detail if detail else ""))
    npass = sum(r["status"] == "ok" for r in results)
    nfail = len(results) - npass
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "library": flashptx.library_path(), "commit": os.environ.get("FLASHPTX_GIT_COMMIT"),
                       "results": results, "log": LOG}, f, indent=1)
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
