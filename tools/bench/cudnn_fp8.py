#!/usr/bin/env python3
"""GPU kernel time of cuDNN's FP8 SDPA forward (cuDNN frontend graph API, `graph.sdpa_fp8`) beside
flashptx's FP8 forward (flashptx_fwd_fp8), on the same shapes and the same e4m3 bytes, with a
correctness look at both against an fp32 SDPA of the dequantized inputs.

Setup on the GPU machine (torch's venv holds the cuDNN backend as the pip package nvidia-cudnn-cu13;
the frontend wheel is installed beside it, without its dependencies: they are not needed for the
cuDNN-backend path this script uses):

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PYTHONPATH
    FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/cudnn_fp8.py \
        [--shapes B,S,H,D,C[,HKV];...] [--grid] [--rounds 3] [--gran 1] [--check-only] [--out FILE]

libcudnn.so.9: the frontend dlopens the backend at `import cudnn` (first from the directories of
LD_LIBRARY_PATH, then site-packages/nvidia/cudnn/lib, then the plain soname). This script imports
torch first, takes the libcudnn.so.9 torch itself loaded (from /proc/self/maps), else the first one
found in nvidia.cudnn's lib directory, torch/lib or site-packages/nvidia/*/lib, preloads it with
ctypes.CDLL(path, RTLD_GLOBAL) and puts its directory first in os.environ["LD_LIBRARY_PATH"] before
`import cudnn`, so frontend and torch use the one library. It prints every place it looked. To
force a library: CUDNN_FP8_LIBCUDNN=/path/libcudnn.so.9. Frontend logs: CUDNN_FRONTEND_LOG_INFO=1
CUDNN_FRONTEND_LOG_FILE=stdout.

The cuDNN graph: q, k, v FP8_E4M3 [B, H, S, D] dims over the physical [B, S, H, D] tensors flashptx
reads (strides (S*H*D, D, H*D, 1)); k and v with HKV heads for GQA; descale_q/k/v [1,1,1,1] fp32
(cuDNN's FP8 SDPA takes per-tensor scales only), descale_s = 1/448, scale_s = 448 (P <= 1; the
frontend's own advice for E4M3 without dropout), scale_o 1 for a bf16 O or 448/amax(O) (amax taken
from flashptx's output) for an e4m3 O; generate_stats=False (the non-deprecated spelling of
is_inference=True); attn_scale 1/sqrt(d); causal as diagonal_alignment TOP_LEFT (or --cudnn-causal
bottom_right) with right_bound 0: the same mask as flashptx's bottom-right one for these square
shapes. Amax_O is an output; Amax_S is declared an output too on the first try (that keeps the graph
on cuDNN backend engines: the frontend's python engines decline it). The variants tried per shape,
in order, until one builds: O bf16 with Amax_S, O bf16 without, O e4m3 with, O e4m3 without
(--o-type bf16 / fp8 keeps only that O type). Every failure is printed; a shape whose cuDNN graph
never builds still gets the flashptx columns. The JSON row says which variant ran (cudnn_o_dtype,
cudnn_amax_s_output), the plan name, whether it is a cuDNN backend engine, and the kernel names.

Method (as tools/bench/fp8_time.py): N(0,1) inputs quantized here by PyTorch; each implementation
runs 5 times per round, a 256 MB L2 flush before each call, under torch.profiler; the number is the
sum of the GPU durations of the work it launched (the flush's fill kernel left out), per call;
rounds alternate the implementations; the median round is reported. TFLOP/s = 4 B H S^2 d (halved
under the causal mask). Columns:
    fp8      flashptx, descales of --gran (1: per (batch, head), default; 0: per tensor)
    fp8_pt   flashptx, per-tensor descales, on the very tensors cuDNN reads (only when --gran != 0;
             with --gran 0 "fp8" already reads them)
    cudnn    cuDNN FP8 SDPA forward (per tensor: its only scaling)
flashptx writes its LSE (as in fp8_time.py); cuDNN writes none (inference graph).

Correctness: max |O - ref|, RMS of O - ref and RMS relative to RMS(ref), against an fp32 SDPA of
the dequantized tensors that implementation read, on batch 0 and the first query heads (one head
at a time, so any shape fits); "SUSPECT" when the relative RMS exceeds 0.2 (a misconfigured scale
gives errors of order 1). Also cuDNN against flashptx fp8_pt (the same bytes).
"""
import argparse
import ctypes
import glob
import json
import math
import os
import sys
import traceback

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--shapes", default="2,8192,16,128,0;2,8192,16,128,1;1,16384,8,256,0;2,8192,64,128,0;"
                                    "2,8192,64,128,0,8;2,8192,64,128,1,8",
                help="B,S,H,D,C[,HKV];... (C 1: causal; HKV: K/V heads, default H). The default ends with "
                     "the d128 8k batch-2 64/8-head GQA point of cuDNN's published figure, full and causal")
ap.add_argument("--grid", action="store_true",
                help="the FA3 grid instead (as fp8_time.py): d 64/128/256 x seqlen 512..16k x causal, 16k tokens, hidden 2048")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--gran", type=int, default=1, choices=(0, 1), help="flashptx descale granularity: 0 per tensor, 1 per head")
ap.add_argument("--o-type", default="auto", choices=("auto", "bf16", "fp8"), help="cuDNN O dtype (auto: bf16, else e4m3)")
ap.add_argument("--cudnn-causal", default="top_left", choices=("top_left", "bottom_right"),
                help="cuDNN's causal diagonal alignment (equal for square shapes)")
ap.add_argument("--scale-s", type=float, default=448.0, help="cuDNN scale_s (descale_s = 1/scale_s)")
ap.add_argument("--no-flashptx", action="store_true", help="cuDNN alone (no libflashptx.so needed)")
ap.add_argument("--check-only", action="store_true", help="correctness only, no timing")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "cudnn_fp8.json"))
args = ap.parse_args()

# ---- torch, then libcudnn.so.9, then the frontend ------------------------------------------------
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import gpu_time  # noqa: E402


def find_libcudnn():
    """(path or None, [places looked]). Prefers the libcudnn.so.9 torch has loaded."""
    looked = []
    forced = os.environ.get("CUDNN_FP8_LIBCUDNN")
    if forced:
        looked.append("CUDNN_FP8_LIBCUDNN=" + forced)
        if os.path.exists(forced):
            return forced, looked
    try:
        torch.backends.cudnn.version()  # makes torch load its cuDNN if it has not yet
    except Exception as e:  # noqa: BLE001
        looked.append(f"torch.backends.cudnn.version() raised {e!r}")
    looked.append("/proc/self/maps")
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1] if line.strip() else ""
                if os.path.basename(p).startswith("libcudnn.so"):
                    return p, looked
    except OSError as e:
        looked.append(f"(/proc/self/maps unreadable: {e})")
    dirs = []
    try:
        import nvidia.cudnn as nc  # the nvidia-cudnn-cuXX wheel (a namespace package)
        dirs += [os.path.join(p, "lib") for p in list(getattr(nc, "__path__", []))]
    except Exception as e:  # noqa: BLE001
        looked.append(f"(import nvidia.cudnn failed: {e!r})")
    dirs.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
    import site
    import sysconfig
    sp = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    try:
        sp += site.getsitepackages()
    except Exception:  # noqa: BLE001
        pass
    sp.append(os.path.dirname(os.path.dirname(torch.__file__)))
    for s in dict.fromkeys(sp):
        dirs += sorted(glob.glob(os.path.join(s, "nvidia", "*", "lib")))
    for d in dict.fromkeys(dirs):
        looked.append(d)
        for n in ("libcudnn.so.9", "libcudnn.so"):
            if os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n), looked
    return None, looked


libcudnn, looked = find_libcudnn()
print("libcudnn.so.9: looked at " + "; ".join(looked), flush=True)
if libcudnn:
    print(f"libcudnn.so.9: using {libcudnn}", flush=True)
    try:
        ctypes.CDLL(libcudnn, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        print(f"libcudnn.so.9: preload of {libcudnn} failed: {e}", flush=True)
    os.environ["LD_LIBRARY_PATH"] = os.path.dirname(libcudnn) + (
        os.pathsep + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
else:
    print("libcudnn.so.9: NOT FOUND in any of those places; `import cudnn` will try the plain soname", flush=True)

try:
    import cudnn  # noqa: E402
    print(f"cudnn frontend {cudnn.__version__} from {os.path.dirname(cudnn.__file__)}, backend "
          f"{cudnn.backend_version_string()}; torch {torch.__version__}, torch's cuDNN {torch.backends.cudnn.version()}",
          flush=True)
except Exception as e:  # noqa: BLE001
    traceback.print_exc()
    print(f"import cudnn FAILED ({e!r}); libcudnn looked at: {looked}; sys.path has: "
          f"{[p for p in sys.path if 'site' in p or 'tmp' in p]}. The cuDNN columns are skipped.", flush=True)
    cudnn = None

# ---- flashptx (as tools/bench/fp8_time.py) ------------------------------------------------------
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


class Fp8Params(ctypes.Structure):  # include/flashptx.h flashptx_fwd_fp8_params (256 bytes)
    _fields_ = ([(n, ctypes.c_void_p) for n in ("q", "k", "v", "o", "lse", "dq", "dk", "dv")] +
                [(n, ctypes.c_int64) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim",
                                               "qsb", "qsr", "qsh", "ksb", "ksr", "ksh", "vsb", "vsr", "vsh", "vsd",
                                               "osb", "osr", "osh")] +
                [(n, ctypes.c_int) for n in ("qdt", "kdt", "vdt", "odt", "qg", "kg", "vg", "v_layout", "causal")] +
                [("softmax_scale", ctypes.c_float)])


assert ctypes.sizeof(Fp8Params) == 256
lib = None
lib_path = None
if not args.no_flashptx:
    from flashptx import _abi  # noqa: E402
    lib_path = _abi.library_path()
    lib = ctypes.CDLL(lib_path)
    lib.flashptx_fwd_fp8.restype, lib.flashptx_fwd_fp8.argtypes = ctypes.c_int, [ctypes.POINTER(Fp8Params), ctypes.c_void_p]
    lib.flashptx_fwd_fp8_params_contiguous.restype = None
    lib.flashptx_fwd_fp8_params_contiguous.argtypes = ([ctypes.POINTER(Fp8Params)] + [ctypes.c_void_p] * 8 +
                                                       [ctypes.c_int64] * 6 + [ctypes.c_int, ctypes.c_int])
    print(f"flashptx: {lib_path}", flush=True)

dev = torch.device("cuda")
print(f"device: {torch.cuda.get_device_name(0)} sm_{''.join(map(str, torch.cuda.get_device_capability(0)))}", flush=True)
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
stream_ptr = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731


def gpu_us(fn, reps=5, names=None):
    """fp8_time.py's measure (tools/bench/gpu_time.py). names: a set that collects the names of the
    kernels counted."""
    return gpu_time.gpu_us(fn, flush, reps, names=names)


def quantize(x, gran):  # fp8_time.py's quantizer: x [B, S, H, D] fp32 -> e4m3, descales (0 tensor, 1 head)
    B, S, H, D = x.shape
    nb = (S + 127) // 128
    xp = torch.zeros(B, nb * 128, H, D, device=dev); xp[:, :S] = x
    amax = xp.view(B, nb, 128, H, D).abs().amax(dim=(2, 4)).permute(0, 2, 1).contiguous()  # [B, H, nb]
    del xp
    if gran == 1:
        amax = amax.amax(dim=2, keepdim=True).expand(B, H, nb)
    else:
        amax = amax.amax().expand(B, H, nb)
    ds = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax))
    scale = (1.0 / ds).permute(0, 2, 1)[:, :, None, :, None].expand(B, nb, 128, H, 1).reshape(B, nb * 128, H, 1)[:, :S]
    x8 = (x * scale).to(torch.float8_e4m3fn)
    deq = x8.float() / scale
    ds_given = ds[:, :, 0].contiguous() if gran == 1 else ds[:1, :1, 0].contiguous()
    return x8.contiguous(), ds_given.contiguous(), deq


def ref_slice(qd, kd, vd, causal, hs):
    """fp32 SDPA of batch 0, query heads 0..hs-1 (one at a time): [S, hs, D]."""
    H, Hkv = qd.shape[2], kd.shape[2]
    g = H // Hkv
    out = []
    for h in range(hs):
        q = qd[0:1, :, h][:, None]  # [1, 1, S, D]
        k = kd[0:1, :, h // g][:, None]
        v = vd[0:1, :, h // g][:, None]
        out.append(F.scaled_dot_product_attention(q, k, v, is_causal=causal)[0, 0])
    return torch.stack(out, dim=1)


def errors(o_slice, ref):
    e = o_slice.float() - ref
    rms = e.pow(2).mean().sqrt().item()
    rref = ref.pow(2).mean().sqrt().item()
    rel = rms / rref if rref > 0 else float("inf")
    bad = not math.isfinite(rel) or rel > 0.2
    return {"max_err": e.abs().max().item(), "rms_err": rms, "rel_rms_err": rel, "suspect": bad}


def fmt_err(d):
    return (f"max|O-ref|={d['max_err']:.3e} rms={d['rms_err']:.3e} rel_rms={d['rel_rms_err']:.3e}"
            + (" SUSPECT" if d["suspect"] else ""))


# ---- cuDNN graph ---------------------------------------------------------------------------------
handle = None
if cudnn is not None:
    try:
        handle = cudnn.create_handle()
        cudnn.set_stream(handle, stream_ptr())
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"cudnn.create_handle/set_stream FAILED ({e!r}); libcudnn: {libcudnn}; looked at: {looked}", flush=True)
        cudnn = None


def last_error():
    try:
        return cudnn.get_last_error_string()
    except Exception:  # noqa: BLE001
        return ""


def build_cudnn(B, S, H, Hkv, D, causal, o_bf16, amax_s_out):
    e4, f32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT
    g = cudnn.pygraph(io_data_type=e4, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    bshd = lambda h: [S * h * D, D, h * D, 1]  # noqa: E731  physical [B, S, h, D]
    t = {"q": g.tensor(name="q", dim=[B, H, S, D], stride=bshd(H), data_type=e4),
         "k": g.tensor(name="k", dim=[B, Hkv, S, D], stride=bshd(Hkv), data_type=e4),
         "v": g.tensor(name="v", dim=[B, Hkv, S, D], stride=bshd(Hkv), data_type=e4)}
    for n in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o"):
        t[n] = g.tensor(name=n, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
    kw = dict(generate_stats=False, attn_scale=1.0 / math.sqrt(D), name="sdpa_fp8")
    if causal:
        kw["diagonal_alignment"] = (cudnn.diagonal_alignment.BOTTOM_RIGHT if args.cudnn_causal == "bottom_right"
                                    else cudnn.diagonal_alignment.TOP_LEFT)
        kw["right_bound"] = 0
    o, _stats, amax_s, amax_o = g.sdpa_fp8(q=t["q"], k=t["k"], v=t["v"], descale_q=t["descale_q"],
                                           descale_k=t["descale_k"], descale_v=t["descale_v"],
                                           descale_s=t["descale_s"], scale_s=t["scale_s"], scale_o=t["scale_o"], **kw)
    o.set_output(True).set_dim([B, H, S, D]).set_stride(bshd(H)).set_data_type(
        cudnn.data_type.BFLOAT16 if o_bf16 else e4)
    amax_o.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
    t["o"], t["amax_o"] = o, amax_o
    if amax_s_out:
        amax_s.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
        t["amax_s"] = amax_s
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    info = {}
    try:
        idx = getattr(g, "_plan_index", 0)
        info["cudnn_plan"] = g.get_plan_name_at_index(idx)
        info["cudnn_plan_count"] = g.get_execution_plan_count()
    except Exception as e:  # noqa: BLE001
        info["cudnn_plan"] = f"? ({e!r})"
    try:
        eng = g.selected_engine
        info["cudnn_backend_engine"] = eng is None
        if eng is not None:
            info["cudnn_python_engine"] = getattr(eng, "name", str(eng))
    except Exception as e:  # noqa: BLE001
        info["cudnn_backend_engine"] = f"? ({e!r})"
    return g, t, info


def variants():
    o_types = {"auto": (True, False), "bf16": (True,), "fp8": (False,)}[args.o_type]
    return [(ob, am) for ob in o_types for am in (True, False)]


# ---- shapes --------------------------------------------------------------------------------------
if args.grid:
    args.shapes = ";".join(f"{16384 // s},{s},{2048 // d},{d},{c}" for d in (64, 128, 256)
                           for s in (512, 1024, 2048, 4096, 8192, 16384) for c in (0, 1))
shapes = []
for item in args.shapes.split(";"):
    if item.strip():
        f = [int(v) for v in item.split(",")]
        shapes.append((f[0], f[1], f[2], f[3], f[4], f[5] if len(f) > 5 else f[2]))

env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
       "torch_cudnn": torch.backends.cudnn.version(), "libcudnn": libcudnn, "flashptx_lib": lib_path,
       "cudnn_frontend": getattr(cudnn, "__version__", None) if cudnn else None,
       "cudnn_backend": (cudnn.backend_version_string() if cudnn else None), "argv": sys.argv[1:],
       "gran": args.gran, "scale_s": args.scale_s, "cudnn_causal": args.cudnn_causal}
rows = []


def save():
    try:
        with open(args.out, "w") as f:
            json.dump({"environment": env, "rows": rows}, f, indent=1)
    except OSError as e:
        print(f"could not write {args.out}: {e}", flush=True)


def run_shape(B, S, H, D, C, Hkv):
    causal = bool(C)
    tag = f"B{B} S{S} H{H}/{Hkv} d{D} causal={C}"
    row = {"B": B, "S": S, "H": H, "H_kv": Hkv, "D": D, "causal": C, "gran": args.gran}
    if H % Hkv:
        raise ValueError(f"H {H} not a multiple of HKV {Hkv}")
    gen = torch.Generator(device=dev).manual_seed(S * 3 + D + C)
    x = [torch.randn(B, S, h, D, device=dev, generator=gen) for h in (H, Hkv, Hkv)]
    # Per-tensor codes: what cuDNN reads (and flashptx "fp8_pt"); --gran's codes for flashptx "fp8".
    pt = [quantize(t, 0) for t in x]
    own = pt if args.gran == 0 else [quantize(t, args.gran) for t in x]
    del x
    hs = min(H, 8)
    g_ = H // Hkv
    hs = max(g_, hs // g_ * g_)
    row["ref_heads"] = hs
    ref_pt = ref_slice(pt[0][2], pt[1][2], pt[2][2], causal, hs)
    ref_own = ref_pt if args.gran == 0 else ref_slice(own[0][2], own[1][2], own[2][2], causal, hs)
    for lst in (pt, own):
        for i in range(3):
            lst[i] = lst[i][:2]  # the dequantized copies are no longer needed
    torch.cuda.empty_cache()
    impls = {}
    o_fp = torch.empty(B, S, H, D, device=dev, dtype=torch.bfloat16)
    lse = torch.empty(B, H, S, device=dev)
    fp_out = {}

    # flashptx
    if lib is not None:
        def fparams(codes, gran):
            (q8, dsq), (k8, dsk), (v8, dsv) = codes
            p = Fp8Params()
            lib.flashptx_fwd_fp8_params_contiguous(ctypes.byref(p), q8.data_ptr(), k8.data_ptr(), v8.data_ptr(),
                                                   o_fp.data_ptr(), lse.data_ptr(), dsq.data_ptr(), dsk.data_ptr(),
                                                   dsv.data_ptr(), B, S, S, H, Hkv, D, gran, C)
            return p
        cases = [("fp8", own, args.gran, ref_own)] + ([("fp8_pt", pt, 0, ref_pt)] if args.gran != 0 else [])
        for nm, codes, gran, ref in cases:
            p = fparams(codes, gran)
            o_fp.fill_(float("nan"))
            rc = lib.flashptx_fwd_fp8(ctypes.byref(p), ctypes.c_void_p(stream_ptr())); torch.cuda.synchronize()
            row[nm + "_rc"] = rc
            msg = f"{tag} flashptx {nm} (gran {gran}): rc={rc}"
            if rc == 0:
                err = errors(o_fp[0, :, :hs], ref)
                row.update({nm + "_" + k: v for k, v in err.items()})
                msg += " " + fmt_err(err)
                fp_out[nm] = o_fp.clone() if nm == "fp8_pt" or args.gran == 0 else None
                row[nm + "_amax_o"] = o_fp.float().abs().amax().item()
                impls[nm] = (lambda p=p: lib.flashptx_fwd_fp8(ctypes.byref(p), ctypes.c_void_p(stream_ptr())))
            print(msg, flush=True)

    # cuDNN
    if cudnn is not None:
        built = None
        fails = []
        for o_bf16, amax_s_out in variants():
            vname = f"O {'bf16' if o_bf16 else 'e4m3'}, Amax_S {'output' if amax_s_out else 'virtual'}"
            try:
                built = build_cudnn(B, S, H, Hkv, D, causal, o_bf16, amax_s_out) + (o_bf16, amax_s_out)
                print(f"{tag} cudnn graph built ({vname}): {built[2]}", flush=True)
                break
            except Exception as e:  # noqa: BLE001
                le = last_error()
                fails.append(f"{vname}: {type(e).__name__}: {e}" + (f" [cudnn last error: {le}]" if le else ""))
                print(f"{tag} cudnn graph FAILED ({vname}): {type(e).__name__}: {e}" + (f"\n    cudnn last error: {le}" if le else ""),
                      flush=True)
        if fails:
            row["cudnn_build_failures"] = fails
        if built is not None:
            g, t, info, o_bf16, amax_s_out = built
            row.update(info)
            row["cudnn_o_dtype"] = "bf16" if o_bf16 else "fp8_e4m3"
            row["cudnn_amax_s_output"] = amax_s_out
            (q8, dsq), (k8, dsk), (v8, dsv) = pt
            one = lambda val: torch.full((1, 1, 1, 1), float(val), device=dev, dtype=torch.float32)  # noqa: E731
            if o_bf16:
                scale_o = 1.0
            else:  # an e4m3 O needs its amax: flashptx's when there, else that of the fp32 reference slice
                est = row.get("fp8_pt_amax_o", row.get("fp8_amax_o")) if lib is not None else None
                if est is None or not math.isfinite(est) or est <= 0:
                    est = ref_pt.abs().amax().item()
                scale_o = 448.0 / (1.0625 * est)
            row["cudnn_scale_o"] = scale_o
            o_c = torch.empty(B, S, H, D, device=dev, dtype=torch.bfloat16 if o_bf16 else torch.float8_e4m3fn)
            amax_o = one(float("nan"))
            amax_s = one(float("nan"))
            data = {t["q"]: q8, t["k"]: k8, t["v"]: v8,
                    t["descale_q"]: dsq.view(1, 1, 1, 1), t["descale_k"]: dsk.view(1, 1, 1, 1),
                    t["descale_v"]: dsv.view(1, 1, 1, 1), t["descale_s"]: one(1.0 / args.scale_s),
                    t["scale_s"]: one(args.scale_s), t["scale_o"]: one(scale_o), t["o"]: o_c, t["amax_o"]: amax_o}
            if "amax_s" in t:
                data[t["amax_s"]] = amax_s
            try:
                ws_size = g.get_workspace_size()
            except Exception as e:  # noqa: BLE001
                print(f"{tag} cudnn get_workspace_size failed ({e!r}); trying with 0", flush=True)
                ws_size = 0
            row["cudnn_workspace_bytes"] = ws_size
            ws = torch.empty(max(int(ws_size), 1), device=dev, dtype=torch.uint8)
            raw = {k: v.data_ptr() for k, v in data.items()}
            modes = [("tensors", data, ws), ("raw pointers", raw, ws.data_ptr())]
            run = None
            for mname, pack, wsp in modes:
                try:
                    if o_bf16:
                        o_c.fill_(float("nan"))
                    else:
                        o_c.view(torch.uint8).fill_(0x7F)  # e4m3 NaN
                    cudnn.set_stream(handle, stream_ptr())
                    g.execute(pack, wsp, handle=handle)
                    torch.cuda.synchronize()
                    run = (lambda pack=pack, wsp=wsp: g.execute(pack, wsp, handle=handle))
                    row["cudnn_variant_pack"] = mname
                    break
                except Exception as e:  # noqa: BLE001
                    le = last_error()
                    print(f"{tag} cudnn execute FAILED with {mname}: {type(e).__name__}: {e}"
                          + (f"\n    cudnn last error: {le}" if le else ""), flush=True)
                    row.setdefault("cudnn_execute_failures", []).append(f"{mname}: {type(e).__name__}: {e}")
            if run is not None:
                oc = o_c[0, :, :hs].float() / scale_o
                err = errors(oc, ref_pt)
                row.update({"cudnn_" + k: v for k, v in err.items()})
                row["cudnn_amax_o"] = amax_o.item()
                row["cudnn_amax_s"] = amax_s.item() if "amax_s" in t else None
                msg = (f"{tag} cudnn (O {row['cudnn_o_dtype']}, scale_o {scale_o:.4g}): {fmt_err(err)} "
                       f"amax_o={row['cudnn_amax_o']:.4g} (ref slice amax {ref_pt.abs().amax().item():.4g})"
                       + (f" amax_s={row['cudnn_amax_s']:.4g}" if row["cudnn_amax_s"] is not None else ""))
                same = fp_out.get("fp8_pt") if args.gran != 0 else fp_out.get("fp8")
                if same is not None:
                    d = (o_c.float() / scale_o - same.float()).abs().max().item()
                    row["cudnn_vs_flashptx_pt_maxdiff"] = d
                    msg += f" max|cudnn - flashptx per-tensor|={d:.3e}"
                print(msg, flush=True)
                impls["cudnn"] = run
    fp_out.clear()
    del ref_pt, ref_own
    if args.check_only or not impls:
        return row
    times = {k: [] for k in impls}
    names = {k: set() for k in impls}
    for r in range(args.rounds):
        for k, fn in impls.items():
            times[k].append(gpu_us(fn, names=names[k] if r == 0 else None))
    flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
    line = f"{tag}:"
    for k, ts in times.items():
        us = max(sorted(ts)[len(ts) // 2], 1e-9)
        row[k + "_us"] = us
        row[k + "_us_rounds"] = ts
        row[k + "_tflops"] = flops / us * 1e-6
        row[k + "_kernels"] = sorted(names[k])
        line += f" {k} {us:.1f} us {flops / us * 1e-6:.0f}"
    print(line + " (TFLOP/s)", flush=True)
    if "cudnn" in names:
        print(f"{tag} cudnn kernels: {sorted(names['cudnn'])}", flush=True)
    return row


print("environment: " + ", ".join(f"{k} {v}" for k, v in env.items() if k != "argv"), flush=True)
for (B, S, H, D, C, Hkv) in shapes:
    try:
        rows.append(run_shape(B, S, H, D, C, Hkv))
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"B{B} S{S} H{H}/{Hkv} d{D} causal={C}: FAILED {type(e).__name__}: {e}", flush=True)
        rows.append({"B": B, "S": S, "H": H, "H_kv": Hkv, "D": D, "causal": C, "error": f"{type(e).__name__}: {e}"})
        try:
            torch.cuda.synchronize()
        except Exception as e2:  # noqa: BLE001  (a sticky CUDA error: nothing more can run)
            print(f"CUDA unusable after that failure ({e2!r}); stopping", flush=True)
            save()
            sys.exit(1)
    torch.cuda.empty_cache()
    save()
save()
print(f"wrote {args.out}", flush=True)
