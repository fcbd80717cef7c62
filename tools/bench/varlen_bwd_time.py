#!/usr/bin/env python3
"""The variable-length backward (flashptx_bwd_varlen) against the fixed-length backward
(flashptx_bwd) on the padded batch of the same tokens and on equal lengths of the same token count,
on the GPU machine: issue 33's target, the varlen backward within 10% of the padded backward at
equal FLOPs (the "varlen/equal" column: varlen TFLOP/s over equal-length TFLOP/s, target >= 0.9;
"varlen/padded" is over the padded batch's TFLOP/s, its FLOPs counted with the padding).

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/varlen_bwd_time.py \
        [--heads 16] [--dim 128] [--rounds 3] [--deterministic] [--out FILE] [--dry-run]

Mixes (bf16, causal and not; those of tools/bench/varlen_time.py): 16 random lengths in 256..4096
(seed 500), one 8192 among 63 x 128, 8 x 2048 (the control: the three calls have one shape there).
Per mix and mask three backwards, each reading the O and LSE its own forward wrote: the varlen call
(after flashptx_fwd_varlen), the padded batch (every sequence padded to the longest, flashptx_fwd
then flashptx_bwd) and equal lengths (the same tokens as n sequences of the mean length).
Method (as tools/bench/kernel_time.py and kvcache_time.py): each call 5 times per round under
torch.profiler, a 256 MB L2 flush before each (its fill kernel left out), the sum of the GPU
durations of the work the call launched (the backward is several kernels and a memset: preprocess,
main, dQ convert; all counted, the gaps between them not); rounds interleave the three calls; the
median round is reported, and each call's per-kernel time of the first round goes in the JSON.
TFLOP/s count 2.5 x the forward's 4 * pairs * d per head (kernel_time.py's backward factor), pairs
the query-key pairs each call computes (varlen: the exact per-sequence pairs, the causal mask
bottom-right aligned; padded: n x the longest's; equal: n x the mean's). Before any timing the
varlen call's dQ, dK, dV of every sequence are checked against torch autograd of an fp32 SDPA
(math backend) of that sequence alone, with the same dO: max |grad - ref| <= 2^-5 max |ref| + 1e-4,
kernel_time.py's bound for the backward (and the forward's O, max |O - ref| < 2^-5, varlen_time.py's);
a wrong output stops the script. --dry-run prints the plan (lengths, pairs, FLOPs, memory) and the
ctypes layout check without torch, a GPU or the library.
"""
import argparse, ctypes, itertools, json, os, random, sys
sys.path.insert(0, os.environ.get("PYTHONPATH", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")))
from flashptx import _abi  # pure Python (ctypes): no torch, no library loaded until _abi.library()

_p, _i64, _int, _f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float


def parse_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--deterministic", action="store_true", help="every backward in its deterministic mode")
    ap.add_argument("--dry-run", action="store_true", help="print the plan and the layout check; no torch, no GPU")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "varlen_bwd_time.json"))
    return ap.parse_args(argv)


# flashptx_bwd_varlen_params: the package's binding (tools/python/flashptx/_abi.py, whose layout
# tools/python/tests/test_cpu.py holds against the C header), zero-initialised: no window, no softcap,
# no seqused, head_dim_v 0 (V's head dim = head_dim).
BwdVarlenParams = _abi.BwdVarlenParams


# ---- the plan: pure Python ------------------------------------------------------------------------
def mixes():
    rng = random.Random(500)  # varlen_time.py's mixes, drawn the same way
    return [("mixed 256..4096", [rng.randint(256, 4096) for _ in range(16)]),
            ("one 8192 + 63 x 128", [8192] + [128] * 63),
            ("equal 8 x 2048", [2048] * 8)]


def cu_seqlens(lens):
    """The num_seqs + 1 prefix sums of the lengths: [0, l0, l0 + l1, ..., total]."""
    return [0] + list(itertools.accumulate(lens))


def pairs(lq, lk, causal):  # query-key pairs a bottom-right aligned mask leaves
    if not causal:
        return lq * lk
    return sum(max(0, min(lk, lk - lq + i + 1)) for i in range(lq))


def shapes(lens):
    """(n, total, longest, mean): the varlen batch, the padded one (n x longest), the equal one (n x mean)."""
    n, total = len(lens), sum(lens)
    return n, total, max(lens), max(1, total // n)


def bwd_flops(p, heads, dim):
    """Backward FLOPs of `p` query-key pairs per head: 2.5 x the forward's 4 * pairs * d (kernel_time.py)."""
    return 2.5 * 4.0 * heads * dim * p


def call_flops(lens, causal, heads, dim):
    """{call: backward FLOPs} of the three calls of a mix."""
    n, _, longest, mean = shapes(lens)
    return {"varlen": bwd_flops(sum(pairs(l, l, causal) for l in lens), heads, dim),
            "padded": bwd_flops(n * pairs(longest, longest, causal), heads, dim),
            "equal": bwd_flops(n * pairs(mean, mean, causal), heads, dim)}


def device_bytes(lens, heads, dim):
    """Bytes of the buffers main() allocates for a mix (the check's transient fp32 autograd aside):
    q, k, v, dO, dQ, dK, dV over the padded rows, the three O and LSE, and the fp32 accumulators of
    the workspaces (roughly: dQ of each call; the library's exact size comes from its query)."""
    n, total, longest, mean = shapes(lens)
    row = heads * dim
    return (7 * n * longest * row * 2 + (total + n * longest + n * mean) * (row * 2 + heads * 4)
            + (total + n * longest + n * mean) * row * 4)


def varlen_params(ptrs, cu, lens, heads, dim, causal, deterministic):
    """BwdVarlenParams over contiguous packed [total, heads, dim] tensors (pointers {q,k,v,o,lse,dout,
    dq,dk,dv}), `cu` the ctypes int32 array of the prefix sums; the workspace left for the caller."""
    n, total, longest, _ = shapes(lens)
    p = BwdVarlenParams()
    for name in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv"):
        setattr(p, name, ptrs.get(name) or None)
    p.cu_seqlens_q = p.cu_seqlens_k = ctypes.cast(cu, ctypes.c_void_p)
    p.num_seqs, p.total_q, p.total_k, p.max_seqlen_q, p.max_seqlen_k = n, total, total, longest, longest
    p.heads_q = p.heads_kv = heads
    p.head_dim = dim
    for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv"):
        setattr(p, t + "_row_stride", heads * dim)
        setattr(p, t + "_head_stride", dim)
    p.dtype, p.causal, p.softmax_scale, p.deterministic = _abi.FLASHPTX_BF16, int(causal), 0.0, int(deterministic)
    return p


def dry_run(args):
    H, D = args.heads, args.dim
    print("flashptx_bwd_varlen_params: sizeof %d (the package's binding)" % ctypes.sizeof(BwdVarlenParams))
    for name, lens in mixes():
        n, total, longest, mean = shapes(lens)
        cu = cu_seqlens(lens)
        print("%-22s seqs %3d tokens %7d max %5d mean %5d | cu_seqlens %s ... %s | %.1f GiB on the device" % (
            name, n, total, longest, mean, cu[:3], cu[-2:], device_bytes(lens, H, D) / 2 ** 30))
        for causal in (False, True):
            fl = call_flops(lens, causal, H, D)
            print("    %-10s backward GFLOP: %s" % ("causal" if causal else "non-causal",
                                                    ", ".join("%s %.1f" % (k, v / 1e9) for k, v in fl.items())))
    return 0


# ---- the measurement: torch, the GPU and the library ---------------------------------------------
def main(args):
    import torch, torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import gpu_time
    lib = _abi.library()
    lib.flashptx_bwd_varlen.restype = _int
    lib.flashptx_bwd_varlen.argtypes = [ctypes.POINTER(BwdVarlenParams), _p]
    lib.flashptx_bwd_varlen_workspace_size.restype = _int
    lib.flashptx_bwd_varlen_workspace_size.argtypes = [ctypes.POINTER(BwdVarlenParams), ctypes.POINTER(_i64)]
    dev = torch.device("cuda")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    H, D = args.heads, args.dim

    def ok(function, status):
        if status != 0:
            raise _abi.error_for_status(function, status, lib.flashptx_last_error().decode("utf-8", "replace"))

    def gpu_us(fn, reps=5, per_kernel=None):
        return gpu_time.gpu_us(fn, flush, reps, per_kernel=per_kernel)

    def workspace(size_fn, size_name, p):
        # The workspace the library asks for, kept alive as an attribute of the params (torch's
        # allocations are 512-byte aligned: the 256 the header asks for).
        need = _i64(0)
        ok(size_name, size_fn(ctypes.byref(p), ctypes.byref(need)))
        p._ws = torch.empty(max(1, need.value), dtype=torch.uint8, device=dev)
        p.workspace, p.workspace_bytes = p._ws.data_ptr(), need.value
        return p

    def fixed(q, k, v, do, dq, dk, dv, b, s, causal):
        """The fixed-length forward's O and LSE for [b, s, H, D] views of the buffers' first b * s rows
        (written here, once), and the call of the backward on them."""
        o = torch.full((b * s, H, D), float("nan"), device=dev, dtype=torch.bfloat16)
        lse = torch.full((b, H, s), float("nan"), device=dev, dtype=torch.float32)
        st = (s * H * D, H * D, D)
        fp = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(),
                              "lse": lse.data_ptr()}, (b, s, H, D), (b, s, H, D), {t: st for t in "qkvo"}, 0, causal, 0.0)
        ok("flashptx_fwd", lib.flashptx_fwd(ctypes.byref(fp), stream))
        bp = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(),
                              "lse": lse.data_ptr(), "dout": do.data_ptr(), "dq": dq.data_ptr(), "dk": dk.data_ptr(),
                              "dv": dv.data_ptr()}, (b, s, H, D), (b, s, H, D),
                             {t: st for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv")}, 0, causal, 0.0,
                             args.deterministic)
        bp = workspace(lib.flashptx_bwd_workspace_size, "flashptx_bwd_workspace_size", bp)
        bp._keep = (o, lse)
        return lambda: ok("flashptx_bwd", lib.flashptx_bwd(ctypes.byref(bp), stream))

    def time_mix(name, lens, causal):
        n, total, longest, mean = shapes(lens)
        cu = (ctypes.c_int32 * (n + 1))(*cu_seqlens(lens))
        g = torch.Generator(device=dev).manual_seed(len(lens) * 1000 + causal)
        # One allocation big enough for the padded batch; the varlen calls read their first total
        # rows, the equal-length ones their first n * mean. dQ, dK, dV are written by all three.
        q, k, v, do = (torch.randn(n * longest, H, D, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(4))
        dq, dk, dv = (torch.full_like(q, float("nan")) for _ in range(3))
        o = torch.full((total, H, D), float("nan"), device=dev, dtype=torch.bfloat16)
        lse = torch.full((H, total), float("nan"), device=dev, dtype=torch.float32)
        vp = _abi.FwdVarlenParams()
        vp.q, vp.k, vp.v, vp.o, vp.lse = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr()
        vp.cu_seqlens_q = vp.cu_seqlens_k = ctypes.cast(cu, ctypes.c_void_p)
        vp.num_seqs, vp.total_q, vp.total_k, vp.max_seqlen_q, vp.max_seqlen_k = n, total, total, longest, longest
        vp.heads_q = vp.heads_kv = H
        vp.head_dim = D
        for t in "qkvo":
            setattr(vp, t + "_row_stride", H * D)
            setattr(vp, t + "_head_stride", D)
        vp.dtype, vp.causal, vp.softmax_scale = 0, int(causal), 0.0
        ok("flashptx_fwd_varlen", lib.flashptx_fwd_varlen(ctypes.byref(vp), stream))
        bp = varlen_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(),
                            "lse": lse.data_ptr(), "dout": do.data_ptr(), "dq": dq.data_ptr(), "dk": dk.data_ptr(),
                            "dv": dv.data_ptr()}, cu, lens, H, D, causal, args.deterministic)
        bp = workspace(lib.flashptx_bwd_varlen_workspace_size, "flashptx_bwd_varlen_workspace_size", bp)
        call_var = lambda: ok("flashptx_bwd_varlen", lib.flashptx_bwd_varlen(ctypes.byref(bp), stream))
        call_var()
        torch.cuda.synchronize()
        # Every sequence alone, fp32 SDPA (math backend) and its autograd with the same dO (bottom-right
        # causal = top-left for a square mask, which every sequence here has).
        err = {"o": 0.0, "dq": 0.0, "dk": 0.0, "dv": 0.0}
        for i in range(n):
            a, b = cu[i], cu[i + 1]
            qs, ks, vs = (t[a:b].detach().float().transpose(0, 1).requires_grad_(True) for t in (q, k, v))
            with sdpa_kernel(SDPBackend.MATH):
                ref = F.scaled_dot_product_attention(qs, ks, vs, is_causal=causal)
            grads = torch.autograd.grad(ref, (qs, ks, vs), do[a:b].float().transpose(0, 1))
            e = float((o[a:b].float() - ref.detach().transpose(0, 1)).abs().max())
            err["o"] = max(err["o"], e)
            if not e < 2 ** -5:
                sys.exit("WRONG OUTPUT varlen forward %s causal=%d seq %d: max |O - ref| = %g" % (name, causal, i, e))
            for gname, got, gref in (("dq", dq, grads[0]), ("dk", dk, grads[1]), ("dv", dv, grads[2])):
                gref = gref.transpose(0, 1)
                e, bound = float((got[a:b].float() - gref).abs().max()), 2 ** -5 * float(gref.abs().max()) + 1e-4
                err[gname] = max(err[gname], e)
                if not e <= bound:  # NaN (a row never written) fails too
                    sys.exit("WRONG GRADIENT varlen %s %s causal=%d seq %d (rows %d..%d): max |%s - ref| = %g > %g"
                             % (name, gname, causal, i, a, b, gname, e, bound))
            del qs, ks, vs, ref, grads
        plan = [("varlen", call_var), ("padded", fixed(q, k, v, do, dq, dk, dv, n, longest, causal)),
                ("equal", fixed(q, k, v, do, dq, dk, dv, n, mean, causal))]
        times, kernels = {c: [] for c, _ in plan}, {c: {} for c, _ in plan}
        for r in range(args.rounds):
            for c, fn in plan:
                times[c].append(gpu_us(fn, per_kernel=kernels[c] if r == 0 else None))
        fl = call_flops(lens, causal, H, D)
        us = {c: sorted(t)[len(t) // 2] for c, t in times.items()}
        tf = {c: fl[c] / (us[c] * 1e-6) / 1e12 for c in us}
        row = {"mix": name, "lens": lens, "seqs": n, "tokens": total, "max": longest, "mean": mean, "d": D,
               "heads": H, "causal": causal, "deterministic": args.deterministic,
               "workspace_bytes_varlen": bp.workspace_bytes}
        row.update({"err_varlen_" + g: e for g, e in err.items()})
        for c in us:
            row.update({c + "_us": us[c], c + "_us_rounds": times[c], c + "_tflops": tf[c], c + "_flops": fl[c],
                        c + "_kernels_us": kernels[c]})
        row["varlen_over_equal"] = tf["varlen"] / tf["equal"]
        row["varlen_over_padded"] = tf["varlen"] / tf["padded"]  # TFLOP/s over TFLOP/s (padded: counted with its padding)
        row["varlen_over_padded_time"] = us["varlen"] / us["padded"]
        print("%-22s seqs %3d tokens %7d max %5d %-10s | varlen %9.1f us %6.1f TFLOP/s | padded %9.1f us %6.1f | "
              "equal %9.1f us %6.1f | TFLOP/s varlen/equal %.3f varlen/padded %.3f" % (
                  name, n, total, longest, "causal" if causal else "non-causal", us["varlen"], tf["varlen"],
                  us["padded"], tf["padded"], us["equal"], tf["equal"], row["varlen_over_equal"],
                  row["varlen_over_padded"]), flush=True)
        return row

    rows = [time_mix(name, lens, causal) for causal in (False, True) for name, lens in mixes()]

    # What ran: the versions and the GPU.
    def driver_version():
        try:
            import subprocess
            return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            return None
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version(), "driver": driver_version(), "flashptx_lib": _abi.library_path(),
           "argv": sys.argv[1:]}
    print("environment: " + ", ".join("%s %s" % kv for kv in env.items() if kv[0] != "argv"), flush=True)
    with open(args.out, "w") as f:
        json.dump({"environment": env, "rows": rows}, f, indent=1)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    a = parse_args()
    sys.exit(dry_run(a) if a.dry_run else main(a))
