"""python -m flashptx.bench: flashptx.attention beside PyTorch SDPA (cuDNN, flash), forward and
forward+backward, on a few FA3-grid shapes (batch x seqlen = 16k tokens, hidden 2048, bf16).

    PYTHONPATH=tools/python python3 -m flashptx.bench [--json out.json] [--reps 20] [--seqlens 1024,4096]

The side-by-side idea of tools/bench/side_by_side.py, through the package: what is timed is what a
PyTorch user calls (flashptx.attention and F.scaled_dot_product_attention with autograd), Python
overhead included. Implementations are interleaved rep by rep on the same tensors (PyTorch sees
[B, H, S, D] transposed views of them, no copy); before each timed call a 256 MB write flushes L2
(untimed); CUDA events bracket the call; the median of --reps after warm-up is reported.
FLOPs: forward 4*B*H*S*S*d (halved when causal); forward+backward 3.5x that.
"""
import argparse
import json
import statistics
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m flashptx.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hdims", default="64,128")
    ap.add_argument("--seqlens", default="1024,4096")
    ap.add_argument("--tokens", type=int, default=16384, help="batch x seqlen")
    ap.add_argument("--hidden", type=int, default=2048, help="heads x head_dim")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)  # "cpu": smoke tests of this script only
    args = ap.parse_args(argv)

    import flashptx
    if args.device == "cuda" and not flashptx.available():
        print("flashptx.bench: cannot run here: %s" % flashptx.unavailable_reason(), file=sys.stderr)
        return 1
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device(args.device)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)

    def sdpa(backend):
        def f(q, k, v, causal):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                      is_causal=causal).transpose(1, 2)
        return f

    impls = {"flashptx": lambda q, k, v, causal: flashptx.attention(q, k, v, causal=causal),
             "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "flash": sdpa(SDPBackend.FLASH_ATTENTION)}

    def timed(fn):
        flush.zero_()
        if dev.type != "cuda":
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    rows = []
    for d in [int(x) for x in args.hdims.split(",")]:
        for s in [int(x) for x in args.seqlens.split(",")]:
            for causal in (False, True):
                b, h = max(1, args.tokens // s), args.hidden // d
                torch.manual_seed(0)
                q, k, v, do = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(4))
                qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
                flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                for direction in ("fwd", "fwd+bwd"):
                    fns, errors = {}, {}
                    for name, f in impls.items():
                        if direction == "fwd":
                            def call(f=f, args=(q, k, v, causal)):
                                with torch.no_grad():
                                    f(*args)
                        else:
                            def call(f=f, args=(qg, kg, vg, causal), do=do):
                                torch.autograd.grad(f(*args), args[:3], do)
                        try:
                            call()
                            sync()
                            fns[name] = call
                        except Exception as e:  # noqa: BLE001 - recorded as this impl's result
                            errors[name] = "%s: %s" % (type(e).__name__, str(e).split("\n")[0][:200])
                    for _ in range(args.warmup):
                        for f in fns.values():
                            f()
                    ms = {n: [] for n in fns}
                    names = list(fns)
                    for rep in range(args.reps):
                        for n in names[rep % len(names):] + names[:rep % len(names)]:
                            ms[n].append(timed(fns[n]))
                    work = flops * (3.5 if direction == "fwd+bwd" else 1.0)
                    for n in impls:
                        row = {"impl": n, "direction": direction, "hdim": d, "seqlen": s, "batch": b, "heads": h,
                               "causal": causal}
                        if n in ms:
                            med = statistics.median(ms[n])
                            row.update(ms=med, tflops=work / (med * 1e-3) / 1e12)
                        else:
                            row.update(ms=None, tflops=None, error=errors.get(n))
                        rows.append(row)
                    cells = "  ".join("%s %s" % (r["impl"], "%6.1f" % r["tflops"] if r["tflops"] else "   err")
                                      for r in rows[-len(impls):])
                    print("d%-3d s%-5d b%-2d h%-2d %-6s %-7s TFLOP/s: %s" % (
                        d, s, b, h, "causal" if causal else "full", direction, cells), flush=True)
    meta = {"device": torch.cuda.get_device_properties(dev).name if dev.type == "cuda" else str(dev), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
            "library": flashptx.library_path(), "warmup": args.warmup, "reps": args.reps,
            "timing": "CUDA events around one call, 256 MB L2 flush before each (untimed), interleaved, median"}
    errs = [r for r in rows if r.get("error")]
    for r in errs:
        print("error: %s d%d s%d %s %s: %s" % (r["impl"], r["hdim"], r["seqlen"], "causal" if r["causal"] else "full",
                                              r["direction"], r["error"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
