#!/usr/bin/env python3
"""GPU kernel time of the FP8 forward (flashptx_fwd_fp8), beside our bf16 forward and cuDNN's bf16
(SDPA) on the same shapes, on the GPU machine. Also a correctness look at every library given.

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/fp8_time.py \
        [--lib-b PATH,PATH] [--shapes B,S,H,D,C;...] [--vt] [--rounds 3]

Method (as tools/bench/kernel_time.py): each implementation runs 5 times per round, a 256 MB flush
before each call, under torch.profiler; the number is the sum of the GPU durations of the kernels it
launched (the flush's fill kernel left out), per call. Rounds alternate the implementations (ours
FP8 in every library given, ours bf16, cuDNN bf16), and the median round is reported. TFLOP/s count
4 B H S^2 d (halved under the causal mask), the FA3 paper's convention.

Inputs: N(0,1) Q, K, V (bf16 for the bf16 kernels); e4m3 codes with descales of --gran (default per
block: one per 128 rows of a (batch, head), the amax / 448 of the block; per head, per tensor),
quantized here by PyTorch, so the FP8 kernels see exactly the same tensors. --vt also times the V^T input layout (FLASHPTX_FP8_V_KEYS_CONTIGUOUS:
no transpose in the kernel). Correctness: max |O - ref| and RMS of O - ref against an fp32 SDPA of
the dequantized inputs, and each extra library against the first (bitwise equal or the max diff).
"""
import argparse, ctypes, json, os, sys
sys.path.insert(0, os.environ["PYTHONPATH"])
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from flashptx import _abi
import gpu_time

ap = argparse.ArgumentParser()
ap.add_argument("--lib-b", default=None)
ap.add_argument("--shapes", default="2,8192,16,128,0;1,16384,16,256,0")
ap.add_argument("--vt", action="store_true")
ap.add_argument("--gran", type=int, default=2, help="descale granularity: 0 per tensor, 1 per head, 2 per block")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--grid", action="store_true", help="the FA3 grid: d 64/128/256 x seqlen 512..16k x causal, 16k tokens, hidden 2048")
ap.add_argument("--no-bf16", action="store_true")
ap.add_argument("--check-only", action="store_true")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "fp8_time.json"))
args = ap.parse_args()


class Fp8Params(ctypes.Structure):  # include/flashptx.h flashptx_fwd_fp8_params (256 bytes)
    _fields_ = ([(n, ctypes.c_void_p) for n in ("q", "k", "v", "o", "lse", "dq", "dk", "dv")] +
                [(n, ctypes.c_int64) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim",
                                               "qsb", "qsr", "qsh", "ksb", "ksr", "ksh", "vsb", "vsr", "vsh", "vsd",
                                               "osb", "osr", "osh")] +
                [(n, ctypes.c_int) for n in ("qdt", "kdt", "vdt", "odt", "qg", "kg", "vg", "v_layout", "causal")] +
                [("softmax_scale", ctypes.c_float)])


assert ctypes.sizeof(Fp8Params) == 256


def load(path):
    b = ctypes.CDLL(path)
    b.flashptx_fwd_fp8.restype, b.flashptx_fwd_fp8.argtypes = ctypes.c_int, [ctypes.POINTER(Fp8Params), ctypes.c_void_p]
    b.flashptx_fwd_fp8_params_contiguous.restype = None
    b.flashptx_fwd_fp8_params_contiguous.argtypes = ([ctypes.POINTER(Fp8Params)] + [ctypes.c_void_p] * 8 +
                                                     [ctypes.c_int64] * 6 + [ctypes.c_int, ctypes.c_int])
    restype, argtypes = _abi.SIGNATURES["flashptx_fwd"]
    b.flashptx_fwd.restype, b.flashptx_fwd.argtypes = restype, argtypes
    return b


lib_paths = [_abi.library_path()] + (args.lib_b.split(",") if args.lib_b else [])
libs = [load(p) for p in lib_paths]
names = ["fp8" if i == 0 else "fp8" + chr(ord("b") + i - 1) for i in range(len(libs))]
dev = torch.device("cuda")
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def gpu_us(fn, reps=5):
    return gpu_time.gpu_us(fn, flush, reps)


def quantize(x):  # x [B, S, H, D] fp32 -> e4m3, descales by --gran (laid out [B, H, nb] then reduced)
    B, S, H, D = x.shape
    nb = (S + 127) // 128
    xp = torch.zeros(B, nb * 128, H, D, device=dev); xp[:, :S] = x
    amax = xp.view(B, nb, 128, H, D).abs().amax(dim=(2, 4)).permute(0, 2, 1).contiguous()  # [B, H, nb]
    if args.gran == 1:
        amax = amax.amax(dim=2, keepdim=True).expand(B, H, nb)
    elif args.gran == 0:
        amax = amax.amax().expand(B, H, nb)
    ds = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    scale = (1.0 / ds).permute(0, 2, 1)[:, :, None, :, None].expand(B, nb, 128, H, 1).reshape(B, nb * 128, H, 1)[:, :S]
    x8 = (x * scale).to(torch.float8_e4m3fn)
    deq = x8.float() / scale
    ds_given = ds if args.gran == 2 else ds[:, :, 0].contiguous() if args.gran == 1 else ds[:1, :1, 0].contiguous()
    return x8.contiguous(), ds_given.contiguous(), deq


rows = []
if args.grid:
    args.shapes = ";".join(f"{16384 // s},{s},{2048 // d},{d},{c}" for d in (64, 128, 256)
                           for s in (512, 1024, 2048, 4096, 8192, 16384) for c in (0, 1))
for item in args.shapes.split(";"):
    B, S, H, D, C = (int(v) for v in item.split(","))
    causal = bool(C)
    g = torch.Generator(device=dev).manual_seed(S * 3 + D + C)
    x = [torch.randn(B, S, H, D, device=dev, generator=g) for _ in range(3)]
    (q8, dsq, qd), (k8, dsk, kd), (v8, dsv, vd) = (quantize(t) for t in x)
    vt8 = v8.permute(0, 2, 3, 1).contiguous()  # [B, H, D, S]: keys contiguous
    o = torch.empty(B, S, H, D, device=dev, dtype=torch.bfloat16)
    lse = torch.empty(B, H, S, device=dev)

    def params(lb, vt):
        p = Fp8Params()
        lb.flashptx_fwd_fp8_params_contiguous(ctypes.byref(p), q8.data_ptr(), k8.data_ptr(), v8.data_ptr(), o.data_ptr(),
                                              lse.data_ptr(), dsq.data_ptr(), dsk.data_ptr(), dsv.data_ptr(),
                                              B, S, S, H, H, D, args.gran, C)
        if vt:
            p.v = vt8.data_ptr(); p.v_layout = 1
            p.vsb, p.vsh, p.vsd, p.vsr = H * D * S, D * S, S, 1
        return p

    # Correctness: the dequantized inputs through fp32 SDPA.
    qt, kt, vt_ = (t.transpose(1, 2) for t in (qd, kd, vd))
    ref = F.scaled_dot_product_attention(qt, kt, vt_, is_causal=causal).transpose(1, 2) if S * S * B * H <= 2 ** 31 else None
    first = None
    failed = set()
    for lb, nm in zip(libs, names):
        for vt in ([False, True] if args.vt else [False]):
            o.fill_(float("nan"))
            p = params(lb, vt)
            rc = lb.flashptx_fwd_fp8(ctypes.byref(p), stream()); torch.cuda.synchronize()
            if rc != 0:
                failed.add(nm + ("_vt" if vt else ""))
            msg = f"B{B} S{S} H{H} d{D} causal={C} {nm}{' vt' if vt else ''}: rc={rc}"
            if ref is not None:
                e = (o.float() - ref)
                msg += f" max|O-ref|={e.abs().max().item():.3e} rms={e.pow(2).mean().sqrt().item():.3e}"
            if first is None:
                first = o.clone()
            else:
                msg += f" same_as_first={torch.equal(o, first)} maxdiff={(o.float() - first.float()).abs().max().item():.3e}"
            print(msg, flush=True)
    if args.check_only:
        continue
    del ref, qt, kt, vt_
    impls = {}
    for lb, nm in zip(libs, names):
        pr = params(lb, False)
        if nm not in failed:
            impls[nm] = (lambda lb=lb, pr=pr: lb.flashptx_fwd_fp8(ctypes.byref(pr), stream()))
        if args.vt and nm + "_vt" not in failed:
            pv = params(lb, True)
            impls[nm + "_vt"] = (lambda lb=lb, pv=pv: lb.flashptx_fwd_fp8(ctypes.byref(pv), stream()))
    if not args.no_bf16:
        qb, kb, vb = (t.to(torch.bfloat16) for t in x)
        ob = torch.empty_like(qb); lseb = torch.empty(B, H, S, device=dev)
        st = lambda t: (t.stride(0), t.stride(1), t.stride(2))
        fb = _abi.fwd_params({"q": qb.data_ptr(), "k": kb.data_ptr(), "v": vb.data_ptr(), "o": ob.data_ptr(), "lse": lseb.data_ptr()},
                             tuple(qb.shape), tuple(kb.shape), {"q": st(qb), "k": st(kb), "v": st(vb), "o": st(ob)}, 0, causal, 0.0)
        impls["bf16"] = lambda: libs[0].flashptx_fwd(ctypes.byref(fb), stream())
        qc, kc, vc = (t.transpose(1, 2) for t in (qb, kb, vb))

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qc, kc, vc, is_causal=causal)
        impls["cudnn_bf16"] = cudnn
    times = {k: [] for k in impls}
    for r in range(args.rounds):
        for k, fn in impls.items():
            times[k].append(gpu_us(fn))
    flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
    row = {"B": B, "S": S, "H": H, "D": D, "causal": C}
    line = f"B{B} S{S} H{H} d{D} causal={C}:"
    for k, ts in times.items():
        us = max(sorted(ts)[len(ts) // 2], 1e-9)
        row[k + "_us"] = us; row[k + "_tflops"] = flops / us * 1e-6
        line += f" {k} {us:.1f} us {flops / us * 1e-6:.0f}"
    print(line, flush=True)
    rows.append(row)
with open(args.out, "w") as f:
    json.dump(rows, f, indent=1)
