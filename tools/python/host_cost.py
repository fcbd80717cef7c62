#!/usr/bin/env python3
"""The package's own host work per flashptx.attention call, on a machine without a GPU.

    PYTHONPATH=tools/python python3 tools/python/host_cost.py [--calls N] [--package DIR] [--json F]

Needs PyTorch (a CPU build will do) and no GPU. The tensors are CPU tensors of the profile_calls.py
problem (b1 s128 h1 d64 bf16), the CUDA stream and device queries are stubbed, and the library is a
stand-in: where libflashptx.so is found, its flashptx_fwd_check / flashptx_bwd_check /
flashptx_bwd_workspace_size stand for flashptx_fwd / flashptx_bwd (the real ctypes conversions and
the library's own validation, no planning and no launch; the workspace's 256-byte alignment, which
CPU memory lacks, is let pass), else Python functions that return 0. So
what it prints is the Python and torch work of the package around the C call: argument checks,
layout tests, allocations, the params struct, the ctypes call, custom-op dispatch, autograd. It
leaves out what only a GPU shows (a CUDA stream query, a device guard, the launch itself); on the
H200 tools/python/profile_calls.py measures the whole call.

--package DIR runs another copy of the package (e.g. an older commit's tools/python, extracted with
`git archive`), so that two versions can be compared on one machine. Each line is the median of 5
runs of --calls calls; 'yardstick' lines (a torch.empty, a no-op autograd.Function) say how fast
this machine's torch is, to scale the numbers to another host.
"""
import argparse
import contextlib
import ctypes
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class StandIn:
    """A library object for the package: the real library's check functions where it loads, else
    Python stubs; counts the calls into it."""

    def __init__(self, real):
        self.real = real
        self.counts = {}
        self._flashptx_path = getattr(real, "_flashptx_path", "(python stubs)")
        if real is not None:
            fc, bc, ws = real.flashptx_fwd_check, real.flashptx_bwd_check, real.flashptx_bwd_workspace_size
            self.flashptx_fwd = lambda p, stream: fc(p)
            # CPU memory from torch is 64-byte aligned, the workspace must be 256: that one status
            # (FLASHPTX_ERR_WORKSPACE, 13) is a property of the stand-in, not of the call
            self.flashptx_bwd = lambda p, stream: (lambda st: 0 if st == 13 else st)(bc(p))
            self.flashptx_bwd_workspace_size = ws
            self.flashptx_last_error = real.flashptx_last_error
        else:
            self.flashptx_fwd = lambda p, stream: 0
            self.flashptx_bwd = lambda p, stream: 0

            def ws(p, out):
                out._obj.value = 1 << 16
                return 0
            self.flashptx_bwd_workspace_size = ws
            self.flashptx_last_error = lambda: b""

    def counting(self):
        """The same object with every call counted in self.counts (slower: for counting only)."""
        for name in ("flashptx_fwd", "flashptx_bwd", "flashptx_bwd_workspace_size"):
            fn = getattr(self, name)

            def wrap(*a, _fn=fn, _name=name):
                self.counts[_name] = self.counts.get(_name, 0) + 1
                return _fn(*a)
            setattr(self, name, wrap)
        return self


def per_call_us(fn, calls, runs=5):
    for _ in range(max(10, calls // 10)):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--package", help="the folder holding the flashptx package to measure (default: beside this file)")
    ap.add_argument("--json", help="write the numbers here")
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.abspath(args.package) if args.package else HERE)

    import torch

    import flashptx
    from flashptx import _abi
    from flashptx import _torch as ft

    real = None
    try:
        path = _abi.find_library()
        real = ctypes.CDLL(path)  # only the functions used here bound: an older build will do
        for name in ("flashptx_fwd_check", "flashptx_bwd_check", "flashptx_bwd_workspace_size", "flashptx_last_error"):
            getattr(real, name).restype, getattr(real, name).argtypes = _abi.SIGNATURES[name]
        real._flashptx_path = path
    except (_abi.LibraryNotFoundError, OSError, AttributeError) as e:
        real = None
        print("host_cost: no usable libflashptx.so (%s); the library calls are Python stubs" % str(e).split("\n")[0])
    lib = StandIn(real)
    _abi._lib = lib
    # CPU tensors through the package, the CUDA queries stubbed: the stream is 0 and the device guard
    # a no-op (in either version of the package).
    ft._DEVICE_TYPES = ("cuda", "cpu")
    torch.cuda.device = lambda d: contextlib.nullcontext()
    if hasattr(ft, "_stream"):
        ft._stream = lambda device: ctypes.c_void_p(0)
    if hasattr(ft, "_current_stream"):
        ft._current_stream = lambda index: 0
    if hasattr(ft, "_current_device"):
        ft._current_device = lambda: -1

    torch.manual_seed(0)
    b, s, h, d = 1, 128, 1, 64
    q, k, v, do = (torch.randn(b, s, h, d, dtype=torch.bfloat16) for _ in range(4))
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    out, lse = torch.ops.flashptx.fwd(q, k, v, False, 0.0, False)
    dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
    attention = flashptx.attention

    def pkg_fwd():
        with torch.no_grad():
            attention(q, k, v)

    def pkg_fwd_causal():
        with torch.no_grad():
            attention(q, k, v, causal=True)

    def pkg_fb():
        torch.autograd.grad(attention(qg, kg, vg), (qg, kg, vg), do)

    def op_fwd():
        with torch.no_grad():
            torch.ops.flashptx.fwd(q, k, v, False, 0.0, False)

    def op_fb():
        o, _ = torch.ops.flashptx.fwd(qg, kg, vg, False, 0.0, False)
        torch.autograd.grad(o, (qg, kg, vg), do)

    def launch_fwd():
        ft._launch_fwd(q, k, v, out, lse, False, 0.0)

    def launch_bwd():
        ft._launch_bwd(do, q, k, v, out, lse, dq, dk, dv, False, 0.0, False)

    bare_f = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": out.data_ptr(),
                              "lse": lse.data_ptr()}, tuple(q.shape), tuple(k.shape),
                             {n: (t.stride(0), t.stride(1), t.stride(2)) for n, t in
                              (("q", q), ("k", k), ("v", v), ("o", out))}, _abi.FLASHPTX_BF16, False, 0.0)
    pf = ctypes.byref(bare_f)

    def bare_fwd():
        lib.flashptx_fwd(pf, None)

    def build_params():
        _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": out.data_ptr(),
                         "lse": lse.data_ptr(), "tile_counter": None}, tuple(q.shape), tuple(k.shape),
                        {n: (t.stride(0), t.stride(1), t.stride(2)) for n, t in
                         (("q", q), ("k", k), ("v", v), ("o", out))},
                        (_abi.FLASHPTX_BF16,) * 4, False, 0.0)

    class Noop(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, g):
            return g

    def noop_fn():
        Noop.apply(qg)

    rows = [
        ("package fwd (no grad)", pkg_fwd),
        ("package fwd causal (no grad)", pkg_fwd_causal),
        ("package fwd+bwd (autograd)", pkg_fb),
        ("torch.ops.flashptx.fwd (no grad)", op_fwd),
        ("torch.ops.flashptx fwd+bwd (autograd)", op_fb),
        ("_launch_fwd alone", launch_fwd),
        ("_launch_bwd alone", launch_bwd),
        ("_abi.fwd_params (a struct from scratch)", build_params),
        ("bare C fwd (prebuilt struct)", bare_fwd),
        ("yardstick: torch.empty(64)", lambda: torch.empty(64)),
        ("yardstick: no-op autograd.Function", noop_fn),
    ]
    print("host_cost: torch %s, package %s, library stand-in %s" % (torch.__version__, os.path.dirname(ft.__file__),
                                                                     lib._flashptx_path))
    res = {}
    for name, fn in rows:
        res[name] = per_call_us(fn, args.calls)
        print("  %-42s %8.2f us per call" % (name, res[name]), flush=True)

    counting = StandIn(real).counting()
    _abi._lib = counting
    for name, fn in (("package fwd", pkg_fwd), ("package fwd+bwd", pkg_fb)):
        counting.counts.clear()
        fn()
        print("  library calls per %s: %s" % (name, ", ".join("%s %d" % kv for kv in sorted(counting.counts.items()))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "package": os.path.dirname(ft.__file__), "us_per_call": res}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
