#!/usr/bin/env python3
"""Where the time of a flashptx.attention call goes, next to SDPA (cuDNN): host time per call, the
same kernels timed through the package and through the bare C calls, and the GPU work of each.

    PYTHONPATH=tools/python python3 tools/python/profile_calls.py [--json F] [--host-only] [--package DIR]
                                                                 [--cprofile N]

--host-only: section 1 alone (seconds). --cprofile N: after section 1, the forward+backward's host
time split (the whole call, a no-op autograd.Function's floor, the package's forward, its backward
work called directly) and cProfile of the last two (cprofile_fwd_bwd says why in two parts). --package DIR: the flashptx package in DIR instead of the one
beside this file (e.g. an older commit's tools/python from `git archive`), to compare two versions on
one machine. tools/python/host_cost.py measures the package's own Python work without a GPU.

Why: `python -m flashptx.bench` (CUDA events around one call, after an untimed 256 MB flush) showed
flashptx below cuDNN at shapes where tools/bench/side_by_side.py, which calls the library through a
prebuilt ctypes struct, shows it above. The two differ in the host path only, so this measures it:

1. host microseconds per call: 300 calls of a problem whose GPU work is a few microseconds
   (b1 s128 h1 d64), timed with perf_counter and one synchronize at the end, so the host is the
   bottleneck: flashptx.attention (forward without grad, forward+backward through autograd), the
   bare flashptx_fwd with a prebuilt struct (the library's own host cost), SDPA cuDNN the same ways;
   then the package's other paths: a causal forward (d64: the tile counter), and the custom ops
   torch.ops.flashptx.fwd/bwd called directly (the path torch.compile's graphs run).
2. one call timed as the bench times it (events, flush before), at d128 s4096 b4 h16 and d128
   s1024 b16 h16, causal or not: package forward and forward+backward, the bare C calls with
   prebuilt structs and a preallocated workspace (the same kernels), SDPA cuDNN; interleaved rep by
   rep, median of --reps.
3. the GPU work of one forward+backward per implementation at d128 s4096 b4 h16 (torch.profiler):
   every kernel, memset and copy with its duration.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--host-only", action="store_true", help="section 1 alone")
    ap.add_argument("--package", help="the folder holding the flashptx package to measure")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N",
                    help="also: N package forward+backward calls of section 1's problem under cProfile (the "
                         "functions by own time), beside the floor of autograd itself (a no-op "
                         "autograd.Function's forward+backward)")
    args = ap.parse_args(argv)
    if args.package:
        sys.path.insert(0, os.path.abspath(args.package))

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import flashptx
    from flashptx import _abi

    if not flashptx.available():
        print("profile_calls: cannot run here: %s" % flashptx.unavailable_reason(), file=sys.stderr)
        return 1
    lib = _abi.library()
    dev = torch.device("cuda")
    out = {"meta": {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
                    "cudnn": torch.backends.cudnn.version(), "library": flashptx.library_path(),
                    "package": os.path.dirname(flashptx.__file__)}}
    print("profile_calls: %s, torch %s, cuDNN %s, package %s, library %s" % (
        out["meta"]["device"], torch.__version__, out["meta"]["cudnn"], out["meta"]["package"],
        out["meta"]["library"]), flush=True)

    def sdpa(q, k, v, causal):
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=causal).transpose(1, 2)

    def strides(t):
        return (t.stride(0), t.stride(1), t.stride(2))

    class Bare:
        """The C calls with structs built once and a workspace allocated once: the library's cost."""

        def __init__(self, q, k, v, do, causal):
            self.o, self.lse = torch.empty_like(q), torch.empty(q.shape[0], q.shape[2], q.shape[1], device=dev)
            self.dq, self.dk, self.dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            dt = _abi.FLASHPTX_BF16
            self.f = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": self.o.data_ptr(),
                                      "lse": self.lse.data_ptr()}, tuple(q.shape), tuple(k.shape),
                                     {"q": strides(q), "k": strides(k), "v": strides(v), "o": strides(self.o)},
                                     dt, causal, 0.0)
            self.b = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": self.o.data_ptr(),
                                      "lse": self.lse.data_ptr(), "dout": do.data_ptr(), "dq": self.dq.data_ptr(),
                                      "dk": self.dk.data_ptr(), "dv": self.dv.data_ptr()},
                                     tuple(q.shape), tuple(k.shape),
                                     {"q": strides(q), "k": strides(k), "v": strides(v), "o": strides(self.o),
                                      "do": strides(do), "dq": strides(self.dq), "dk": strides(self.dk),
                                      "dv": strides(self.dv)}, dt, causal, 0.0, False)
            need = ctypes.c_int64(0)
            _abi.check(lib, "flashptx_bwd_workspace_size", lib.flashptx_bwd_workspace_size(ctypes.byref(self.b),
                                                                                            ctypes.byref(need)))
            self.ws = torch.empty(max(1, need.value), dtype=torch.uint8, device=dev)
            self.b.workspace, self.b.workspace_bytes = self.ws.data_ptr(), need.value
            self.stream = ctypes.c_void_p(torch.cuda.current_stream(dev).cuda_stream)
            self.pf, self.pb = ctypes.byref(self.f), ctypes.byref(self.b)

        def fwd(self):
            s = lib.flashptx_fwd(self.pf, self.stream)
            if s:
                _abi.check(lib, "flashptx_fwd", s)

        def fwd_bwd(self):
            self.fwd()
            s = lib.flashptx_bwd(self.pb, self.stream)
            if s:
                _abi.check(lib, "flashptx_bwd", s)

    def problem(b, s, h, d, seed=0):
        g = torch.Generator(device=dev).manual_seed(seed)
        q, k, v, do = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(4))
        return q, k, v, do

    def calls(q, k, v, do, causal):
        qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
        bare = Bare(q, k, v, do, causal)

        def pkg_fwd():
            with torch.no_grad():
                flashptx.attention(q, k, v, causal=causal)

        def pkg_fb():
            torch.autograd.grad(flashptx.attention(qg, kg, vg, causal=causal), (qg, kg, vg), do)

        def cud_fwd():
            with torch.no_grad():
                sdpa(q, k, v, causal)

        def cud_fb():
            torch.autograd.grad(sdpa(qg, kg, vg, causal), (qg, kg, vg), do)

        return {"flashptx package fwd": pkg_fwd, "flashptx bare C fwd": bare.fwd, "cudnn fwd": cud_fwd,
                "flashptx package fwd+bwd": pkg_fb, "flashptx bare C fwd+bwd": bare.fwd_bwd, "cudnn fwd+bwd": cud_fb}

    # 1. host time per call
    q, k, v, do = problem(1, 128, 1, 64)
    host = {}
    one = calls(q, k, v, do, False)
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))

    def pkg_fwd_causal():
        with torch.no_grad():
            flashptx.attention(q, k, v, causal=True)

    def op_fwd():
        with torch.no_grad():
            torch.ops.flashptx.fwd(q, k, v, False, 0.0, False)

    def op_fb():
        o, _ = torch.ops.flashptx.fwd(qg, kg, vg, False, 0.0, False)
        torch.autograd.grad(o, (qg, kg, vg), do)

    one.update({"flashptx package fwd causal": pkg_fwd_causal, "flashptx op fwd (torch.ops)": op_fwd,
                "flashptx op fwd+bwd (torch.ops)": op_fb})
    for name, fn in one.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(300):
            fn()
        torch.cuda.synchronize()
        host[name] = (time.perf_counter() - t0) / 300 * 1e6
        print("host per call, b1 s128 h1 d64: %-26s %7.1f us" % (name, host[name]), flush=True)
    out["host_us_per_call"] = host
    if args.cprofile:
        out["cprofile"] = cprofile_fwd_bwd(torch, one["flashptx package fwd+bwd"], q, do, args.cprofile)
    if args.host_only:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
        return 0

    # 2. one call as the bench times it
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)

    def timed(fn):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b)

    rows = []
    for (b, s, h, d) in ((4, 4096, 16, 128), (16, 1024, 16, 128)):
        for causal in (False, True):
            q, k, v, do = problem(b, s, h, d, seed=1)
            fns = calls(q, k, v, do, causal)
            for fn in fns.values():
                fn()
            torch.cuda.synchronize()
            names = list(fns)
            ms = {n: [] for n in names}
            for rep in range(args.reps):
                for n in names[rep % len(names):] + names[:rep % len(names)]:
                    ms[n].append(timed(fns[n]))
            flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
            for n in names:
                med = statistics.median(ms[n])
                work = flops * (3.5 if "bwd" in n else 1.0)
                rows.append({"impl": n, "batch": b, "seqlen": s, "heads": h, "hdim": d, "causal": causal,
                             "ms": med, "tflops": work / (med * 1e-3) / 1e12})
                print("one call, d%d s%d b%d h%d %-6s %-26s %8.3f ms %7.1f TFLOP/s" % (
                    d, s, b, h, "causal" if causal else "full", n, med, rows[-1]["tflops"]), flush=True)
    out["one_call"] = rows

    # 3. GPU work of one forward+backward
    q, k, v, do = problem(4, 4096, 16, 128, seed=2)
    fns = calls(q, k, v, do, False)
    gpu = {}
    for name in ("flashptx package fwd+bwd", "flashptx bare C fwd+bwd", "cudnn fwd+bwd"):
        fns[name]()
        torch.cuda.synchronize()
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                fns[name]()
                torch.cuda.synchronize()
            items = []
            for e in prof.events():
                if str(getattr(e, "device_type", "")).endswith("CUDA"):
                    items.append((e.name[:90], e.time_range.elapsed_us()))
            gpu[name] = items
            print("GPU work, %s at d128 s4096 b4 h16 full: %d items, %.1f us in all" % (
                name, len(items), sum(t for _, t in items)), flush=True)
            for n, t in items:
                print("    %9.1f us  %s" % (t, n))
        except Exception as e:  # noqa: BLE001 - recorded, the rest stands
            gpu[name] = "profiler failed: %s: %s" % (type(e).__name__, e)
            print("GPU work, %s: %s" % (name, gpu[name]), flush=True)
    out["gpu_work"] = gpu
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


def cprofile_fwd_bwd(torch, pkg_fb, q, do, n):
    """Where the package's forward+backward host time goes, in three parts: the whole call; the floor
    any autograd.Function pays through the same torch.autograd.grad (a no-op Function: forward one
    new_empty, backward three); the package's own backward work called directly (_bwd_impl, what
    _Attention.backward runs: the autograd engine runs it on its device thread, out of the caller's
    cProfile). Then cProfile of n forward-with-grad calls and of n direct _bwd_impl calls (each
    function's own time per call, the top 25 of each)."""
    import cProfile
    import pstats
    import flashptx
    from flashptx import _torch

    class Noop(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return a.new_empty(a.shape)

        @staticmethod
        def backward(ctx, g):
            return g.new_empty(g.shape), g.new_empty(g.shape), g.new_empty(g.shape)

    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, q, q))
    out, lse = flashptx.attention(q, q, q, return_lse=True)
    lse = lse.contiguous()

    def noop_fb():
        torch.autograd.grad(Noop.apply(qg, kg, vg), (qg, kg, vg), do)

    def fwd_grad():
        flashptx.attention(qg, kg, vg)

    def bwd_direct():
        _torch._bwd_impl(do, q, q, q, out, lse, False, 0.0, False, saved=True)

    res = {}
    parts = (("flashptx package fwd+bwd", pkg_fb), ("no-op autograd.Function fwd+bwd", noop_fb),
             ("flashptx forward with grad (no backward)", fwd_grad), ("flashptx _bwd_impl direct", bwd_direct))
    for name, fn in parts:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        res[name + " us/call"] = (time.perf_counter() - t0) / n * 1e6
        print("host per call, b1 s128 h1 d64: %-42s %7.1f us" % (name, res[name + " us/call"]), flush=True)
    for name, fn in parts[2:]:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        prof.disable()
        rows = []
        for (fname, line, func), (cc, nc, tt, ct, _) in pstats.Stats(prof).stats.items():
            rows.append({"function": "%s:%d(%s)" % (os.path.basename(fname), line, func), "calls_per_call": nc / n,
                         "own_us_per_call": tt / n * 1e6, "cum_us_per_call": ct / n * 1e6})
        rows.sort(key=lambda r: -r["own_us_per_call"])
        print("cProfile, %d x %s: own us per call, cumulative, calls per call" % (n, name))
        for r in rows[:25]:
            print("  %8.1f %8.1f %5.1f  %s" % (r["own_us_per_call"], r["cum_us_per_call"], r["calls_per_call"],
                                              r["function"]))
        res["top: " + name] = rows[:50]
    return res


if __name__ == "__main__":
    sys.exit(main())
