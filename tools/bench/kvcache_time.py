#!/usr/bin/env python3
"""GPU kernel time of the KV-cache forward (flashptx_fwd_kvcache): decode and chunked prefill, beside
the device's copy bandwidth, PyTorch SDPA on the same contiguous cache, and our training forward.

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so python3 tools/bench/kvcache_time.py \
        [--batches 1,8,32,128] [--cache 1024,8192,32768,131072] [--rounds 3] [--max-gib 24] [--out FILE]
        [--sweep-splits 1,2,4,...] [--dims 64,128,256] [--dry-run]

Method (as tools/bench/kernel_time.py): each call 5 times per round under torch.profiler, a 256 MB
L2 flush before each (its fill kernel left out), the sum of the GPU durations of the kernels the call
launched (the attention kernel and, with a split, the combine); rounds interleave the
implementations; the median round is reported. bf16, N(0,1) inputs, at each head dim of --dims
(default 128: the issue's targets are d128's; 64 and 256 have kernels of their own, 4 and 2 stages).

Decode (seqlen_q 1; GQA 32/8 and MQA 32/1; every sequence at the full cache length): the figure of
merit is the cache bytes read per second (K and V of the sequences' used lengths) over the device
copy bandwidth measured in the same run (a 2 GiB device-to-device copy, its read and written bytes
over its time); the issue's target is 0.85, for the contiguous and the paged (page 64) cache. SDPA:
the fastest backend that takes the shape (q [B, Hq, 1, d] against k, v [B, Hkv, S, d] with
enable_gqa), on the same cache. Chunked prefill (seqlen_q 256 against 8k-32k keys, causal bottom-right,
GQA 32/8): TFLOP/s against our training forward on the same q, k, v (flashptx_fwd, seqlen_q != seqlen_k).
Correctness: each configuration's O against SDPA's (fp32 math) on the first sequence.
--sweep-splits N,...: each decode shape's contiguous call also with num_splits forced to each N (the
ones the library accepts), rows "contiguous splits=N": what the plan's split choice leaves.
--dry-run: print the shapes the run would time (after --max-gib) and exit; needs no GPU, torch or
library.
"""
import argparse, ctypes, json, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("--batches", default="1,8,32,128")
ap.add_argument("--cache", default="1024,8192,32768,131072")
ap.add_argument("--prefill-cache", default="8192,32768")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--sweep-splits", default="", help="decode: also time the contiguous call at these num_splits")
ap.add_argument("--max-gib", type=float, default=24.0, help="skip decode shapes whose K+V exceed this")
ap.add_argument("--dims", default="128", help="head dims to time, of 64,128,256")
ap.add_argument("--dry-run", action="store_true", help="print the shapes to time and exit (no GPU needed)")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kvcache_time.json"))
args = ap.parse_args()
DIMS = [int(x) for x in args.dims.split(",") if x]
for _d in DIMS:
    if _d not in (64, 128, 256):
        ap.error("--dims: %d is not a KV-cache head dim (64, 128, 256)" % _d)
HQ = 32


def decode_shapes():
    """(d, hkv, S, B, kv_bytes) of each decode shape, in the order timed; those whose K+V (a
    contiguous and a paged copy both live) exceed --max-gib left out."""
    for D in DIMS:
        for hkv in (8, 1):
            for S in (int(x) for x in args.cache.split(",")):
                for B in (int(x) for x in args.batches.split(",")):
                    kv_bytes = 2 * B * S * hkv * D * 2
                    if kv_bytes <= args.max_gib * 2 ** 30 / 2:
                        yield D, hkv, S, B, kv_bytes


def prefill_shapes():
    """(d, B, Sq, S, hkv) of each chunked-prefill shape."""
    for D in DIMS:
        for S in (int(x) for x in args.prefill_cache.split(",") if x):
            yield D, 4, 256, S, 8


if args.dry_run:
    n = 0
    for D, hkv, S, B, kv_bytes in decode_shapes():
        print("decode  d%-3d B%-4d S%-7d Hq%d Hkv%d  K+V %.2f GiB  (contiguous, paged 64)" %
              (D, B, S, HQ, hkv, kv_bytes / 2 ** 30))
        n += 1
    for D, B, SQ, S, hkv in prefill_shapes():
        print("prefill d%-3d B%-4d Sq%d S%-7d Hq%d Hkv%d causal" % (D, B, SQ, S, HQ, hkv))
        n += 1
    print("%d shapes, %d rounds each%s" % (n, args.rounds,
                                          ", splits swept: " + args.sweep_splits if args.sweep_splits else ""))
    sys.exit(0)

sys.path.insert(0, os.environ.get("PYTHONPATH", "tools/python"))
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from flashptx import _abi
import gpu_time

lib = _abi.library()
dev = torch.device("cuda")
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
_p, _i64, _int, _f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float


# flashptx_kvcache_params: the package's mirror of the header (tools/python/tests/test_cpu.py checks it
# field by field against include/flashptx.h), not a second copy that drifts from it.
KvParams = _abi.KvcacheParams


lib.flashptx_fwd_kvcache.restype = _int
lib.flashptx_fwd_kvcache.argtypes = [ctypes.POINTER(KvParams), _p]
lib.flashptx_fwd_kvcache_workspace_size.restype = _int
lib.flashptx_fwd_kvcache_workspace_size.argtypes = [ctypes.POINTER(KvParams), ctypes.POINTER(_i64)]
lib.flashptx_fwd_kvcache_num_splits.restype = _int
lib.flashptx_fwd_kvcache_num_splits.argtypes = [ctypes.POINTER(KvParams), ctypes.POINTER(_int)]


def gpu_us(fn, reps=5):
    return gpu_time.gpu_us(fn, flush, reps)


def median(xs):
    return sorted(xs)[len(xs) // 2]


def kv_params(q, kc, vc, o, seqlens, page_table=None, page_size=0, causal=False, num_splits=0):
    """The call over a contiguous cache (page_table None) or a paged one; its workspace allocated."""
    p = KvParams()
    B, Sq, Hq, D = q.shape
    p.q, p.k_cache, p.v_cache, p.o = q.data_ptr(), kc.data_ptr(), vc.data_ptr(), o.data_ptr()
    p.cache_seqlens = seqlens.data_ptr()
    p.batch, p.seqlen_q, p.heads_q, p.heads_kv, p.head_dim = B, Sq, Hq, kc.shape[2], D
    p.cache_batch, p.cache_seqlen = kc.shape[0], kc.shape[1]
    if page_table is not None:
        p.page_table = page_table.data_ptr()
        p.max_pages = p.page_table_stride = page_table.shape[1]
    for name, t in (("q", q), ("k", kc), ("v", vc), ("o", o)):
        for x, s in zip(("batch", "row", "head"), t.stride()[:3]):
            setattr(p, name + "_" + x + "_stride", s)
    p.dtype, p.causal, p.softmax_scale, p.num_splits = 0, int(causal), 0.0, num_splits
    need = _i64(0)
    rc = lib.flashptx_fwd_kvcache_workspace_size(ctypes.byref(p), ctypes.byref(need))
    if rc != 0:
        raise RuntimeError("flashptx_fwd_kvcache_workspace_size: status %d" % rc)
    ws = torch.empty(max(need.value, 256), dtype=torch.uint8, device=dev)
    p.workspace, p.workspace_bytes = ws.data_ptr(), need.value
    splits = _int(0)
    lib.flashptx_fwd_kvcache_num_splits(ctypes.byref(p), ctypes.byref(splits))
    return p, ws, splits.value


def run_kv(p):
    rc = lib.flashptx_fwd_kvcache(ctypes.byref(p), stream())
    if rc != 0:
        raise RuntimeError("flashptx_fwd_kvcache: status %d" % rc)


def sdpa_fns(q, k, v, causal):
    """{backend: fn} for the SDPA backends that take [B, H, S, d] views of q, k, v with GQA."""
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    gqa = q.shape[2] != k.shape[2]
    out = {}
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)):
        def f(be=be):
            with sdpa_kernel(be):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=gqa)
        try:
            f(); torch.cuda.synchronize()
            out[name] = f
        except Exception as e:  # noqa: BLE001 - a backend that refuses the shape is left out
            print("  sdpa %s: %s" % (name, str(e).split("\n")[0][:120]), flush=True)
    return out


def reference_b0(q, k, v, causal):
    """fp32 O of sequence 0 (bottom-right causal), [Sq, Hq, d]."""
    Sq, Hq, D = q.shape[1:]
    Sk, Hkv = k.shape[1], k.shape[2]
    kk = k[0].float().repeat_interleave(Hq // Hkv, dim=1)
    vv = v[0].float().repeat_interleave(Hq // Hkv, dim=1)
    s = torch.einsum("ihd,jhd->hij", q[0].float(), kk) * D ** -0.5
    if causal:
        i = torch.arange(Sq, device=dev)[:, None]
        j = torch.arange(Sk, device=dev)[None, :]
        s = s.masked_fill(j > i + Sk - Sq, float("-inf"))
    return torch.einsum("hij,jhd->ihd", torch.softmax(s, dim=-1), vv)


rows = []
# The device copy bandwidth of this run: read + written bytes over the time of a 2 GiB copy.
src = torch.empty(2 << 30, dtype=torch.uint8, device=dev)
dst = torch.empty_like(src)
copy_us = median([gpu_us(lambda: dst.copy_(src)) for _ in range(args.rounds)])
copy_gbs = 2 * src.numel() / copy_us * 1e-3
del src, dst
print("device copy: %.1f us for 2 GiB, %.0f GB/s (read + written)" % (copy_us, copy_gbs), flush=True)
env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
       "cudnn": torch.backends.cudnn.version(), "copy_gbs": copy_gbs}

for D, hkv, S, B, kv_bytes in decode_shapes():
    g = torch.Generator(device=dev).manual_seed(B * 131 + S + hkv + (0 if D == 128 else D))
    q = torch.randn(B, 1, HQ, D, device=dev, generator=g).to(torch.bfloat16)
    k = torch.randn(B, S, hkv, D, device=dev, generator=g).to(torch.bfloat16)
    v = torch.randn(B, S, hkv, D, device=dev, generator=g).to(torch.bfloat16)
    seqlens = torch.full((B,), S, dtype=torch.int32, device=dev)
    # The paged copy: pages of 64 rows in a shuffled order.
    page = 64
    npages = B * S // page
    perm = torch.randperm(npages, device=dev, generator=g)
    table = perm.view(B, S // page).to(torch.int32).contiguous()
    kp = torch.empty(npages, page, hkv, D, device=dev, dtype=torch.bfloat16)
    vp = torch.empty_like(kp)
    kp[perm.long()] = k.reshape(npages, page, hkv, D)
    vp[perm.long()] = v.reshape(npages, page, hkv, D)
    o = torch.empty_like(q)
    impls, splits = {}, {}
    try:
        pc, wsc, splits["contiguous"] = kv_params(q, k, v, o, seqlens)
        pp, wsp, splits["paged64"] = kv_params(q, kp, vp, o, seqlens, table, page)
        impls["contiguous"] = lambda pc=pc: run_kv(pc)
        impls["paged64"] = lambda pp=pp: run_kv(pp)
    except Exception as e:  # noqa: BLE001
        print("B%d S%d Hkv%d: %s" % (B, S, hkv, e), flush=True)
        continue
    for n in (int(x) for x in args.sweep_splits.split(",") if x):
        if n == splits["contiguous"]:
            continue
        try:
            pn, wsn, splits["contiguous splits=%d" % n] = kv_params(q, k, v, o, seqlens, num_splits=n)
            run_kv(pn); torch.cuda.synchronize()
            impls["contiguous splits=%d" % n] = lambda pn=pn, wsn=wsn: run_kv(pn)
        except Exception as e:  # noqa: BLE001 - a count the library refuses for this shape
            print("  num_splits %d: %s" % (n, e), flush=True)
    ref = reference_b0(q, k, v, False)
    errs = {}
    for n, f in impls.items():
        o.fill_(float("nan")); f(); torch.cuda.synchronize()
        errs[n] = (o[0].float() - ref).abs().max().item()
    for n, f in sdpa_fns(q, k, v, False).items():
        impls["sdpa " + n] = f
    times = {n: [] for n in impls}
    for _ in range(args.rounds):
        for n, f in impls.items():
            times[n].append(gpu_us(f))
    line = "decode d%d B%d S%d Hq%d Hkv%d:" % (D, B, S, HQ, hkv)
    for n in impls:
        us = median(times[n])
        gbs = kv_bytes / us * 1e-3
        rows.append({"kind": "decode", "B": B, "S": S, "Hq": HQ, "Hkv": hkv, "d": D, "impl": n, "us": us,
                     "cache_gbs": gbs, "of_copy": gbs / copy_gbs, "splits": splits.get(n),
                     "max_err_b0": errs.get(n)})
        line += " | %s %.1f us %.0f GB/s (%.2f of copy)%s" % (
            n, us, gbs, gbs / copy_gbs, " splits %d err %.1e" % (splits[n], errs[n]) if n in splits else "")
    print(line, flush=True)
    del q, k, v, kp, vp, o, impls, ref

# Chunked prefill: 256 new rows against the cache, causal bottom-right, against the training forward.
for D, B, SQ, S, hkv in prefill_shapes():
    g = torch.Generator(device=dev).manual_seed(S + 7 + (0 if D == 128 else D))
    q = torch.randn(B, SQ, HQ, D, device=dev, generator=g).to(torch.bfloat16)
    k = torch.randn(B, S, hkv, D, device=dev, generator=g).to(torch.bfloat16)
    v = torch.randn(B, S, hkv, D, device=dev, generator=g).to(torch.bfloat16)
    o, o2 = torch.empty_like(q), torch.empty_like(q)
    lse = torch.empty(B, HQ, SQ, device=dev)
    seqlens = torch.full((B,), S, dtype=torch.int32, device=dev)
    pc, wsc, nsplit = kv_params(q, k, v, o, seqlens, causal=True)
    st = lambda t: (t.stride(0), t.stride(1), t.stride(2))
    pf = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o2.data_ptr(),
                          "lse": lse.data_ptr()}, tuple(q.shape), tuple(k.shape),
                         {"q": st(q), "k": st(k), "v": st(v), "o": st(o2)}, 0, True, 0.0)
    impls = {"kvcache": lambda: run_kv(pc),
             "training fwd": lambda: lib.flashptx_fwd(ctypes.byref(pf), stream())}
    ref = reference_b0(q, k, v, True)
    o.fill_(float("nan")); impls["kvcache"](); torch.cuda.synchronize()
    err = (o[0].float() - ref).abs().max().item()
    for n, f in sdpa_fns(q, k, v, True).items():
        impls["sdpa " + n] = f
    times = {n: [] for n in impls}
    for _ in range(args.rounds):
        for n, f in impls.items():
            times[n].append(gpu_us(f))
    pairs = sum(min(S, i + S - SQ + 1) for i in range(SQ))  # visible (query, key) pairs per head
    line = "prefill d%d B%d Sq%d S%d Hq%d Hkv%d (kvcache splits %d, err %.1e):" % (D, B, SQ, S, HQ, hkv, nsplit, err)
    for n in impls:
        us = median(times[n])
        tf = 4.0 * D * B * HQ * pairs / us * 1e-6
        rows.append({"kind": "prefill", "B": B, "Sq": SQ, "S": S, "Hq": HQ, "Hkv": hkv, "d": D, "impl": n,
                     "us": us, "tflops": tf, "splits": nsplit if n == "kvcache" else None,
                     "max_err_b0": err if n == "kvcache" else None})
        line += " | %s %.1f us %.0f TFLOP/s" % (n, us, tf)
    print(line, flush=True)
    del q, k, v, o, o2, impls, ref

with open(args.out, "w") as f:
    json.dump({"environment": env, "rows": rows}, f, indent=1)
print("wrote", args.out)
