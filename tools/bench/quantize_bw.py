#!/usr/bin/env python3
"""Bandwidth of flashptx_quantize_fp8 against a device-to-device copy, on the GPU machine.

    FLASHPTX_LIB=path/to/libflashptx.so OUT=dir python3 tools/bench/quantize_bw.py

For each granularity (per tensor, per head, per block) and rotation (none, 128-wide Hadamard) it
times the whole call (every launch and memset it makes) between CUDA events, 50 calls after 5
untimed ones, L2 flushed before each call, median; bytes moved = what the kernels must read and
write: the input once (twice for per-tensor scales: an amax pass, then the quantize pass), the e4m3
output once, the descales. The reference is cudaMemcpy device-to-device of the input's bytes, timed
the same way (read + write). Issue 11 asks for >= 80% of the copy's bandwidth.
"""
import ctypes, json, os, statistics
import torch

lib = ctypes.CDLL(os.environ["FLASHPTX_LIB"])

class Params(ctypes.Structure):  # include/flashptx.h flashptx_quantize_fp8_params
    _fields_ = [("in_", ctypes.c_void_p), ("out", ctypes.c_void_p), ("descale", ctypes.c_void_p),
                ("batch", ctypes.c_int64), ("seqlen", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("head_dim", ctypes.c_int64),
                ("in_batch_stride", ctypes.c_int64), ("in_row_stride", ctypes.c_int64), ("in_head_stride", ctypes.c_int64),
                ("out_batch_stride", ctypes.c_int64), ("out_row_stride", ctypes.c_int64), ("out_head_stride", ctypes.c_int64),
                ("in_dtype", ctypes.c_int), ("out_dtype", ctypes.c_int), ("granularity", ctypes.c_int),
                ("hadamard_block", ctypes.c_int)]

lib.flashptx_quantize_fp8_params_contiguous.argtypes = [ctypes.POINTER(Params), ctypes.c_void_p, ctypes.c_void_p,
                                                        ctypes.c_void_p] + [ctypes.c_int64] * 4 + [ctypes.c_int, ctypes.c_int]
lib.flashptx_quantize_fp8_params_contiguous.restype = None
lib.flashptx_quantize_fp8.argtypes = [ctypes.POINTER(Params), ctypes.c_void_p]
lib.flashptx_quantize_fp8.restype = ctypes.c_int
lib.flashptx_quantize_fp8_descale_count.argtypes = [ctypes.POINTER(Params), ctypes.POINTER(ctypes.c_int64)]
lib.flashptx_quantize_fp8_descale_count.restype = ctypes.c_int
lib.flashptx_last_error.restype = ctypes.c_char_p

dev = torch.device("cuda")
flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=dev)

def time_ms(fn, reps=50):
    for _ in range(5): fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)

rows = []
B, S, H, D = 4, 8192, 16, 128
x = torch.randn(B, S, H, D, device=dev, dtype=torch.bfloat16)
n = x.numel()
copy_dst = torch.empty_like(x)
ms = time_ms(lambda: copy_dst.copy_(x))
copy_gbs = 2 * 2 * n / (ms * 1e-3) / 1e9
print("copy: %d MB read + written in %.3f ms = %.0f GB/s" % (2 * 2 * n // 2**20, ms, copy_gbs), flush=True)
rows.append({"what": "copy", "ms": ms, "gbs": copy_gbs})
out = torch.empty(B, S, H, D, device=dev, dtype=torch.uint8)
names = {0: "per tensor", 1: "per head", 2: "per block"}
stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
for gran in (0, 1, 2):
    for had in (0, 128):
        p = Params()
        lib.flashptx_quantize_fp8_params_contiguous(ctypes.byref(p), x.data_ptr(), out.data_ptr(), None, B, S, H, D, 0, gran)
        p.hadamard_block = had
        cnt = ctypes.c_int64(0)
        assert lib.flashptx_quantize_fp8_descale_count(ctypes.byref(p), ctypes.byref(cnt)) == 0
        desc = torch.empty(max(1, cnt.value), device=dev, dtype=torch.float32)
        p.descale = desc.data_ptr()
        st = lib.flashptx_quantize_fp8(ctypes.byref(p), stream)
        assert st == 0, lib.flashptx_last_error()
        ms = time_ms(lambda: lib.flashptx_quantize_fp8(ctypes.byref(p), stream))
        reads = 2 * n * (2 if gran in (0, 1) else 1)  # per tensor and per head: an amax pass, then the quantize pass
        moved = reads + n + 4 * cnt.value
        gbs = moved / (ms * 1e-3) / 1e9
        r = {"what": "quantize", "granularity": names[gran], "hadamard": had, "shape": [B, S, H, D], "ms": ms,
             "bytes": moved, "gbs": gbs, "of_copy": gbs / copy_gbs}
        rows.append(r)
        print("quantize %-10s hadamard %3d: %.3f ms, %.0f GB/s = %.2f of the copy" % (names[gran], had, ms, gbs, gbs / copy_gbs), flush=True)
json.dump(rows, open(os.path.join(os.environ.get("OUT", "."), "quantize_bw.json"), "w"), indent=1)
