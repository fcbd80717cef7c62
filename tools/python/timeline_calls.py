#!/usr/bin/env python3
"""The timeline of one forward+backward through flashptx.attention and through SDPA (cuDNN), as
`python -m flashptx.bench` times it: when the host issues each launch, when the GPU runs it, and
where the GPU waits for the host.

    PYTHONPATH=tools/python python3 tools/python/timeline_calls.py [--json F] [--trace-dir D] [--iters N]
                                                                  [--shapes d128s1024,d64s1024]

Why: at 1k keys the bench's forward+backward is longer than its kernels (the bare C calls) by more
than the kernels' margin over cuDNN's; profile_calls.py measures host time per call at a tiny shape,
which does not say whether the GPU waits, nor on what. This records N calls per implementation
under torch.profiler (CPU ops, CUDA runtime calls, GPU kernels and memsets), each call after an L2
flush and a synchronize as in the bench, and reports per call (median over N):
  - the GPU span from the call's first GPU operation to its last, and the GPU busy time inside it;
  - each GPU wait longer than 2 us inside the span: after which operation, and for how long;
  - the host time from the call's start to each launch (cudaLaunchKernel, cuLaunchKernelEx,
    cudaMemsetAsync, ...), so a wait can be matched to the host work before the next launch;
  - the host's CPU ops (aten::empty, autograd nodes, ...) between the forward's launch and the
    backward's first, by total time.
The profiler's own cost per recorded op inflates the host side (a few us per op); the same calls are
also timed without it (CUDA events, as the bench) for the end-to-end figure. --trace-dir writes one
chrome trace per shape and implementation (gzip) for a timeline viewer.
"""
import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC", "cudaMemsetAsync",
            "cudaMemcpyAsync", "cuMemsetD8Async", "cuMemsetD32Async", "cudaLaunchCooperativeKernel")


def parse_shape(text):
    d, s = text[1:].split("s")
    return int(d), int(s)


def analyse(trace, iters):
    """Per call (a user annotation "call N"), the launches and the GPU operations of that call."""
    ev = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    calls = sorted((e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("call ")),
                   key=lambda e: e["ts"])
    gpu = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])
    rt = sorted((e for e in ev if e.get("cat") == "cuda_runtime" or e.get("cat") == "cuda_driver"),
                key=lambda e: e["ts"])
    cpu = [e for e in ev if e.get("cat") == "cpu_op"]
    by_corr = {}
    for g in gpu:
        c = g.get("args", {}).get("correlation")
        if c is not None:
            by_corr[c] = g
    out = []
    for c in calls:
        t0, t1 = c["ts"], c["ts"] + c["dur"]
        launches = [r for r in rt if t0 <= r["ts"] <= t1 and any(r["name"].startswith(n) for n in LAUNCHES)]
        ops = []
        for r in launches:
            g = by_corr.get(r.get("args", {}).get("correlation"))
            if g is None:
                continue
            ops.append({"name": g["name"][:80], "launch_us": r["ts"] - t0, "start_us": g["ts"] - t0,
                        "dur_us": g["dur"]})
        if not ops:
            continue
        span = ops[-1]["start_us"] + ops[-1]["dur_us"] - ops[0]["start_us"]
        busy = sum(o["dur_us"] for o in ops)
        waits = []
        for a, b in zip(ops, ops[1:]):
            gap = b["start_us"] - (a["start_us"] + a["dur_us"])
            if gap > 2.0:
                waits.append({"after": a["name"], "before": b["name"], "wait_us": gap,
                              "next_launched_at_us": b["launch_us"]})
        # host CPU ops between the first GPU op's launch and the one after the longest wait
        window = None
        if waits:
            w = max(waits, key=lambda w: w["wait_us"])
            i = [o["name"] for o in ops].index(w["before"])
            window = (t0 + ops[i - 1]["launch_us"], t0 + ops[i]["launch_us"])
        cpu_in = {}
        if window:
            for e in cpu:
                if window[0] <= e["ts"] and e["ts"] + e["dur"] <= window[1]:
                    cpu_in.setdefault(e["name"], [0, 0.0])
                    cpu_in[e["name"]][0] += 1
                    cpu_in[e["name"]][1] += e["dur"]
        out.append({"host_us": c["dur"], "span_us": span, "busy_us": busy, "ops": ops, "waits": waits,
                    "host_window_us": (window[1] - window[0]) if window else 0.0,
                    "cpu_ops_in_window": sorted(([n, k, t] for n, (k, t) in cpu_in.items()), key=lambda x: -x[2])[:25]})
    return out[:iters]


def summarise(name, calls):
    med = lambda xs: statistics.median(xs) if xs else 0.0  # noqa: E731
    s = {"calls": len(calls), "host_us": med([c["host_us"] for c in calls]), "span_us": med([c["span_us"] for c in calls]),
         "busy_us": med([c["busy_us"] for c in calls]),
         "wait_us": med([sum(w["wait_us"] for w in c["waits"]) for c in calls]),
         "longest_wait_us": med([max([w["wait_us"] for w in c["waits"]] or [0.0]) for c in calls]),
         "host_window_us": med([c["host_window_us"] for c in calls])}
    last = calls[-1] if calls else None
    s["example"] = last
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--trace-dir", help="write the chrome traces here (gzip)")
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--reps", type=int, default=20, help="event-timed calls per implementation, as the bench")
    ap.add_argument("--shapes", default="d128s1024,d64s1024,d128s4096")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=2048)
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    import flashptx
    if not flashptx.available():
        print("timeline_calls: cannot run here: %s" % flashptx.unavailable_reason(), file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    meta = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(), "library": flashptx.library_path()}
    print("timeline_calls: %s, torch %s, cuDNN %s, library %s" % (meta["device"], meta["torch"], meta["cudnn"],
                                                                 meta["library"]), flush=True)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)

    def sdpa(q, k, v, causal):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=causal).transpose(1, 2)

    result = {"meta": meta, "shapes": []}
    for shape in args.shapes.split(","):
        d, s = parse_shape(shape)
        b, h = max(1, args.tokens // s), args.hidden // d
        for causal in (False, True):
            g = torch.Generator(device=dev).manual_seed(3)
            q, k, v, do = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(4))
            qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
            impls = {"flashptx": lambda: torch.autograd.grad(flashptx.attention(qg, kg, vg, causal=causal),
                                                             (qg, kg, vg), do),
                     "cudnn": lambda: torch.autograd.grad(sdpa(qg, kg, vg, causal), (qg, kg, vg), do)}
            row = {"hdim": d, "seqlen": s, "batch": b, "heads": h, "causal": causal, "impls": {}}
            # end to end without the profiler, as the bench: events, flush before, interleaved
            ms = {n: [] for n in impls}
            for _ in range(3):
                for f in impls.values():
                    f()
            torch.cuda.synchronize()
            names = list(impls)
            for rep in range(args.reps):
                for n in names[rep % 2:] + names[:rep % 2]:
                    flush.zero_()
                    a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    impls[n]()
                    e.record()
                    e.synchronize()
                    ms[n].append(a.elapsed_time(e))
            for n, f in impls.items():
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    for i in range(args.iters):
                        flush.zero_()
                        torch.cuda.synchronize()
                        with torch.profiler.record_function("call %d" % i):
                            f()
                        torch.cuda.synchronize()
                with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
                    path = tf.name
                prof.export_chrome_trace(path)
                with open(path) as fh:
                    trace = json.load(fh)
                os.unlink(path)
                if args.trace_dir:
                    os.makedirs(args.trace_dir, exist_ok=True)
                    with gzip.open(os.path.join(args.trace_dir, "trace-%s-%s-%s.json.gz" % (
                            shape, "causal" if causal else "full", n)), "wt") as fh:
                        json.dump(trace, fh)
                summ = summarise(n, analyse(trace, args.iters))
                summ["e2e_ms_median"] = statistics.median(ms[n])
                row["impls"][n] = summ
                print("d%d s%d b%d h%d %-6s %-8s e2e %.3f ms | profiled: host %.1f us, GPU span %.1f, busy %.1f, "
                      "waits %.1f (longest %.1f; host between its launches %.1f)" % (
                          d, s, b, h, "causal" if causal else "full", n, summ["e2e_ms_median"], summ["host_us"],
                          summ["span_us"], summ["busy_us"], summ["wait_us"], summ["longest_wait_us"],
                          summ["host_window_us"]), flush=True)
                ex = summ["example"]
                if ex:
                    for o in ex["ops"]:
                        print("    launch +%8.1f us  start +%8.1f  %8.1f us  %s" % (o["launch_us"], o["start_us"],
                                                                               o["dur_us"], o["name"]))
                    for w in ex["waits"]:
                        print("    GPU waits %.1f us after %s (next launched at +%.1f)" % (
                            w["wait_us"], w["after"][:50], w["next_launched_at_us"]))
                    for nm, cnt, t in ex["cpu_ops_in_window"][:12]:
                        print("      host op in that window: %8.1f us  x%d  %s" % (t, cnt, nm[:70]))
            result["shapes"].append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
