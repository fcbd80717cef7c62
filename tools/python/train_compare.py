#!/usr/bin/env python3
"""Training comparison: one small decoder-only transformer trained with PyTorch SDPA (cuDNN backend)
and with flashptx.attention, on the same data in the same order.

    PYTHONPATH=tools/python python3 tools/python/train_compare.py --out OUTDIR [--steps 300]

Model: 6 layers, d_model 1024, 8 heads of 128, sequence 2048, pre-LayerNorm blocks (causal
self-attention, GELU MLP 4x), learned positions, byte-level vocabulary (256). bf16 autocast, AdamW
(fused; lr 6e-4, betas 0.9/0.95, weight decay 0.1), linear warm-up then cosine decay, gradient
clipping at 1.0. Corpus: this repository's own text (README.md, docs/DECISIONS.md, then every
src/ include/ ptx/ source file in sorted order), read from the tree as bytes; the last 5% is held
out. Each step takes a batch of random windows drawn from one fixed generator (seed 1234), so that
every run sees the same batches in the same order.

Runs: SDPA seed 0, flashptx seed 0 (the model's initial weights from the seed), SDPA seed 1. The
two SDPA runs measure SDPA's own run-to-run noise (another initialisation, same data); flashptx agrees
with SDPA when max |loss_flashptx - loss_sdpa0| stays within max |loss_sdpa1 - loss_sdpa0|, both on
losses smoothed over --smooth steps (a trailing mean). Step time: CUDA events around each whole
step (forward, backward, clipping, optimizer), median over the steps after the first 10.

Writes OUTDIR/train_compare.json (every loss, every step time, the verdict) and
OUTDIR/train_compare.png (the curves and the differences).
"""
import argparse
import glob
import hashlib
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)


def corpus_files(root):
    files = [os.path.join(root, "README.md"), os.path.join(root, "docs", "DECISIONS.md")]
    for pattern in ("src/**/*.cuh", "src/**/*.cu", "src/**/*.h", "src/**/*.cpp", "include/**/*.h", "ptx/**/*.cuh"):
        files += sorted(glob.glob(os.path.join(root, pattern), recursive=True))
    seen, out = set(), []
    for f in files:
        if os.path.isfile(f) and f not in seen:
            seen.add(f)
            out.append(f)
    return out


def load_corpus(root):
    files = corpus_files(root)
    data = b"".join(open(f, "rb").read() for f in files)
    return files, data


def build_model(torch, args, attn):
    nn, F = torch.nn, torch.nn.functional
    d, h, L = args.dmodel, args.heads, args.layers

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d, bias=False)
            self.proj = nn.Linear(d, d, bias=False)
            self.fc = nn.Linear(d, 4 * d, bias=False)
            self.fc2 = nn.Linear(4 * d, d, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, h, d // h).unbind(2)  # [b, s, h, hd] views
            x = x + self.proj(attn(q, k, v).reshape(b, s, d))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(256, d)
            self.pos = nn.Embedding(args.seq, d)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, 256, bias=False)
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * L) if name.endswith(("proj.weight", "fc2.weight")) else 0.02
                    nn.init.normal_(p, std=std)

        def forward(self, idx):
            x = self.tok(idx) + self.pos.weight[: idx.shape[1]]
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln(x))

    return GPT()


sdpa_inputs = {"contiguous": False}


def run_one(torch, args, impl, seed, data, train_offsets, eval_offsets):
    import flashptx
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if impl == "flashptx":
        def attn(q, k, v):
            return flashptx.attention(q, k, v, causal=True)
    else:
        def attn(q, k, v):
            # [b, h, s, hd] views of the packed qkv, no copy (as flashptx gets them); should cuDNN
            # refuse those strides, contiguous copies instead, recorded in the results
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            if sdpa_inputs["contiguous"]:
                qt, kt, vt = qt.contiguous(), kt.contiguous(), vt.contiguous()
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION if args.device == "cuda" else SDPBackend.MATH):
                try:
                    o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
                except RuntimeError as e:
                    if sdpa_inputs["contiguous"]:
                        raise
                    print("  cuDNN SDPA refused the strided views (%s): contiguous copies from now on"
                          % str(e).split("\n")[0], flush=True)
                    sdpa_inputs["contiguous"] = True
                    o = F.scaled_dot_product_attention(qt.contiguous(), kt.contiguous(), vt.contiguous(),
                                                       is_causal=True)
            return o.transpose(1, 2)

    torch.manual_seed(seed)
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    model = build_model(torch, args, attn).to(dev)  # initialised on the CPU: the seed alone decides
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
    warm = max(1, args.steps // 10)

    def lr_at(step):
        if step < warm:
            return args.lr * (step + 1) / warm
        t = (step - warm) / max(1, args.steps - warm)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    ar = torch.arange(args.seq + 1, device=dev)
    losses, events = [], []
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        start, end = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) if cuda else (
            Stamp(), Stamp())
        start.record()
        win = data[train_offsets[step][:, None] + ar].long()
        x, y = win[:, :-1], win[:, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, 256), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        end.record()
        losses.append(loss.detach())
        events.append((start, end))
    if cuda:
        torch.cuda.synchronize()
    wall = time.time() - t0
    losses = [float(x) for x in torch.stack(losses).cpu()]
    step_ms = [s.elapsed_time(e) for s, e in events]
    with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
        ev = []
        for offs in eval_offsets:
            win = data[offs[:, None] + ar].long()
            ev.append(float(F.cross_entropy(model(win[:, :-1]).float().reshape(-1, 256), win[:, 1:].reshape(-1))))
    res = {"impl": impl, "seed": seed, "losses": losses, "step_ms": step_ms,
           "step_ms_median": statistics.median(step_ms[10:] if len(step_ms) > 20 else step_ms),
           "eval_loss": sum(ev) / len(ev), "wall_s": wall,
           "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0,
           "finite": all(math.isfinite(x) for x in losses)}
    del model, opt
    if cuda:
        torch.cuda.empty_cache()
    print("  %-8s seed %d: %.2f ms/step (median), final loss %.4f, eval %.4f, %.1f s, peak %.1f GiB"
          % (impl, seed, res["step_ms_median"], losses[-1], res["eval_loss"], wall, res["peak_mem_gib"]), flush=True)
    return res


class Stamp:
    """time.perf_counter with torch.cuda.Event's two methods, for a CPU smoke run."""

    def record(self):
        self.t = time.perf_counter()

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


def smooth(xs, w):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= w:
            acc -= xs[i - w]
        out.append(acc / min(i + 1, w))
    return out


def compare(runs, w):
    a, b, c = (smooth(runs[k]["losses"], w) for k in ("sdpa_seed0", "flashptx_seed0", "sdpa_seed1"))
    n = len(a)
    lo, half = min(w, n - 1), n // 2

    def mx(x, y, start):
        return max(abs(p - q) for p, q in zip(x[start:], y[start:]))
    raw = max(abs(p - q) for p, q in zip(runs["sdpa_seed0"]["losses"], runs["flashptx_seed0"]["losses"]))
    out = {"smooth_window": w,
           "max_abs_diff_flashptx_vs_sdpa0": mx(b, a, lo), "noise_max_abs_diff_sdpa1_vs_sdpa0": mx(c, a, lo),
           "second_half_diff_flashptx_vs_sdpa0": mx(b, a, half), "second_half_noise_sdpa1_vs_sdpa0": mx(c, a, half),
           "raw_max_abs_diff_flashptx_vs_sdpa0": raw,
           "step_time_ratio_flashptx_over_sdpa0": runs["flashptx_seed0"]["step_ms_median"] /
           runs["sdpa_seed0"]["step_ms_median"]}
    out["within_noise"] = out["max_abs_diff_flashptx_vs_sdpa0"] <= out["noise_max_abs_diff_sdpa1_vs_sdpa0"]
    return out, (a, b, c)


def plot(result, smoothed, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, cmp_ = result["runs"], result["comparison"]
    a, b, c = smoothed
    steps = range(1, len(a) + 1)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 8), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    style = {"sdpa_seed0": ("#2e86c1", "SDPA cuDNN, seed 0"), "flashptx_seed0": ("#c0392b", "flashptx, seed 0"),
             "sdpa_seed1": ("#7f8c8d", "SDPA cuDNN, seed 1")}
    for key, sm in (("sdpa_seed0", a), ("flashptx_seed0", b), ("sdpa_seed1", c)):
        color, label = style[key]
        ax1.plot(steps, runs[key]["losses"], color=color, alpha=0.2, lw=0.8)
        ax1.plot(steps, sm, color=color, lw=1.6, ls="--" if key == "flashptx_seed0" else "-",
                 label="%s (%.1f ms/step)" % (label, runs[key]["step_ms_median"]))
    ax1.set_ylabel("training loss (nats/byte)")
    ax1.set_yscale("log")
    ax1.grid(alpha=0.3)
    ax1.legend()
    ax2.plot(steps, [abs(p - q) for p, q in zip(b, a)], color="#c0392b", label="|flashptx - SDPA seed 0|")
    ax2.plot(steps, [abs(p - q) for p, q in zip(c, a)], color="#7f8c8d", label="|SDPA seed 1 - SDPA seed 0| (noise)")
    ax2.set_xlabel("step")
    ax2.set_ylabel("|difference| (smoothed %d)" % cmp_["smooth_window"])
    ax2.grid(alpha=0.3)
    ax2.legend()
    cfg = result["config"]
    fig.suptitle("%d layers, d_model %d, %d heads of %d, seq %d, batch %d, bf16 autocast, AdamW; %s\n"
                 "max smoothed |flashptx - SDPA| %.4f vs SDPA seed noise %.4f: %s"
                 % (cfg["layers"], cfg["dmodel"], cfg["heads"], cfg["dmodel"] // cfg["heads"], cfg["seq"],
                    cfg["batch"], result["meta"].get("device", "?"), cmp_["max_abs_diff_flashptx_vs_sdpa0"],
                    cmp_["noise_max_abs_diff_sdpa1_vs_sdpa0"],
                    "within noise" if cmp_["within_noise"] else "OUTSIDE the noise"), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for train_compare.json and train_compare.png")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--dmodel", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--smooth", type=int, default=20)
    ap.add_argument("--root", default=REPO, help="the tree whose text is the corpus")
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # "cpu": smoke tests of this script only
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    import torch
    import flashptx
    if args.device == "cuda" and not flashptx.available():
        print("train_compare: flashptx cannot run here: %s" % flashptx.unavailable_reason(), file=sys.stderr)
        return 1
    files, corpus = load_corpus(args.root)
    n = len(corpus)
    split = int(n * 0.95)
    if split <= args.seq + 1 or n - split <= args.seq + 1:
        print("train_compare: corpus too small (%d bytes)" % n, file=sys.stderr)
        return 1
    print("corpus: %d files, %d bytes (sha256 %s), train %d / held out %d"
          % (len(files), n, hashlib.sha256(corpus).hexdigest()[:16], split, n - split), flush=True)
    data = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).to(args.device)
    g = torch.Generator().manual_seed(1234)
    train_offsets = torch.randint(0, split - args.seq - 1, (args.steps, args.batch), generator=g).to(args.device)
    eval_offsets = (split + torch.randint(0, n - split - args.seq - 1, (4, args.batch), generator=g)).to(args.device)

    runs = {}
    for impl, seed in (("sdpa", 0), ("flashptx", 0), ("sdpa", 1)):
        runs["%s_seed%d" % (impl, seed)] = run_one(torch, args, impl, seed, data, train_offsets, eval_offsets)
    comparison, smoothed = compare(runs, args.smooth)
    device_name = torch.cuda.get_device_properties(0).name if args.device == "cuda" else args.device
    result = {
        "meta": {"tool": "tools/python/train_compare.py", "device": device_name, "torch": torch.__version__,
                 "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                 "library": flashptx.library_path(), "commit": os.environ.get("FLASHPTX_GIT_COMMIT", "unknown"),
                 "command_line": " ".join(sys.argv)},
        "config": {k: getattr(args, k) for k in ("steps", "batch", "seq", "layers", "dmodel", "heads", "lr", "smooth")},
        "corpus": {"files": [os.path.relpath(f, args.root) for f in files], "bytes": n,
                   "sha256": hashlib.sha256(corpus).hexdigest(), "train_bytes": split},
        "sdpa_inputs": "contiguous copies" if sdpa_inputs["contiguous"] else "strided views of the packed qkv",
        "comparison": comparison,
        "runs": runs,
    }
    with open(os.path.join(args.out, "train_compare.json"), "w") as f:
        json.dump(result, f, indent=1)
    try:
        plot(result, smoothed, os.path.join(args.out, "train_compare.png"))
    except ImportError as e:
        print("train_compare: no plot (%s)" % e, file=sys.stderr)
    c = comparison
    print("step time (median ms): sdpa seed0 %.2f, flashptx %.2f, sdpa seed1 %.2f (flashptx/sdpa %.3f)"
          % (runs["sdpa_seed0"]["step_ms_median"], runs["flashptx_seed0"]["step_ms_median"],
             runs["sdpa_seed1"]["step_ms_median"], c["step_time_ratio_flashptx_over_sdpa0"]))
    print("loss: max smoothed |flashptx - sdpa0| %.4f vs noise |sdpa1 - sdpa0| %.4f (second half %.4f vs %.4f): %s"
          % (c["max_abs_diff_flashptx_vs_sdpa0"], c["noise_max_abs_diff_sdpa1_vs_sdpa0"],
             c["second_half_diff_flashptx_vs_sdpa0"], c["second_half_noise_sdpa1_vs_sdpa0"],
             "within noise" if c["within_noise"] else "OUTSIDE the noise"))
    ok = c["within_noise"] and all(r["finite"] for r in runs.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
