#!/usr/bin/env python3
"""Back-to-back forward launches of several libflashptx.so builds, alternated round by round.

    PYTHONPATH=tools/python python3 tools/bench/b2b_time.py new.so,old.so "B,S,H,D,CAUSAL;..."

No L2 flush and no gap between launches (the sustained load of `flashptx bench` and the ladder
bench): CUDA events around 20 launches, 5 warm-ups per build, 5 rounds with the builds alternated
in each, TFLOP/s of the median round printed with every round's (clocks fall over the rounds under
sustained load, so only builds measured in the same rounds compare). bf16, seqlen_q = seqlen_k.
Written for docs/DECISIONS.md, "The tile feed" (builds compared under sustained load).
"""
import ctypes, sys, os, torch
sys.path.insert(0, os.environ["PYTHONPATH"])
from flashptx import _abi
libs = []
for path in sys.argv[1].split(","):
    b = ctypes.CDLL(path)
    restype, argtypes = _abi.SIGNATURES["flashptx_fwd"]
    b.flashptx_fwd.restype, b.flashptx_fwd.argtypes = restype, argtypes
    libs.append((os.path.basename(path), b))
dev = torch.device("cuda")
st = lambda t: (t.stride(0), t.stride(1), t.stride(2))
for item in sys.argv[2].split(";"):
    b, s, h, d, c = (int(x) for x in item.split(","))
    g = torch.Generator(device=dev).manual_seed(0)
    q, k, v = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(b, h, s, device=dev)
    f = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(), "lse": lse.data_ptr()}, tuple(q.shape), tuple(k.shape), {"q": st(q), "k": st(k), "v": st(v), "o": st(o)}, 0, bool(c), 0.0)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    fl = 4.0 * b * h * s * s * d * (0.5 if c else 1.0)
    res = {n: [] for n, _ in libs}
    for n, lb in libs:
        for _ in range(5): lb.flashptx_fwd(ctypes.byref(f), stream)
    torch.cuda.synchronize()
    for rnd in range(5):
        for n, lb in libs:
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(20): lb.flashptx_fwd(ctypes.byref(f), stream)
            e1.record(); e1.synchronize()
            res[n].append(e0.elapsed_time(e1) / 20)
    line = "b%d s%d h%d d%d %s b2b TFLOP/s" % (b, s, h, d, "causal" if c else "full")
    for n, v in res.items():
        v.sort(); line += " | %s %.0f (%s)" % (n, fl / (v[2] * 1e-3) / 1e12, " ".join("%.0f" % (fl / (x * 1e-3) / 1e12) for x in v))
    print(line, flush=True)
