"""flashptx: FlashAttention-3 (Hopper, sm_90) and FlashAttention-4 (Blackwell, sm_100) from PyTorch.

    import flashptx
    out = flashptx.attention(q, k, v, causal=True)   # [batch, seqlen, heads, head_dim], bf16/fp16, CUDA
    out = flashptx.attention_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=lens)  # decode
    out = flashptx.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=True)   # packed [total, heads, d]

Pure Python over ctypes: it loads libflashptx.so (looked for next to this package, where an
installed package carries it, then in $FLASHPTX_LIB, then in the build tree: the repository root)
and needs nothing else at import. PyTorch is imported on first use of flashptx.attention, so that
`import flashptx` works anywhere; flashptx.available() / flashptx.unavailable_reason() say whether
(and why not) it can run here. The options are keyword-only, named as FlashAttention-3's
flash_attn_func names them (softmax_scale, causal, window_size, softcap, deterministic; sinks as gpt-oss's). On an sm_100 GPU the FA4
kernels run only after flashptx.allow_unverified_sm100(): they have never executed on one.
flashptx.__version__ is the version of the library it loads.
"""
from ._abi import (  # noqa: F401 - the public names
    FlashptxError,
    FlashptxRuntimeError,
    FlashptxValueError,
    KVCACHE_ERR_BATCH_IDX,
    KVCACHE_ERR_LEFTPAD,
    KVCACHE_ERR_PAGE,
    KVCACHE_ERR_ROTARY,
    KVCACHE_ERR_SEQLEN,
    LibraryNotFoundError,
    STATUS_NAMES,
    allow_unverified_sm100,
    available,
    find_library,
    library,
    library_path,
    unavailable_reason,
    unverified_sm100_allowed,
)

__all__ = ["attention", "attention_with_kvcache", "attention_varlen", "available", "unavailable_reason", "library_path", "find_library",
           "library", "allow_unverified_sm100", "unverified_sm100_allowed", "FlashptxError", "FlashptxValueError",
           "FlashptxRuntimeError", "LibraryNotFoundError", "STATUS_NAMES", "KVCACHE_ERR_SEQLEN", "KVCACHE_ERR_PAGE",
           "KVCACHE_ERR_BATCH_IDX", "KVCACHE_ERR_ROTARY", "KVCACHE_ERR_LEFTPAD"]


def _attention_varlen_without_torch(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    seqused_q=None, seqused_k=None, deterministic=False, return_lse=False):
    """flashptx.attention_varlen where torch cannot be imported (its signature)."""
    from ._abi import _torch_reason
    raise RuntimeError("flashptx.attention_varlen needs PyTorch: %s" % (_torch_reason() or "torch cannot be imported"))


def _attention_without_torch(q, k, v, *, softmax_scale=None, causal=False, deterministic=False, return_lse=False,
                             window_size=(-1, -1), softcap=0.0, sinks=None):
    """flashptx.attention where torch cannot be imported (its signature, so that a call is checked
    the same way)."""
    from ._abi import _torch_reason
    raise RuntimeError("flashptx.attention needs PyTorch: %s" % (_torch_reason() or "torch cannot be imported"))


def _attention_with_kvcache_without_torch(q, k_cache, v_cache, k=None, v=None, *, rotary_cos=None,
                                          rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                                          cache_leftpad=None, page_table=None, block_table=None, softmax_scale=None,
                                          causal=False, window_size=(-1, -1), softcap=0.0, rotary_interleaved=True,
                                          num_splits=0, return_softmax_lse=False, error_word=None):
    """flashptx.attention_with_kvcache where torch cannot be imported (its signature)."""
    from ._abi import _torch_reason
    raise RuntimeError("flashptx.attention_with_kvcache needs PyTorch: %s"
                       % (_torch_reason() or "torch cannot be imported"))


_TORCH_NAMES = {"attention": _attention_without_torch, "attention_with_kvcache": _attention_with_kvcache_without_torch,
                "attention_varlen": _attention_varlen_without_torch}


def __getattr__(name):  # PEP 562: torch is imported here, on first use, never at `import flashptx`
    if name == "__version__":
        from ._abi import version
        return version()
    if name in _TORCH_NAMES:
        try:
            from . import _torch
        except ImportError as e:
            if (e.name or "").split(".")[0] != "torch":
                raise
            return _TORCH_NAMES[name]
        fn = getattr(_torch, name)
        globals()[name] = fn  # later look-ups (and torch.compile's) find a plain attribute
        return fn
    raise AttributeError("module 'flashptx' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_TORCH_NAMES))
