#!/usr/bin/env python3
"""GPU kernel time of flashptx (bare C calls) and cuDNN (SDPA), with no host time in the number.

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/kernel_time.py

Why it exists: side_by_side.py times one call between two CUDA events after an untimed 256 MB flush.
That counts whatever host time a call spends beyond the flush (roughly 70 us of GPU work, estimated from HBM bandwidth): about nothing for
flashptx's bare ctypes call (9 us of host time per forward) but a large part of SDPA's (115 us per
forward, 339 us per forward+backward through autograd; tools/python/profile_calls.py). Here each
implementation runs 5 times (flush before each) under torch.profiler, and the number is the sum of
the durations of the GPU work it launched (kernels, memsets), the flush's fill kernel left out, per
call. Gaps between one call's kernels are not counted, for either implementation. Each pair is
measured twice (the "2" columns). bf16, 16k tokens, hidden 2048, bottom-right causal as each
library defines it (square here, so the same mask). This is the script that ran on the H200 on
2026-11-30 (results/h200-2026-11-30-kernel-time.json). Options added since (defaults reproduce it):

    --dims 64,128 --seqlens 1024,4096,8192   the grid points (16k tokens, hidden 2048)
    --breakdown                              per-kernel GPU time of each backward (ours and cuDNN's)
    --fwd-only                               the forward columns only
    --lib-b PATH[,PATH...]                   other libflashptx.so builds (e.g. the previous one),
                                             measured in the same process on the same tensors,
                                             interleaved with the first ("oursb", "oursc", ... columns)
    --out FILE                               the JSON (default $OUT/kernel_time.json): {"environment": GPU,
                                             torch, CUDA, cuDNN, driver; "rows": one per point}
    --static-schedule                        no tile counter (flashptx_fwd_params.tile_counter NULL):
                                             the causal d64 forward on its static schedule
    --fa2                                    FA2 (SDPA's flash backend) columns, both directions
    --det                                    flashptx's deterministic backward ("ours_det_bwd")
    --shapes B,SQ,SK,HQ,HKV,D,C,DT;...       explicit points instead of the grid (C: 1 causal, 0
                                             not; DT: bf16 or fp16), e.g. GQA "4,4096,4096,32,8,128,1,bf16",
                                             cross "8,1024,8192,16,16,128,0,bf16"; a causal point needs
                                             SQ == SK (PyTorch's is_causal is top-left aligned, ours
                                             bottom-right: equal only for square masks)
    --dv N                                   V's (O's, dO's, dV's) head dim at every point, 0: d's
                                             (e.g. --dims 192 --dv 128: DeepSeek's split); FLOPs
                                             counted as 2 b h sq sk (d + dv) per forward; a library
                                             that refuses the pair (cuDNN) loses its columns
"""
import argparse, ctypes, sys, os, json
sys.path.insert(0, os.environ["PYTHONPATH"])
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from flashptx import _abi
import gpu_time
ap = argparse.ArgumentParser()
ap.add_argument("--dims", default="64,128")
ap.add_argument("--seqlens", default="1024,4096,8192")
ap.add_argument("--breakdown", action="store_true")
ap.add_argument("--fwd-only", action="store_true")
ap.add_argument("--lib-b", default=None)
ap.add_argument("--fa2", action="store_true")
ap.add_argument("--det", action="store_true")
ap.add_argument("--shapes", default=None)
ap.add_argument("--static-schedule", action="store_true")
ap.add_argument("--dv", type=int, default=0)
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "kernel_time.json"))
args = ap.parse_args()
lib = _abi.library(); dev = torch.device("cuda")
def load_b(path):
    # A previous build may lack entry points added since (the package's loader insists on all):
    # bind only the forward and backward calls this script makes.
    b = ctypes.CDLL(path)
    for name in ("flashptx_fwd", "flashptx_bwd"):
        restype, argtypes = _abi.SIGNATURES[name]
        getattr(b, name).restype, getattr(b, name).argtypes = restype, argtypes
    return b
libs_b = [load_b(x) for x in args.lib_b.split(",")] if args.lib_b else []  # comma-separated: oursb, oursc, ...
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
st = lambda t: (t.stride(0), t.stride(1), t.stride(2))
def gpu_us(fn, reps=5, per_kernel=None):
    return gpu_time.gpu_us(fn, flush, reps, per_kernel=per_kernel)
rows = []
def points():
    # (b, sq, sk, hq, hkv, d, causal, dtype): the grid (16k tokens, hidden 2048, bf16), or --shapes.
    if args.shapes:
        for item in args.shapes.split(";"):
            f = item.split(",")
            b, sq, sk, hq, hkv, d, c = (int(x) for x in f[:7])
            assert not c or sq == sk, "a causal point needs seqlen_q == seqlen_k: " + item
            yield b, sq, sk, hq, hkv, d, bool(c), f[7] if len(f) > 7 else "bf16"
        return
    for d in (int(x) for x in args.dims.split(",")):
        for s in (int(x) for x in args.seqlens.split(",")):
            for causal in (False, True):
                yield 16384 // s, s, s, 2048 // d, 2048 // d, d, causal, "bf16"
for b, s, sk, h, hkv, d, causal, dt in points():
    g = torch.Generator(device=dev).manual_seed(0)
    tdt = torch.bfloat16 if dt == "bf16" else torch.float16
    dvv = args.dv or d  # V's head dim
    q = torch.randn(b, s, h, d, device=dev, dtype=tdt, generator=g)
    do = torch.randn(b, s, h, dvv, device=dev, dtype=tdt, generator=g)
    k = torch.randn(b, sk, hkv, d, device=dev, dtype=tdt, generator=g)
    v = torch.randn(b, sk, hkv, dvv, device=dev, dtype=tdt, generator=g)
    gqa = {"enable_gqa": True} if hkv != h else {}
    code = 0 if dt == "bf16" else 1
    o, lse = q.new_empty((b, s, h, dvv)), torch.empty(b, h, s, device=dev)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    # The dynamic schedule's tile counter (flashptx_fwd_params.tile_counter; zero, and every call
    # leaves it zero), shared by the builds measured here: they run one after another on one stream.
    # --static-schedule leaves it NULL. (A build older than the field never reads it.)
    ctr = torch.zeros(2, dtype=torch.int32, device=dev)
    f = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(), "lse": lse.data_ptr(), "tile_counter": None if args.static_schedule else ctr.data_ptr()}, tuple(q.shape), tuple(k.shape), {"q": st(q), "k": st(k), "v": st(v), "o": st(o)}, code, causal, 0.0, head_dim_v=args.dv)
    def bwd_call(deterministic):
        # BwdParams on these tensors with a workspace of the size the library asks for (the
        # workspace tensor is kept alive as an attribute of the params).
        bp = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(), "lse": lse.data_ptr(), "dout": do.data_ptr(), "dq": dq.data_ptr(), "dk": dk.data_ptr(), "dv": dv.data_ptr()}, tuple(q.shape), tuple(k.shape), {n: st(t) for n, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv))}, code, causal, 0.0, deterministic, head_dim_v=args.dv)
        need = ctypes.c_int64(0); lib.flashptx_bwd_workspace_size(ctypes.byref(bp), ctypes.byref(need))
        bp._ws = torch.empty(max(1, need.value), dtype=torch.uint8, device=dev)
        bp.workspace, bp.workspace_bytes = bp._ws.data_ptr(), need.value
        return bp
    bp = bwd_call(False)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ours_f = lambda: lib.flashptx_fwd(ctypes.byref(f), stream)
    ours_b = lambda: lib.flashptx_bwd(ctypes.byref(bp), stream)
    assert ours_f() == 0
    has_bwd = not args.fwd_only and ours_b() == 0  # a head dim without a backward kernel: forward only
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    def cud_f():
        with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
    qg, kg, vg = (t.detach().transpose(1, 2).requires_grad_(True) for t in (q, k, v))
    try:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, **gqa)
    except RuntimeError as e:  # cuDNN refuses the shape: cud_b says so when called
        out, out_err = None, e
    dot = do.transpose(1, 2)
    def cud_b():
        if out is None: raise RuntimeError(str(out_err))
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            torch.autograd.grad(out, (qg, kg, vg), dot, retain_graph=True)
    def fa2_pair():
        # FA2 through SDPA's flash backend; (None, None) where it refuses the shape.
        try:
            def f2():
                with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)
            f2()
            q2, k2, v2 = (t.detach().transpose(1, 2).requires_grad_(True) for t in (q, k, v))
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                o2 = F.scaled_dot_product_attention(q2, k2, v2, is_causal=causal, **gqa)
            def b2():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    torch.autograd.grad(o2, (q2, k2, v2), dot, retain_graph=True)
            b2()
            return f2, b2
        except RuntimeError as e:
            print("FA2 refuses d%d s%d: %s" % (d, s, str(e).splitlines()[0]), flush=True)
            return None, None
    fl = 2.0 * b * h * s * sk * (d + dvv) * (0.5 if causal else 1.0)
    r = {"d": d, "s": s, "b": b, "h": h, "causal": causal}
    if args.dv: r["dv"] = dvv
    if args.shapes: r.update({"sk": sk, "hkv": hkv, "dtype": dt})
    plan = [("ours_fwd", ours_f, 1.0), ("cudnn_fwd", cud_f, 1.0)]
    if has_bwd: plan += [("ours_bwd", ours_b, 2.5), ("cudnn_bwd", cud_b, 2.5)]
    if args.dv:  # cuDNN may refuse V's head dim: its columns go, with the reason printed
        for name, fn in (("cudnn_fwd", cud_f), ("cudnn_bwd", cud_b)):
            try:
                fn()
            except RuntimeError as e:
                print("cuDNN refuses d%d/%d s%d (%s): %s" % (d, dvv, s, name, str(e).splitlines()[0]), flush=True)
                plan = [x for x in plan if x[0] != name]
    if args.fa2:
        f2, b2 = fa2_pair()
        if f2 is not None: plan.insert(2, ("fa2_fwd", f2, 1.0))
        if b2 is not None and has_bwd: plan.append(("fa2_bwd", b2, 2.5))
    if args.det and has_bwd:
        bpd = bwd_call(True)
        ours_det = lambda: lib.flashptx_bwd(ctypes.byref(bpd), stream)
        assert ours_det() == 0
        plan.append(("ours_det_bwd", ours_det, 2.5))
    for j, lb in enumerate(libs_b):
        tag = "ours" + "bcdefg"[j]
        ours_bf = (lambda lb: lambda: lb.flashptx_fwd(ctypes.byref(f), stream))(lb)
        ours_bb = (lambda lb: lambda: lb.flashptx_bwd(ctypes.byref(bp), stream))(lb)
        plan.insert(1 + j, (tag + "_fwd", ours_bf, 1.0))
        if has_bwd and ours_bb() == 0: plan.append((tag + "_bwd", ours_bb, 2.5))
    # Correctness of every build measured (variants included), before any timing: max |O - ref| and,
    # for each backward, max |dQ|, |dK|, |dV| - ref| after one call, ref an fp32 SDPA (math backend)
    # of the same inputs with the same dO. Bound: 2^-5 of the reference's largest magnitude (bf16
    # gradients round P, dS and the output at 2^-8 relative); a wrong block, mask or scale breaks it.
    qr, kr, vr = (t.detach().float().transpose(1, 2).requires_grad_(True) for t in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        o_ref32 = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal, **gqa)
    g_ref = [t.transpose(1, 2) for t in torch.autograd.grad(o_ref32, (qr, kr, vr), do.float().transpose(1, 2))]
    o_ref = o_ref32.detach().transpose(1, 2)
    for name, fn, _ in plan:
        if not name.startswith("ours"):
            continue
        if name.endswith("_fwd"):
            o.fill_(float("nan")); fn(); torch.cuda.synchronize()
            r["err_" + name] = float((o.float() - o_ref).abs().max())
            if not r["err_" + name] < 0.05: print("WRONG OUTPUT %s d%d s%d causal=%d: %s" % (name, d, s, causal, r["err_" + name]), flush=True)
        else:  # a backward: it reads the O and LSE our forward wrote above
            assert ours_f() == 0
            for t in (dq, dk, dv): t.fill_(float("nan"))
            fn(); torch.cuda.synchronize()
            for gname, got, ref in (("dq", dq, g_ref[0]), ("dk", dk, g_ref[1]), ("dv", dv, g_ref[2])):
                err, bound = float((got.float() - ref).abs().max()), 2 ** -5 * float(ref.abs().max()) + 1e-4
                r["err_%s_%s" % (name, gname)] = err
                if not err <= bound: print("WRONG GRADIENT %s %s d%d s%d causal=%d: %g > %g" % (name, gname, d, s, causal, err, bound), flush=True)
    for rep in ("", "2"):
        for name, fn, w in plan:
            pk = {} if (args.breakdown and name.endswith("bwd") and rep == "") else None
            us = gpu_us(fn, per_kernel=pk); r[name + rep] = fl * w / (us * 1e-6) / 1e12
            if pk is not None: r[name + "_kernels_us"] = pk
    rows.append(r)
    line = "d%d%s s%d %s GPU-kernel TFLOP/s" % (d, "/%d" % dvv if args.dv else "", s, "causal" if causal else "full  ")
    if args.shapes: line = "b%d sq%d sk%d h%d/%d d%d %s %s GPU-kernel TFLOP/s" % (b, s, sk, h, hkv, d, "causal" if causal else "full", dt)
    for name, _, _ in plan: line += " | %s %.0f/%.0f" % (name, r[name], r[name + "2"])
    print(line, flush=True)
    if args.breakdown:
        for name, _, _ in plan:
            if name + "_kernels_us" in r:
                print("    %s: %s" % (name, ", ".join("%s %.0f us" % (k, v) for k, v in r[name + "_kernels_us"].items())), flush=True)
# What ran: the versions that decide the cuDNN and PyTorch numbers, and the GPU.
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
json.dump({"environment": env, "rows": rows}, open(args.out, "w"), indent=1)
