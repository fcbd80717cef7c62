#!/usr/bin/env python3
"""Plots and markdown tables of the FA3 grid from kernel_time.py result files. Needs no GPU.

    python3 tools/bench/plot_grid.py --fwd RUN1.json RUN2.json --bwd RUN1.json RUN2.json \
        --out tools/bench/results/h200-grid --table

Each result file is kernel_time.py's list of rows {d, s, b, h, causal, ours_fwd, cudnn_fwd, fa2_fwd,
ours_fwd2, ...} (TFLOP/s; the suffix 2 is the second measurement in the same run). A point's value is
the mean of the two measurements of run 1; the ratio of run 2 is printed beside run 1's.

--out PREFIX writes PREFIX-fwd.svg/.png (and -bwd with --bwd): TFLOP/s against sequence length, one
panel per head dim, flashptx / cuDNN / FA2, solid non-causal, dashed causal. Needs matplotlib.
--table prints the full tables of docs/PERFORMANCE.md; --compact the README's (flashptx / cuDNN (ratio),
one row per head dim and mask).
"""
import argparse
import json
import math

IMPLS = (("ours", "flashptx"), ("cudnn", "cuDNN"), ("fa2", "FA2"))


def load(path):
    """A kernel_time.py result: a list of rows, or (since it records its environment) {"rows": [...]}."""
    with open(path) as f:
        data = json.load(f)
    rows = data["rows"] if isinstance(data, dict) else data
    return {(r["d"], r["s"], bool(r["causal"])): r for r in rows}


def value(row, impl, direction):
    """Mean of the run's two measurements (one when the second is missing); None when absent."""
    vals = [row.get(k) for k in (f"{impl}_{direction}", f"{impl}_{direction}2")]
    vals = [v for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def seqlen(s):
    return f"{s // 1024}k" if s >= 1024 else str(s)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def table(run1, run2, direction, det=False):
    cols = "| d | seqlen | causal | flashptx / cuDNN / FA2 | ratio (run 2) |"
    if det:
        cols += " deterministic (cost) |"
    lines = [cols, "|" + "---|" * (cols.count("|") - 1)]
    r1s, r2s, r1k = [], [], []
    for key in sorted(run1):
        a, b = run1[key], run2.get(key)
        ours, cudnn, fa2 = (value(a, i, direction) for i, _ in IMPLS)
        r1 = ours / cudnn
        r2 = value(b, "ours", direction) / value(b, "cudnn", direction) if b else float("nan")
        r1s.append(r1)
        r2s.append(r2)
        if key[1] >= 1024:
            r1k.append(r1)
        fa2s = f"{fa2:.0f}" if fa2 else "-"
        cell = f"| {key[0]} | {seqlen(key[1])} | {'yes' if key[2] else 'no'} | {ours:.0f} / {cudnn:.0f} / {fa2s} | " \
               f"{r1:.3f} ({r2:.3f}) |"
        if det:
            dv = value(a, "ours_det", direction)
            cell += f" {dv:.0f} ({(dv / ours - 1) * 100:+.0f}%) |" if dv else " - |"
        lines.append(cell)
    lines.append("")
    lines.append(f"geomean over cuDNN: run 1 {geomean(r1s):.3f}, run 2 {geomean([x for x in r2s if x == x]):.3f}; "
                 f"from 1k {geomean(r1k):.3f}; range {min(r1s):.3f}-{max(r1s):.3f}")
    return "\n".join(lines)


def compact(run1, direction):
    """One row per (head dim, mask), one column per sequence length: flashptx / cuDNN (ratio)."""
    seqs = sorted({k[1] for k in run1})
    lines = ["| d | mask | " + " | ".join(seqlen(s) for s in seqs) + " |", "|---|---|" + "---|" * len(seqs)]
    for d in sorted({k[0] for k in run1}):
        for causal in (False, True):
            cells = []
            for s in seqs:
                r = run1[(d, s, causal)]
                ours, cudnn = value(r, "ours", direction), value(r, "cudnn", direction)
                cells.append(f"{ours:.0f} / {cudnn:.0f} ({ours / cudnn:.2f})")
            lines.append(f"| {d} | {'causal' if causal else 'none'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def offgrid(path):
    """kernel_time.py's rows of shapes off the grid (rows x batch x heads, keys, K/V heads, dtype)."""
    with open(path) as f:
        rows = json.load(f)
    lines = ["| d | rows x batch x heads | keys | K/V heads | mask | dtype | flashptx / cuDNN / FA2 | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ours, cudnn, fa2 = (value(r, i, "fwd") for i, _ in IMPLS)
        lines.append(f"| {r['d']} | {r['s']} x {r['b']} x {r['h']} | {r.get('sk', r['s'])} | {r.get('hkv', r['h'])} | "
                     f"{'causal' if r['causal'] else 'none'} | {r.get('dtype', 'bf16')} | "
                     f"{ours:.0f} / {cudnn:.0f} / {fa2:.0f} | {ours / cudnn:.2f} |")
    return "\n".join(lines)


def plot(run1, direction, title, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = sorted({k[0] for k in run1})
    seqs = sorted({k[1] for k in run1})
    colors = {"ours": "#c0392b", "cudnn": "#2c3e50", "fa2": "#7f8c8d"}
    fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 3.9), sharey=True)
    for ax, d in zip(axes, dims):
        for impl, label in IMPLS:
            for causal, style in ((False, "-"), (True, "--")):
                ys = [value(run1[(d, s, causal)], impl, direction) if (d, s, causal) in run1 else None for s in seqs]
                if all(y is None for y in ys):
                    continue
                ax.plot(range(len(seqs)), ys, style, marker="o", ms=3.5, color=colors[impl],
                        label=f"{label}{' causal' if causal else ''}")
        ax.set_title(f"head dim {d}")
        ax.set_xticks(range(len(seqs)))
        ax.set_xticklabels([seqlen(s) for s in seqs])
        ax.set_xlabel("sequence length (16k tokens per batch)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("TFLOP/s (kernel time)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=len(labels), frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    for ext in ("svg", "png"):
        fig.savefig(f"{prefix}-{direction}.{ext}", dpi=110, metadata={"Date": None} if ext == "svg" else None)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fwd", nargs=2, metavar=("RUN1", "RUN2"), required=True)
    ap.add_argument("--bwd", nargs=2, metavar=("RUN1", "RUN2"))
    ap.add_argument("--out", metavar="PREFIX")
    ap.add_argument("--offgrid", metavar="FILE", help="print the table of a result file of off-grid shapes")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--compact", action="store_true", help="the README's tables: flashptx / cuDNN (ratio)")
    a = ap.parse_args()
    fwd = [load(p) for p in a.fwd]
    bwd = [load(p) for p in a.bwd] if a.bwd else None
    if a.table:
        print("forward\n" + table(fwd[0], fwd[1], "fwd"))
        if bwd:
            print("\nbackward\n" + table(bwd[0], bwd[1], "bwd", det=True))
    if a.compact:
        print("forward\n" + compact(fwd[0], "fwd"))
        if bwd:
            print("\nbackward\n" + compact(bwd[0], "bwd"))
    if a.offgrid:
        print("off the grid\n" + offgrid(a.offgrid))
    if a.out:
        plot(fwd[0], "fwd", "Forward, bf16, H200: flashptx, cuDNN 9.19 and FA2 (PyTorch 2.11 SDPA)", a.out)
        if bwd:
            plot(bwd[0], "bwd", "Backward, bf16, H200: flashptx, cuDNN 9.19 and FA2 (PyTorch 2.11 SDPA)", a.out)


if __name__ == "__main__":
    main()
