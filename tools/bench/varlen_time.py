#!/usr/bin/env python3
"""The variable-length forward (flashptx_fwd_varlen) against the padded batch of the same tokens and
against equal lengths of the same token count, on the GPU machine.

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/varlen_time.py \
        [--heads 16] [--dim 128] [--reps 20] [--out FILE]

Mixes (bf16, causal and not): 16 random lengths in 256..4096 (seed 500), one 8192 among 63 x 128,
8 x 2048. Per mix and mask: the median of --reps CUDA-event times of one call, each after an untimed
256 MB memset that evicts L2, for the varlen call, the padded batch (every sequence padded to the
longest, flashptx_fwd) and equal lengths (the same tokens as n sequences of the mean length).
TFLOP/s count the query-key pairs each call computes (varlen: the exact per-sequence pairs, the
causal mask bottom-right aligned). Before any timing each varlen output is checked against an fp32
SDPA of each sequence alone (max |O - ref| < 2^-5); a wrong output stops the script.
"""
import argparse, ctypes, json, os, random, sys
sys.path.insert(0, os.environ["PYTHONPATH"])
import torch, torch.nn.functional as F
from flashptx import _abi

ap = argparse.ArgumentParser()
ap.add_argument("--heads", type=int, default=16)
ap.add_argument("--dim", type=int, default=128)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "varlen_time.json"))
args = ap.parse_args()
lib = _abi.library()
dev = torch.device("cuda")
stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
H, D = args.heads, args.dim


def median_ms(call):
    times = []
    for r in range(args.reps):
        flush.fill_(r & 0xFF)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); assert call() == 0, _abi.library().flashptx_last_error(); b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def pairs(lq, lk, causal):  # query-key pairs a bottom-right aligned mask leaves
    if not causal:
        return lq * lk
    return sum(max(0, min(lk, lk - lq + i + 1)) for i in range(lq))


def fixed(q, k, v, o, b, s, causal):
    st = (s * H * D, H * D, D)
    return _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(), "lse": None},
                           (b, s, H, D), (b, s, H, D), {"q": st, "k": st, "v": st, "o": st}, 0, causal, 0.0)


def time_mix(name, lens, causal):
    n, total, longest = len(lens), sum(lens), max(lens)
    cu = (ctypes.c_int32 * (n + 1))(*[sum(lens[:i]) for i in range(n + 1)])
    g = torch.Generator(device=dev).manual_seed(len(lens) * 1000 + causal)
    # One allocation big enough for the padded batch; the varlen call reads its first total rows.
    q, k, v = (torch.randn(n * longest, H, D, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    vp = _abi.FwdVarlenParams()
    vp.q, vp.k, vp.v, vp.o, vp.lse = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), None
    vp.cu_seqlens_q = vp.cu_seqlens_k = ctypes.cast(cu, ctypes.c_void_p)
    vp.num_seqs, vp.total_q, vp.total_k, vp.max_seqlen_q, vp.max_seqlen_k = n, total, total, longest, longest
    vp.heads_q = vp.heads_kv = H
    vp.head_dim = D
    for t in "qkvo":
        setattr(vp, t + "_row_stride", H * D)
        setattr(vp, t + "_head_stride", D)
    vp.dtype, vp.causal, vp.softmax_scale = 0, int(causal), 0.0
    call_var = lambda: lib.flashptx_fwd_varlen(ctypes.byref(vp), stream)
    assert call_var() == 0, lib.flashptx_last_error()
    torch.cuda.synchronize()
    err = 0.0
    for i in range(n):  # each sequence alone, fp32 SDPA (bottom-right causal = top-left for square)
        a, b = cu[i], cu[i + 1]
        qs, ks, vs = (t[a:b].float().transpose(0, 1) for t in (q, k, v))
        ref = F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal).transpose(0, 1)
        err = max(err, float((o[a:b].float() - ref).abs().max()))
    if not err < 2 ** -5:
        sys.exit("WRONG OUTPUT varlen %s causal=%d: max |O - ref| = %g" % (name, causal, err))
    mean = max(1, total // n)
    pp = fixed(q, k, v, o, n, longest, causal)
    ep = fixed(q, k, v, o, n, mean, causal)
    t_var = median_ms(call_var)
    t_pad = median_ms(lambda: lib.flashptx_fwd(ctypes.byref(pp), stream))
    t_eq = median_ms(lambda: lib.flashptx_fwd(ctypes.byref(ep), stream))
    tf = lambda p, ms: 4.0 * H * D * p / (ms * 1e-3) / 1e12
    f_var = tf(sum(pairs(l, l, causal) for l in lens), t_var)
    f_pad = tf(n * pairs(longest, longest, causal), t_pad)
    f_eq = tf(n * pairs(mean, mean, causal), t_eq)
    row = {"mix": name, "seqs": n, "tokens": total, "max": longest, "d": D, "heads": H, "causal": causal,
           "err_varlen": err, "varlen_ms": t_var, "varlen_tflops": f_var, "padded_ms": t_pad, "padded_tflops": f_pad,
           "equal_ms": t_eq, "equal_tflops": f_eq}
    print("%-22s seqs %3d tokens %7d max %5d %-10s | varlen %8.3f ms %6.1f TFLOP/s | padded %8.3f ms %6.1f | "
          "equal %8.3f ms %6.1f | varlen/padded time %.2f" % (name, n, total, longest, "causal" if causal else "non-causal",
                                                              t_var, f_var, t_pad, f_pad, t_eq, f_eq, t_var / t_pad),
          flush=True)
    return row


rng = random.Random(500)
mixes = [("mixed 256..4096", [rng.randint(256, 4096) for _ in range(16)]),
         ("one 8192 + 63 x 128", [8192] + [128] * 63),
         ("equal 8 x 2048", [2048] * 8)]
rows = [time_mix(name, lens, causal) for causal in (False, True) for name, lens in mixes]
json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, open(args.out, "w"), indent=1)
