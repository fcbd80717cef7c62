"""flashptx: FlashAttention-3 forward and backward for Hopper (sm_90), from PyTorch.

    import flashptx
    out = flashptx.attention(q, k, v, causal=True)   # [batch, seqlen, heads, head_dim], bf16/fp16, CUDA

Pure Python over ctypes: it loads the libflashptx.so that `make` builds (looked for in $FLASHPTX_LIB,
next to this package, then the build tree: the repository root) and needs nothing else at import.
PyTorch is imported on first use of flashptx.attention, so that `import flashptx` works anywhere;
flashptx.available() / flashptx.unavailable_reason() say whether (and why not) it can run here.
"""
from ._abi import (  # noqa: F401 - the public names
    FlashptxError,
    FlashptxRuntimeError,
    FlashptxValueError,
    LibraryNotFoundError,
    STATUS_NAMES,
    available,
    find_library,
    library,
    library_path,
    unavailable_reason,
)

__version__ = "0.1.0"
__all__ = ["attention", "attention_varlen", "available", "unavailable_reason", "library_path", "find_library",
           "library", "FlashptxError", "FlashptxValueError", "FlashptxRuntimeError", "LibraryNotFoundError",
           "STATUS_NAMES"]


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False,
                     softmax_scale=None, deterministic=False, return_lse=False):
    """Variable-length attention over packed sequences (cu_seqlens): not bound in this package yet."""
    raise NotImplementedError(
        "flashptx.attention_varlen: the C ABI has a variable-length forward (flashptx_fwd_varlen, no "
        "backward; raw ctypes binding: flashptx._abi.FwdVarlenParams), but no torch wrapper yet; pad the "
        "batch to [batch, seqlen, heads, head_dim] and use flashptx.attention")


def _attention_without_torch(*args, **kwargs):
    from ._abi import _torch_reason
    raise RuntimeError("flashptx.attention needs PyTorch: %s" % (_torch_reason() or "torch cannot be imported"))


def __getattr__(name):  # PEP 562: torch is imported here, on first use, never at `import flashptx`
    if name == "attention":
        try:
            from ._torch import attention as fn
        except ImportError as e:
            if (e.name or "").split(".")[0] != "torch":
                raise
            return _attention_without_torch
        globals()["attention"] = fn  # later look-ups (and torch.compile's) find a plain attribute
        return fn
    raise AttributeError("module 'flashptx' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | {"attention"})
