#!/usr/bin/env python3
"""flashptx side by side with cuDNN and FA2 (PyTorch SDPA backends), forward, on the FA3 grid.

Runs only on the GPU machine (PyTorch with CUDA, cuDNN); nothing in the build depends on it.

    python3 tools/bench/side_by_side.py --lib build/libflashptx.so --out h200.json --plot h200 --table
    python3 tools/bench/side_by_side.py --replot h200.json --plot h200 --table   # no GPU needed

What is measured: for each grid point, flashptx (through its C ABI, ctypes), cuDNN
(SDPBackend.CUDNN_ATTENTION) and FA2 (SDPBackend.FLASH_ATTENTION) run in one process on the same
tensors: ours in [B, S, H, D]; PyTorch sees .transpose(1, 2) views of them ([B, H, S, D], no copy).
Each timed call is preceded by an L2 flush (a write of a 256 MB buffer, outside the timed
interval) and bracketed by CUDA events; warm-up calls first; the median of --reps is reported with
min/p10/p90. TFLOP/s = 4*B*H*S*S*d / median time, halved when causal (spec 0x0D). Outputs are
compared with cuDNN's (max abs diff). PyTorch's is_causal is top-left aligned; on this grid
seqlen_q == seqlen_k, where it equals flashptx's bottom-right alignment.
What it does not prove: end-to-end model speed (no framework overhead is timed), or anything about
other GPUs, clocks, or library versions than those recorded in "meta".
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
IMPLS = ["flashptx", "cudnn", "fa2"]

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


def load_lib(path):
    lib = ctypes.CDLL(path)
    lib.flashptx_fwd.argtypes = [ctypes.POINTER(FwdParams), ctypes.c_void_p]
    lib.flashptx_fwd.restype = ctypes.c_int
    lib.flashptx_last_error.restype = ctypes.c_char_p
    lib.flashptx_status_name.argtypes = [ctypes.c_int]
    lib.flashptx_status_name.restype = ctypes.c_char_p
    return lib


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


def time_fn(torch, fn, flush, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        flush.zero_()  # evicts the inputs from L2; not inside the events
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        ms.append(start.elapsed_time(end))
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


def run(args):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    lib = load_lib(args.lib)
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
        "dtype": args.dtype,
        "warmup": args.warmup,
        "reps": args.reps,
        "timing_protocol": "CUDA events around one call; 256 MB L2 flush before each rep (untimed); "
                           "median of reps after warm-up; same tensors for every impl",
        "flops": "4*B*H*S*S*d, halved when causal (spec 0x0D)",
        "command_line": " ".join(sys.argv),
    }
    tdtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    code = FLASHPTX_BF16 if args.dtype == "bf16" else FLASHPTX_FP16
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    rows = []
    points = [(d, c, s) for d in args.hdims for c in (False, True) for s in args.seqlens]
    for n, (d, causal, s) in enumerate(points, 1):
        b, h = args.tokens // s, args.hidden // d
        torch.manual_seed(n)
        q = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        k = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        v = torch.randn(b, s, h, d, dtype=tdtype, device=dev)
        o = torch.empty_like(q)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        p = params_for(q, k, v, o, causal, code)

        def ours():
            st = lib.flashptx_fwd(ctypes.byref(p), stream)
            if st != 0:
                raise RuntimeError("%s: %s" % (lib.flashptx_status_name(st).decode(), lib.flashptx_last_error().decode()))
            return o

        def sdpa(backend):
            def f():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            return f

        fns = {"flashptx": ours, "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "fa2": sdpa(SDPBackend.FLASH_ATTENTION)}
        outs = {}
        flops = fwd_flops(b, h, s, d, causal)
        for impl in IMPLS:
            row = {"impl": impl, "direction": "fwd", "hdim": d, "seqlen": s, "batch": b, "heads": h,
                   "causal": causal, "dtype": args.dtype, "flops": flops}
            try:
                out = fns[impl]()
                torch.cuda.synchronize()
                outs[impl] = out.transpose(1, 2) if impl != "flashptx" else out  # all as [B, S, H, D]
                ms = time_fn(torch, fns[impl], flush, args.warmup, args.reps)
                med = statistics.median(ms)
                row.update({"ms": med, "ms_min": min(ms), "ms_p10": percentile(ms, 10),
                            "ms_p90": percentile(ms, 90), "ms_max": max(ms), "reps": len(ms),
                            "tflops": flops / (med * 1e-3) / 1e12, "error": None})
            except Exception as e:  # noqa: BLE001 - record and continue with the next backend
                row.update({"ms": None, "tflops": None, "error": "%s: %s" % (type(e).__name__, e)})
                if args.verbose:
                    traceback.print_exc()
            rows.append(row)
        ref = outs.get("cudnn")
        for row in rows[-len(IMPLS):]:
            out = outs.get(row["impl"])
            row["max_abs_diff_vs_cudnn"] = (float((out.float() - ref.float()).abs().max())
                                            if out is not None and ref is not None else None)
        line = "  ".join("%s %s" % (r["impl"], "%.1f" % r["tflops"] if r["tflops"] else "ERR") for r in rows[-len(IMPLS):])
        print("[%d/%d] d%d s%d b%d h%d %s: %s TFLOP/s" % (n, len(points), d, s, b, h,
              "causal" if causal else "full", line), file=sys.stderr, flush=True)
        del q, k, v, o, qt, kt, vt, outs
        torch.cuda.empty_cache()
    return {"meta": meta, "rows": rows}


# ---- reporting (no GPU needed) ---------------------------------------------------------------------
def index(rows):
    """{(hdim, causal): {seqlen: {impl: row}}} for forward rows."""
    out = {}
    for r in rows:
        if r.get("direction", "fwd") != "fwd":
            continue
        out.setdefault((r["hdim"], bool(r["causal"])), {}).setdefault(r["seqlen"], {})[r["impl"]] = r
    return out


def fmt_seqlen(s):
    return "%dk" % (s // 1024) if s >= 1024 and s % 1024 == 0 else str(s)


def markdown_table(result):
    meta = result.get("meta", {})
    lines = ["Forward %s TFLOP/s on %s (cuDNN %s, torch %s, flashptx %s); ratio = flashptx / cuDNN."
             % (meta.get("dtype", "bf16"), meta.get("device", "?"), meta.get("cudnn", "?"),
                meta.get("torch", "?"), str(meta.get("flashptx_commit", "?"))[:12]), ""]
    for (d, causal), by_s in sorted(index(result["rows"]).items()):
        lines.append("**hdim %d, %s**" % (d, "causal" if causal else "non-causal"))
        lines.append("")
        lines.append("| seqlen | flashptx | cuDNN | FA2 | flashptx / cuDNN |")
        lines.append("|---|---|---|---|---|")
        for s in sorted(by_s):
            cell = {i: by_s[s].get(i, {}).get("tflops") for i in IMPLS}
            ratio = cell["flashptx"] / cell["cudnn"] if cell["flashptx"] and cell["cudnn"] else None
            lines.append("| %s | %s | %s | %s | %s |" % (
                fmt_seqlen(s), *["%.0f" % cell[i] if cell[i] else "err" for i in IMPLS],
                "%.2fx" % ratio if ratio else "-"))
        lines.append("")
    return "\n".join(lines)


def plot(result, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idx = index(result["rows"])
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
            ax.set_ylabel("forward TFLOP/s")
            ymax = max([r.get("tflops") or 0 for v in by_s.values() for r in v.values()] + [1])
            ax.set_ylim(0, ymax * 1.2)
            ax.grid(axis="y", alpha=0.3)
            if row_i == 0 and col_i == 0:
                ax.legend(loc="lower right", fontsize=8)
    meta = result.get("meta", {})
    fig.suptitle("Attention forward, %s, %s: flashptx vs cuDNN %s vs FA2 (ratio = flashptx / cuDNN)"
                 % (meta.get("dtype", "bf16"), meta.get("device", "?"), meta.get("cudnn", "?")))
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    paths = [prefix + ".png", prefix + ".svg"]
    for pth in paths:
        fig.savefig(pth, dpi=110)
    plt.close(fig)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(REPO, "libflashptx.so"), help="path to libflashptx.so")
    ap.add_argument("--out", help="results JSON to write (default side-by-side-<UTC>.json)")
    ap.add_argument("--replot", metavar="JSON", help="do not measure: read this results JSON")
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

    if args.replot:
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
        print("plots: %s" % ", ".join(plot(result, args.plot)), file=sys.stderr)
    if args.table:
        print(markdown_table(result))


if __name__ == "__main__":
    main()
