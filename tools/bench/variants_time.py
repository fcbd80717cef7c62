#!/usr/bin/env python3
"""GPU kernel time of the forward's variants (sliding window, softcap) beside the kernels they are
measured against: a window against the causal kernel at the same shape, TFLOP/s counted on the
scores the window lets through; a softcap against the same mask without it.

    PYTHONPATH=tools/python FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/variants_time.py \
        [--dims 64,128,256] [--seqlen 8192] [--rounds 3] [--bwd] [--out FILE]

Method (as tools/bench/kernel_time.py): each call 5 times per round under torch.profiler, a 256 MB
L2 flush before each (its fill kernel left out), the sum of the GPU durations of the kernels the call
launched; rounds interleave the variants; the median round is reported. Shapes: 16k tokens, hidden
2048 (batch = 16384 / seqlen, heads = 2048 / d), bf16, N(0,1) inputs. FLOPs: 4 * d * B * H * the
number of (query, key) pairs the mask lets through, counted exactly (the FA3 paper's convention for
full and causal masks). The targets (the variants issue): a window within 10% of the causal kernel's
TFLOP/s, a softcap within 10% of the same kernel without it. Correctness: each variant's O against an
fp32 reference (the mask and the softcap applied explicitly) on batch 0, the first two heads.
--bwd: the backward of each variant too (the library's preprocess, main kernel and postprocess, after
its own forward), counted as 2.5x the forward's FLOPs on the same visible pairs (the FA3 paper's
convention); its dQ, dK and dV against the fp32 reference's autograd gradients on batch 0, heads 0-1,
and relative to the causal (or full) backward, as the forward's.
"""
import argparse, json, os, sys

ap = argparse.ArgumentParser()
ap.add_argument("--dims", default="64,128,256")
ap.add_argument("--seqlen", type=int, default=8192)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--softcap", type=float, default=30.0)
ap.add_argument("--bwd", action="store_true", help="time the backward of each variant too (flashptx_bwd, 2.5x the forward's FLOPs)")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "variants_time.json"))
args = ap.parse_args()

sys.path.insert(0, os.environ.get("PYTHONPATH", "tools/python"))
import ctypes
import torch
from flashptx import _abi
import gpu_time

lib = _abi.library()
dev = torch.device("cuda")
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)
stream = lambda: ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def gpu_us(fn, reps=5):
    return gpu_time.gpu_us(fn, flush, reps)


def visible(sq, sk, causal, window):
    """(query, key) pairs the mask lets through: FlashAttention's bottom-right convention."""
    off = sk - sq
    i = torch.arange(sq, dtype=torch.int64)
    lo = torch.zeros(sq, dtype=torch.int64)
    hi = torch.full((sq,), sk - 1, dtype=torch.int64)
    left, right = window if window is not None else (-1, -1)
    if causal:
        right = 0 if right < 0 else min(right, 0)
    if left >= 0:
        lo = torch.clamp(i + off - left, min=0)
    if right >= 0:
        hi = torch.clamp(i + off + right, max=sk - 1)
    return int(torch.clamp(hi - lo + 1, min=0).sum())


def reference(q, k, v, causal, window, softcap, scale, do=None):
    """fp32 O of batch 0, heads 0-1, the mask and the softcap applied explicitly; with do, the
    gradients (dq, dk, dv) of sum(O * do) for those heads instead."""
    sq, sk = q.shape[1], k.shape[1]
    off = sk - sq
    i = torch.arange(sq, device=dev)[:, None]
    j = torch.arange(sk, device=dev)[None, :]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=dev)
    left, right = window if window is not None else (-1, -1)
    if causal:
        right = 0 if right < 0 else min(right, 0)
    if left >= 0:
        keep &= j >= i + off - left
    if right >= 0:
        keep &= j <= i + off + right
    outs, grads = [], []
    for h in range(2):
        qh, kh, vh = (t[0, :, h].float().requires_grad_(do is not None) for t in (q, k, v))
        with torch.set_grad_enabled(do is not None):
            s = (qh @ kh.T) * scale
            if softcap > 0:
                s = softcap * torch.tanh(s / softcap)
            s = s.masked_fill(~keep, float("-inf"))
            p = torch.softmax(s, dim=-1).nan_to_num(0.0)
            oh = p @ vh
        if do is not None:
            grads.append(torch.autograd.grad(oh, (qh, kh, vh), do[0, :, h].float()))
        else:
            outs.append(oh)
        del s, p, oh
    if do is not None:
        return tuple(torch.stack([g[i] for g in grads], dim=1) for i in range(3))
    return torch.stack(outs, dim=1)


rows = []
S = args.seqlen
for d in (int(x) for x in args.dims.split(",")):
    B, H = 16384 // S, 2048 // d
    g = torch.Generator(device=dev).manual_seed(d * 7 + S)
    q, k, v = (torch.randn(B, S, H, d, device=dev, generator=g).to(torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=dev)
    st = lambda t: (t.stride(0), t.stride(1), t.stride(2))
    scale = d ** -0.5
    variants = [  # name, causal, window, softcap
        ("full", False, None, 0.0), ("causal", True, None, 0.0),
        ("window 1024 left, causal", True, (1024, 0), 0.0), ("window 4096 left, causal", True, (4096, 0), 0.0),
        ("window (512, 512)", False, (512, 512), 0.0),
        ("full, softcap", False, None, args.softcap), ("causal, softcap", True, None, args.softcap),
    ]
    impls = {}
    for name, causal, window, cap in variants:
        try:
            p = _abi.fwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": o.data_ptr(),
                                 "lse": lse.data_ptr()}, tuple(q.shape), tuple(k.shape),
                                {"q": st(q), "k": st(k), "v": st(v), "o": st(o)}, 0, causal, 0.0,  # 0: bf16
                                window_size=window, softcap=cap)
        except Exception as e:  # noqa: BLE001 (one variant failing must not end the run)
            print(f"d{d} {name}: params failed: {e!r}", flush=True)
            continue
        o.fill_(float("nan"))
        rc = lib.flashptx_fwd(ctypes.byref(p), stream()); torch.cuda.synchronize()
        if rc != 0:
            print(f"d{d} {name}: flashptx_fwd returned {rc}", flush=True)
            continue
        ref = reference(q, k, v, causal, window, cap, scale)
        err = (o[0, :, :2].float() - ref).abs().max().item()
        print(f"d{d} {name}: max|O - fp32 ref| (batch 0, heads 0-1) = {err:.3e}", flush=True)
        del ref
        impls[name] = (p, causal, window, cap, err)
        if args.bwd:
            # The backward after this variant's own forward (o and lse as it left them).
            oo, ll = o.clone(), lse.clone()
            do = torch.randn(q.shape, device=dev, generator=g).to(torch.bfloat16)
            dq, dk, dv = (torch.full_like(t, float("nan")) for t in (q, k, v))
            bp = _abi.bwd_params({"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "o": oo.data_ptr(),
                                  "lse": ll.data_ptr(), "dout": do.data_ptr(), "dq": dq.data_ptr(), "dk": dk.data_ptr(),
                                  "dv": dv.data_ptr()}, tuple(q.shape), tuple(k.shape),
                                 {"q": st(q), "k": st(k), "v": st(v), "o": st(oo), "do": st(do), "dq": st(dq),
                                  "dk": st(dk), "dv": st(dv)}, 0, causal, 0.0, False)
            bp.window = 1 if window is not None else 0
            bp.window_left, bp.window_right = window if window is not None else (-1, -1)
            bp.softcap = cap
            need = ctypes.c_int64(0)
            rc = lib.flashptx_bwd_workspace_size(ctypes.byref(bp), ctypes.byref(need))
            ws = torch.empty(max(need.value, 256), dtype=torch.uint8, device=dev)
            bp.workspace, bp.workspace_bytes = ws.data_ptr(), need.value
            rc = rc or lib.flashptx_bwd(ctypes.byref(bp), stream()); torch.cuda.synchronize()
            if rc != 0:
                print(f"d{d} {name} backward: flashptx_bwd returned {rc}: {lib.flashptx_last_error().decode()}", flush=True)
            else:
                refs = reference(q, k, v, causal, window, cap, scale, do=do)
                berr = max(((t[0, :, :2].float() - r).abs().max() / r.abs().max().clamp(min=1e-6)).item()
                           for t, r in zip((dq, dk, dv), refs))
                print(f"d{d} {name} backward: max|dX - fp32 ref| / max|ref| over dQ, dK, dV (batch 0, heads 0-1)"
                      f" = {berr:.3e}", flush=True)
                del refs
                impls[name + " [bwd]"] = (bp, causal, window, cap, berr, (oo, ll, do, dq, dk, dv, ws))
    times = {n: [] for n in impls}
    for _ in range(args.rounds):
        for n, (p, *_r) in impls.items():
            call = lib.flashptx_bwd if n.endswith(" [bwd]") else lib.flashptx_fwd
            times[n].append(gpu_us(lambda p=p, call=call: call(ctypes.byref(p), stream())))
    for n, (p, causal, window, cap, err, *_keep) in impls.items():
        us = sorted(times[n])[len(times[n]) // 2]
        pairs = visible(S, S, causal, window)
        flops = (2.5 if n.endswith(" [bwd]") else 1.0) * 4.0 * d * B * H * pairs
        rows.append({"d": d, "B": B, "H": H, "S": S, "variant": n, "direction": "bwd" if n.endswith(" [bwd]") else "fwd",
                     "causal": causal, "window": window, "softcap": cap, "us": us, "visible_pairs": pairs,
                     "tflops_visible": flops / us * 1e-6, "max_err": err})
    by = {r["variant"]: r for r in rows if r["d"] == d}
    for direction, tag in (("fwd", ""), ("bwd", " [bwd]")):
        line = f"d{d} S{S} B{B} H{H} {direction} TFLOP/s on visible scores:"
        for n, r in by.items():
            if r["direction"] != direction:
                continue
            base = by.get(("causal" if r["causal"] else "full") + tag)
            plain = n in ("full" + tag, "causal" + tag)
            rel = f" ({r['tflops_visible'] / base['tflops_visible']:.2f} of {'causal' if r['causal'] else 'full'})" \
                if base and not plain else ""
            line += f" | {n.replace(tag, '')} {r['tflops_visible']:.0f}{rel}"
        if any(r["direction"] == direction for r in by.values()):
            print(line, flush=True)
    impls.clear()
    del q, k, v, o, lse
env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda}
with open(args.out, "w") as f:
    json.dump({"environment": env, "rows": rows}, f, indent=1)
print("wrote", args.out)
