#!/usr/bin/env python3
"""flashptx side by side with cuDNN and FA2 (PyTorch SDPA backends), forward and backward, FA3 grid.

Runs only on the GPU machine (PyTorch with CUDA, cuDNN); nothing in the build depends on it.

    python3 tools/bench/side_by_side.py --lib build/libflashptx.so --out h200.json --plot h200 --table
    python3 tools/bench/side_by_side.py --replot h200.json --plot h200 --table   # no GPU needed

What is measured: for each grid point, flashptx (through its C ABI, ctypes), cuDNN
(SDPBackend.CUDNN_ATTENTION) and FA2 (SDPBackend.FLASH_ATTENTION) run in one process on the same
tensors: ours in [B, S, H, D]; PyTorch sees .transpose(1, 2) views of them ([B, H, S, D], no copy).
--lib-b adds a second flashptx build (e.g. the previous version) as "flashptx_b", for A/B runs.
Implementations are interleaved rep by rep (the order rotates every rep), so that clock and thermal
drift fall on all of them alike. Each timed call is preceded by an L2 flush (a write of a 256 MB
buffer, outside the timed interval) and bracketed by CUDA events; warm-up calls first; the median of
--reps is reported with min/p10/p90. Forward FLOPs = 4*B*H*S*S*d, halved when causal (the papers'
convention); backward FLOPs = 2.5 x forward. The backward timed is: flashptx_bwd (preprocess, main
kernel, postprocess; O and LSE from flashptx_fwd, untimed); for cuDNN and FA2, torch.autograd.grad
of the SDPA output with retain_graph (the backward kernels PyTorch launches for it). Outputs (O; dQ,
dK, dV) are compared with cuDNN's (max abs diff). PyTorch's is_causal is top-left aligned; on this
grid seqlen_q == seqlen_k, where it equals flashptx's bottom-right alignment.
What it does not prove: end-to-end model speed, or anything about other GPUs, clocks, or library
versions than those recorded in "meta". Nor a kernel-for-kernel ranking where host paths differ:
the events bracket the host time a call spends beyond the flush's GPU time (~70 us), which is ~0 for
the bare ctypes call of flashptx but not for SDPA (measured on the H200: 115 us of host time per
forward, ~225 us per autograd backward; tools/python/profile_calls.py). Forward ratios agree with
GPU kernel time; backward ratios do not (1.08-1.27x here, 0.89-1.09x in kernel time, 2026-11-30).
tools/bench/kernel_time.py measures kernel time only.
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import traceback

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HDIMS = [64, 128, 256]
SEQLENS = [512, 1024, 2048, 4096, 8192, 16384]
IMPLS = ["flashptx", "cudnn", "fa2"]  # plus "flashptx_b" with --lib-b

# ---- the C ABI mirror (include/flashptx.h) -------------------------------------------------------
FLASHPTX_BF16, FLASHPTX_FP16 = 0, 1


class FwdParams(ctypes.Structure):
    _fields_ = [
        ("q", ctypes.c_void_p), ("k", ctypes.c_void_p), ("v", ctypes.c_void_p), ("o", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("batch", ctypes.c_int64), ("seqlen_q", ctypes.c_int64), ("seqlen_k", ctypes.c_int64),
        ("heads_q", ctypes.c_int64), ("heads_kv", ctypes.c_int64), ("head_dim", ctypes.c_int64),
        ("q_batch_stride", ctypes.c_int64), ("q_row_stride", ctypes.c_int64), ("q_head_stride", ctypes.c_int64),
        ("k_batch_stride", ctypes.c_int64), ("k_row_stride", ctypes.c_int64), ("k_head_stride", ctypes.c_int64),
        ("v_batch_stride", ctypes.c_int64), ("v_row_stride", ctypes.c_int64), ("v_head_stride", ctypes.c_int64),
        ("o_batch_stride", ctypes.c_int64), ("o_row_stride", ctypes.c_int64), ("o_head_stride", ctypes.c_int64),
        ("q_dtype", ctypes.c_int), ("k_dtype", ctypes.c_int), ("v_dtype", ctypes.c_int), ("o_dtype", ctypes.c_int),
        ("causal", ctypes.c_int),
        ("softmax_scale", ctypes.c_float),
    ]


class BwdParams(ctypes.Structure):
    _fields_ = ([(n, ctypes.c_void_p) for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv")] +
                [(n, ctypes.c_int64) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim")] +
                [(t + "_" + x + "_stride", ctypes.c_int64) for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv")
                 for x in ("batch", "row", "head")] +
                [("dtype", ctypes.c_int), ("causal", ctypes.c_int), ("softmax_scale", ctypes.c_float),
                 ("deterministic", ctypes.c_int), ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_int64)])


def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.flashptx_fwd.argtypes = [ctypes.POINTER(FwdParams), ctypes.c_void_p]
    lib.flashptx_fwd.restype = ctypes.c_int
    lib.flashptx_last_error.restype = ctypes.c_char_p
    lib.flashptx_status_name.argtypes = [ctypes.c_int]
    lib.flashptx_status_name.restype = ctypes.c_char_p
    if hasattr(lib, "flashptx_bwd"):
        lib.flashptx_bwd.argtypes = [ctypes.POINTER(BwdParams), ctypes.c_void_p]
        lib.flashptx_bwd.restype = ctypes.c_int
        lib.flashptx_bwd_workspace_size.argtypes = [ctypes.POINTER(BwdParams), ctypes.POINTER(ctypes.c_int64)]
        lib.flashptx_bwd_workspace_size.restype = ctypes.c_int
    return lib


def bwd_params_for(q, k, v, o, lse, do, dq, dk, dv, causal, dtype_code, deterministic):
    p = BwdParams()
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("dout", do), ("dq", dq), ("dk", dk), ("dv", dv)):
        setattr(p, name, t.data_ptr())
        sb, sr, sh, sd = t.stride()
        assert sd == 1, "last dim must be contiguous"
        key = "do" if name == "dout" else name
        setattr(p, key + "_batch_stride", sb)
        setattr(p, key + "_row_stride", sr)
        setattr(p, key + "_head_stride", sh)
    p.lse = lse.data_ptr()
    p.batch, p.seqlen_q, p.heads_q, p.head_dim = q.shape
    p.seqlen_k, p.heads_kv = k.shape[1], k.shape[2]
    p.dtype = dtype_code
    p.causal = 1 if causal else 0
    p.softmax_scale = 0.0
    p.deterministic = 1 if deterministic else 0
    return p


def params_for(q, k, v, o, causal, dtype_code):
    """Parameters for [B, S, H, D] torch tensors, strides taken from the tensors themselves."""
    p = FwdParams()
    p.q, p.k, p.v, p.o, p.lse = q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), None
    p.batch, p.seqlen_q, p.heads_q, p.head_dim = q.shape
    p.seqlen_k, p.heads_kv = k.shape[1], k.shape[2]
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        sb, sr, sh, sd = t.stride()
        assert sd == 1, "last dim must be contiguous"
        setattr(p, name + "_batch_stride", sb)
        setattr(p, name + "_row_stride", sr)
        setattr(p, name + "_head_stride", sh)
        setattr(p, name + "_dtype", dtype_code)
    p.causal = 1 if causal else 0
    p.softmax_scale = 0.0
    return p


# ---- measurement -----------------------------------------------------------------------------------
def fwd_flops(b, h, s, d, causal):
    return 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)


def percentile(xs, p):
    xs = sorted(xs)
    pos = p / 100.0 * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(len(xs) - 1, lo + 1)
    return xs[lo] + (pos - lo) * (xs[hi] - xs[lo])


def time_interleaved(torch, fns, flush, warmup, reps):
    """{impl: [ms, ...]}: every rep times each implementation once, in an order rotated per rep."""
    names = list(fns)
    for _ in range(warmup):
        for n in names:
            fns[n]()
    torch.cuda.synchronize()
    ms = {n: [] for n in names}
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for n in order:
            flush.zero_()  # evicts the inputs from L2; not inside the events
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fns[n]()
            end.record()
            end.synchronize()
            ms[n].append(start.elapsed_time(end))
    return ms


def git_commit():
    # The GPU machine's copy of the tree has no .git: tools/gpu_session.sh passes the commit the
    # binaries were built from in FLASHPTX_GIT_COMMIT.
    if os.environ.get("FLASHPTX_GIT_COMMIT"):
        return os.environ["FLASHPTX_GIT_COMMIT"]
    try:
        return subprocess.check_output(["git", "-C", REPO, "rev-parse", "HEAD"], text=True).strip()
    except Exception:  # noqa: BLE001 - any failure means "unknown"
        return "unknown"


def check(lib, st):
    if st != 0:
        raise RuntimeError("%s: %s" % (lib.flashptx_status_name(st).decode(), lib.flashptx_last_error().decode()))


def run(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    libs = {"flashptx": load_lib(args.lib)}
    if args.lib_b:
        libs["flashptx_b"] = load_lib(args.lib_b)
    impls = list(libs) + ["cudnn", "fa2"]
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    meta = {
        "tool": "tools/bench/side_by_side.py",
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": props.name,
        "sm_count": props.multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "flashptx_commit": git_commit(),
        "flashptx_lib": os.path.abspath(args.lib),
        "flashptx_lib_b": os.path.abspath(args.lib_b) if args.lib_b else None,
        "dtype": args.dtype,
        "warmup": args.warmup,
        "reps": args.reps,
        "directions": args.direction,
        "deterministic_bwd": args.deterministic,
        "timing_protocol": "CUDA events around one call; 256 MB L2 flush before each rep (untimed); "
                           "implementations interleaved rep by rep (rotating order); median of reps after "
                           "warm-up; same tensors for every impl",
        "flops": "fwd 4*B*H*S*S*d, halved when causal (the papers' convention); bwd 2.5 x fwd",
        "command_line": " ".join(sys.argv),
    }
    tdtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    code = FLASHPTX_BF16 if args.dtype == "bf16" else FLASHPTX_FP16
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    def flashptx_bwd_fn(lib, q, k, v, do, causal):
        """flashptx_bwd on these tensors (O and LSE from flashptx_fwd first, untimed)."""
        b, s, h, _ = q.shape
        o = torch.empty_like(q)
        lse = torch.empty(b, h, s, dtype=torch.float32, device=dev)
        pf = params_for(q, k, v, o, causal, code)
        pf.lse = lse.data_ptr()
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        pb = bwd_params_for(q, k, v, o, lse, do, dq, dk, dv, causal, code, args.deterministic)
        ws_bytes = ctypes.c_int64(0)
        check(lib, lib.flashptx_bwd_workspace_size(ctypes.byref(pb), ctypes.byref(ws_bytes)))
        check(lib, lib.flashptx_fwd(ctypes.byref(pf), stream))
        ws = torch.empty(max(ws_bytes.value, 256), dtype=torch.uint8, device=dev)
        pb.workspace, pb.workspace_bytes = ws.data_ptr(), ws_bytes.value

        def ours(keep=(o, lse, ws)):
            check(lib, lib.flashptx_bwd(ctypes.byref(pb), stream))
            return (dq, dk, dv)
        return ours

    rows = []
    dirs = ["fwd", "bwd"] if args.direction == "both" else [args.direction]
    points = [(dr, d, c, s) for dr in dirs for d in args.hdims for c in (False, True) for s in args.seqlens]
    for n, (direction, d, causal, s) in enumerate(points, 1):
        b, h = args.tokens // s, args.hidden // d
        torch.manual_seed(n)
        q = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        k = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        v = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        do = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        fns, results = {}, {}
        if direction == "fwd":
            for name, lib in libs.items():
                o = torch.empty_like(q)
                p = params_for(q, k, v, o, causal, code)

                def ours(lib=lib, p=p, o=o):
                    check(lib, lib.flashptx_fwd(ctypes.byref(p), stream))
                    return o
                fns[name] = ours
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

            def sdpa(backend):
                def f():
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal).transpose(1, 2)
                return f
            fns["cudnn"], fns["fa2"] = sdpa(SDPBackend.CUDNN_ATTENTION), sdpa(SDPBackend.FLASH_ATTENTION)
            flops = fwd_flops(b, h, s, d, causal)
        else:
            for name, lib in libs.items():
                if not hasattr(lib, "flashptx_bwd"):
                    results[name] = "no flashptx_bwd in this library"
                    continue
                try:
                    fns[name] = flashptx_bwd_fn(lib, q, k, v, do, causal)
                except Exception as e:  # noqa: BLE001 - e.g. a head dim the backward does not support
                    results[name] = "%s: %s" % (type(e).__name__, e)

            def sdpa_bwd(backend):
                qg, kg, vg = (t.detach().transpose(1, 2).requires_grad_(True) for t in (q, k, v))
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                dot = do.transpose(1, 2)

                def f():
                    with sdpa_kernel(backend):
                        g = torch.autograd.grad(out, (qg, kg, vg), dot, retain_graph=True)
                    return tuple(x.transpose(1, 2) for x in g)
                return f
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION)):
                try:
                    fns[name] = sdpa_bwd(backend)
                except Exception as e:  # noqa: BLE001
                    results[name] = "%s: %s" % (type(e).__name__, e)
            flops = 2.5 * fwd_flops(b, h, s, d, causal)
        outs = {}
        for impl in list(fns):
            try:
                outs[impl] = fns[impl]()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - record, drop from timing
                results[impl] = "%s: %s" % (type(e).__name__, e)
                del fns[impl]
                if args.verbose:
                    traceback.print_exc()
        ms = time_interleaved(torch, fns, flush, args.warmup, args.reps) if fns else {}
        ref = outs.get("cudnn")
        for impl in impls:
            row = {"impl": impl, "direction": direction, "hdim": d, "seqlen": s, "batch": b, "heads": h,
                   "causal": causal, "dtype": args.dtype, "flops": flops}
            if impl in ms:
                t = ms[impl]
                med = statistics.median(t)
                row.update({"ms": med, "ms_min": min(t), "ms_p10": percentile(t, 10), "ms_p90": percentile(t, 90),
                            "ms_max": max(t), "reps": len(t), "tflops": flops / (med * 1e-3) / 1e12, "error": None})
            else:
                row.update({"ms": None, "tflops": None, "error": results.get(impl, "not run")})
            out = outs.get(impl)
            if out is not None and ref is not None:
                pairs = [(out, ref)] if direction == "fwd" else list(zip(out, ref))
                row["max_abs_diff_vs_cudnn"] = max(float((a.float() - r.float()).abs().max()) for a, r in pairs)
            rows.append(row)
        line = "  ".join("%s %s" % (r["impl"], "%.1f" % r["tflops"] if r["tflops"] else "ERR") for r in rows[-len(impls):])
        print("[%d/%d] %s d%d s%d b%d h%d %s: %s TFLOP/s" % (n, len(points), direction, d, s, b, h,
              "causal" if causal else "full", line), file=sys.stderr, flush=True)
        del q, k, v, do, outs, fns
        torch.cuda.empty_cache()
    return {"meta": meta, "rows": rows}


# ---- reporting (no GPU needed) ---------------------------------------------------------------------
def index(rows, direction="fwd"):
    """{(hdim, causal): {seqlen: {impl: row}}} for the rows of one direction."""
    out = {}
    for r in rows:
        if r.get("direction", "fwd") != direction:
            continue
        out.setdefault((r["hdim"], bool(r["causal"])), {}).setdefault(r["seqlen"], {})[r["impl"]] = r
    return out


def fmt_seqlen(s):
    return "%dk" % (s // 1024) if s >= 1024 and s % 1024 == 0 else str(s)


def impls_of(rows):
    names = {r["impl"] for r in rows}
    return [i for i in ("flashptx", "flashptx_b", "cudnn", "fa2") if i in names]


def markdown_table(result):
    meta = result.get("meta", {})
    lines = []
    for direction in ("fwd", "bwd"):
        idx = index(result["rows"], direction)
        if not idx:
            continue
        impls = impls_of([r for r in result["rows"] if r.get("direction", "fwd") == direction])
        lines += ["%s %s TFLOP/s on %s (cuDNN %s, torch %s, flashptx %s); ratio = flashptx / cuDNN."
                  % ("Forward" if direction == "fwd" else "Backward", meta.get("dtype", "bf16"), meta.get("device", "?"),
                     meta.get("cudnn", "?"), meta.get("torch", "?"), str(meta.get("flashptx_commit", "?"))[:12]), ""]
        for (d, causal), by_s in sorted(idx.items()):
            lines.append("**%s hdim %d, %s**" % (direction, d, "causal" if causal else "non-causal"))
            lines.append("")
            lines.append("| seqlen | " + " | ".join(impls) + " | flashptx / cuDNN |")
            lines.append("|---|" + "---|" * len(impls) + "---|")
            for s in sorted(by_s):
                cell = {i: by_s[s].get(i, {}).get("tflops") for i in impls}
                ratio = cell["flashptx"] / cell["cudnn"] if cell.get("flashptx") and cell.get("cudnn") else None
                lines.append("| %s | %s | %s |" % (
                    fmt_seqlen(s), " | ".join("%.0f" % cell[i] if cell[i] else "err" for i in impls),
                    "%.2fx" % ratio if ratio else "-"))
            lines.append("")
    return "\n".join(lines)


def plot(result, prefix, direction="fwd"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idx = index(result["rows"], direction)
    if not idx:
        return []
    IMPLS = [i for i in impls_of([r for r in result["rows"] if r.get("direction", "fwd") == direction])
             if i != "flashptx_b"]
    hdims = sorted({d for d, _ in idx})
    fig, axes = plt.subplots(2, len(hdims), figsize=(6 * len(hdims), 9), squeeze=False)
    colors = {"flashptx": "#c0392b", "cudnn": "#2e86c1", "fa2": "#7f8c8d"}
    labels = {"flashptx": "flashptx", "cudnn": "cuDNN (SDPA)", "fa2": "FA2 (SDPA flash)"}
    for row_i, causal in enumerate((False, True)):
        for col_i, d in enumerate(hdims):
            ax = axes[row_i][col_i]
            by_s = idx.get((d, causal), {})
            seqlens = sorted(by_s)
            width = 0.8 / len(IMPLS)
            for j, impl in enumerate(IMPLS):
                xs = [i + (j - 1) * width for i in range(len(seqlens))]
                ys = [by_s[s].get(impl, {}).get("tflops") or 0 for s in seqlens]
                bars = ax.bar(xs, ys, width, color=colors[impl], label=labels[impl])
                for bar, y in zip(bars, ys):
                    if y:
                        ax.text(bar.get_x() + bar.get_width() / 2, y, "%.0f" % y, ha="center", va="bottom", fontsize=6)
            for i, s in enumerate(seqlens):  # the ratio above each group
                ours, cud = (by_s[s].get(x, {}).get("tflops") for x in ("flashptx", "cudnn"))
                if ours and cud:
                    top = max(r.get("tflops") or 0 for r in by_s[s].values())
                    ax.text(i, top * 1.07, "%.2fx" % (ours / cud), ha="center", fontsize=8, fontweight="bold",
                            color="#c0392b" if ours >= cud else "#555555")
            ax.set_xticks(range(len(seqlens)))
            ax.set_xticklabels([fmt_seqlen(s) for s in seqlens])
            ax.set_title("hdim %d, %s" % (d, "causal" if causal else "non-causal"))
            ax.set_xlabel("sequence length (batch x seqlen = 16k, hidden 2048)")
            ax.set_ylabel("%s TFLOP/s" % ("forward" if direction == "fwd" else "backward"))
            ymax = max([r.get("tflops") or 0 for v in by_s.values() for r in v.values()] + [1])
            ax.set_ylim(0, ymax * 1.2)
            ax.grid(axis="y", alpha=0.3)
            if row_i == 0 and col_i == 0:
                ax.legend(loc="lower right", fontsize=8)
    meta = result.get("meta", {})
    fig.suptitle("Attention %s, %s, %s: flashptx vs cuDNN %s vs FA2 (ratio = flashptx / cuDNN)%s"
                 % ("forward" if direction == "fwd" else "backward", meta.get("dtype", "bf16"), meta.get("device", "?"),
                    meta.get("cudnn", "?"),
                    ", GPU kernel time" if meta.get("method", "").startswith("GPU kernel time") else ""))
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    if direction != "fwd":
        prefix = prefix + "-" + direction
    paths = [prefix + ".png", prefix + ".svg"]
    for pth in paths:
        fig.savefig(pth, dpi=110)
    plt.close(fig)
    return paths


def from_kernel_time(path, meta_extra=None):
    """Results (meta + rows, the format this script writes) from a tools/bench/kernel_time.py JSON:
    one row per implementation, direction and grid point, tflops the mean of its two measurements
    ("ours" -> flashptx, "oursb" -> flashptx_b, cudnn, fa2; "ours_det_bwd" -> flashptx_det)."""
    with open(path) as f:
        kt = json.load(f)
    env = {}
    if isinstance(kt, dict):  # {"environment": ..., "rows": [...]}; older files are the bare row list
        env, kt = kt.get("environment", {}), kt["rows"]
    names = {"ours": "flashptx", "oursb": "flashptx_b", "cudnn": "cudnn", "fa2": "fa2", "ours_det": "flashptx_det"}
    rows = []
    for r in kt:
        for key in r:
            if key.endswith("2") or not (key.endswith("_fwd") or key.endswith("_bwd")):
                continue
            impl, direction = key.rsplit("_", 1)
            if impl not in names or (key + "2") not in r:
                continue
            rows.append({"impl": names[impl], "direction": direction, "hdim": r["d"], "seqlen": r["s"], "batch": r["b"],
                         "heads": r["h"], "causal": bool(r["causal"]), "tflops": (r[key] + r[key + "2"]) / 2,
                         "tflops_runs": [r[key], r[key + "2"]], "method": "kernel time"})
    meta = {"method": "GPU kernel time (tools/bench/kernel_time.py: torch.profiler, L2 flushed, mean of two "
                      "interleaved measurements of 5 calls)", "source": os.path.basename(path), "dtype": "bf16"}
    meta.update({k: v for k, v in env.items() if k != "argv"})
    meta.update(meta_extra or {})
    return {"meta": meta, "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(REPO, "libflashptx.so"), help="path to libflashptx.so")
    ap.add_argument("--lib-b", help="a second libflashptx.so timed beside the first (\"flashptx_b\")")
    ap.add_argument("--direction", choices=["fwd", "bwd", "both"], default="fwd")
    ap.add_argument("--deterministic", action="store_true", help="time the backward's deterministic mode")
    ap.add_argument("--out", help="results JSON to write (default side-by-side-<UTC>.json)")
    ap.add_argument("--replot", metavar="JSON", help="do not measure: read this results JSON")
    ap.add_argument("--from-kernel-time", metavar="JSON",
                    help="do not measure: convert a kernel_time.py JSON (written with --out)")
    ap.add_argument("--meta", metavar="K=V,...", default="", help="with --from-kernel-time: meta fields")
    ap.add_argument("--plot", metavar="PREFIX", help="write PREFIX.png and PREFIX.svg")
    ap.add_argument("--table", action="store_true", help="print the markdown table")
    ap.add_argument("--quick", action="store_true", help="subset: hdim 128, seqlen 1k and 8k, few reps")
    ap.add_argument("--hdims", type=lambda s: [int(x) for x in s.split(",")], default=HDIMS)
    ap.add_argument("--seqlens", type=lambda s: [int(x) for x in s.split(",")], default=SEQLENS)
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--tokens", type=int, default=16384, help="batch x seqlen")
    ap.add_argument("--hidden", type=int, default=2048, help="heads x hdim")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.hdims, args.seqlens, args.reps = [128], [1024, 8192], min(args.reps, 10)

    if args.from_kernel_time:
        extra = dict(kv.split("=", 1) for kv in args.meta.split(",") if kv)
        result = from_kernel_time(args.from_kernel_time, extra)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
                f.write("\n")
    elif args.replot:
        with open(args.replot) as f:
            result = json.load(f)
    else:
        result = run(args)
        out = args.out or "side-by-side-%s.json" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        with open(out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print("results written to %s" % out, file=sys.stderr)
    if args.plot:
        paths = plot(result, args.plot, "fwd") + plot(result, args.plot, "bwd")
        print("plots: %s" % ", ".join(paths), file=sys.stderr)
    if args.table:
        print(markdown_table(result))


if __name__ == "__main__":
    main()
