"""The GPU kernel time of one call, as every bench script here measures it: fn once to warm up,
then `reps` calls under torch.profiler, each after `flush.zero_()` (a 256 MB write that evicts L2);
the sum of the GPU durations of the kernels, memsets and copies the calls launched, the flush's own
fill kernel (its name holds "unsigned char") left out, per call. docs/DECISIONS.md, "Kernel time,
not one call".

    from gpu_time import gpu_us          # the scripts run as tools/bench/X.py: this folder is on sys.path
    us = gpu_us(fn, flush)               # per_kernel: a dict filled with each kernel's us per call
                                         # names: a set filled with the names counted
"""
import torch
from torch.profiler import ProfilerActivity, profile


def gpu_us(fn, flush, reps=5, per_kernel=None, names=None):
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            flush.zero_()
            fn()
        torch.cuda.synchronize()
    tot = 0.0
    for e in prof.events():
        if str(e.device_type).endswith("CUDA") and "unsigned char" not in e.name:
            us = e.time_range.elapsed_us()
            tot += us
            if per_kernel is not None:
                per_kernel[e.name[:60]] = per_kernel.get(e.name[:60], 0.0) + us / reps
            if names is not None:
                names.add(e.name)
    return tot / reps
