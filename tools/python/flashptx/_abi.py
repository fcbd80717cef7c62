"""The C ABI of include/flashptx.h in ctypes, the library lookup, and status codes as exceptions.

Pure Python: nothing here imports torch or needs a GPU (tools/python/tests/test_cpu.py checks this
file against the header: field names, order, offsets, enum values).
"""
import ctypes
import os

# ---- enums (include/flashptx.h) -------------------------------------------------------------------
FLASHPTX_OK = 0
STATUS_NAMES = {
    0: "FLASHPTX_OK",
    1: "FLASHPTX_ERR_NULL_POINTER",
    2: "FLASHPTX_ERR_MISALIGNED",
    3: "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM",
    4: "FLASHPTX_ERR_UNSUPPORTED_DTYPE",
    5: "FLASHPTX_ERR_DTYPE_MISMATCH",
    6: "FLASHPTX_ERR_BAD_STRIDES",
    7: "FLASHPTX_ERR_BAD_HEADS",
    8: "FLASHPTX_ERR_BAD_SHAPE",
    9: "FLASHPTX_ERR_UNSUPPORTED_DEVICE",
    10: "FLASHPTX_ERR_CUDA",
    11: "FLASHPTX_ERR_NULL_PARAMS",
    12: "FLASHPTX_ERR_BAD_OPTION",
    13: "FLASHPTX_ERR_WORKSPACE",
    14: "FLASHPTX_ERR_BAD_CU_SEQLENS",
    15: "FLASHPTX_ERR_TOO_MANY_SEQS",
    16: "FLASHPTX_ERR_BAD_GRANULARITY",
    17: "FLASHPTX_ERR_BAD_HADAMARD",
    18: "FLASHPTX_ERR_NULL_DESCALE",
    19: "FLASHPTX_ERR_BAD_V_LAYOUT",
    20: "FLASHPTX_ERR_BAD_WINDOW",
    21: "FLASHPTX_ERR_BAD_SOFTCAP",
    22: "FLASHPTX_ERR_UNSUPPORTED",
    23: "FLASHPTX_ERR_BAD_SINKS",
}
# The statuses that say something about the machine rather than the input: RuntimeError. Every other
# non-zero status is a rejected input: ValueError.
RUNTIME_STATUSES = frozenset({9, 10})

DTYPE_CODES = {"FLASHPTX_BF16": 0, "FLASHPTX_FP16": 1, "FLASHPTX_FP32": 2, "FLASHPTX_FP8_E4M3": 3}
FLASHPTX_BF16, FLASHPTX_FP16, FLASHPTX_FP32 = 0, 1, 2
OPTION_CODES = {"FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100": 1}
FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 = 1

_p, _i64, _int, _f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float


def _strides(*tensors):
    return [(t + "_" + x + "_stride", _i64) for t in tensors for x in ("batch", "row", "head")]


# The score modifiers at the end of the forward's, the varlen forward's and the backward's params
# (include/flashptx.h): window (flag), softcap, window_left, window_right. All zero: none.
_MODIFIERS = [("window", _int), ("softcap", _f32), ("window_left", _i64), ("window_right", _i64)]


class FwdParams(ctypes.Structure):
    """flashptx_fwd_params."""
    _fields_ = ([(n, _p) for n in ("q", "k", "v", "o", "lse")] +
                [(n, _i64) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim")] +
                _strides("q", "k", "v", "o") +
                [(n, _int) for n in ("q_dtype", "k_dtype", "v_dtype", "o_dtype", "causal")] +
                [("softmax_scale", _f32), ("tile_counter", _p)] + _MODIFIERS + [("sinks", _p), ("head_dim_v", _i64)])


class BwdParams(ctypes.Structure):
    """flashptx_bwd_params."""
    _fields_ = ([(n, _p) for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv")] +
                [(n, _i64) for n in ("batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim")] +
                _strides("q", "k", "v", "o", "do", "dq", "dk", "dv") +
                [("dtype", _int), ("causal", _int), ("softmax_scale", _f32), ("deterministic", _int),
                 ("workspace", _p), ("workspace_bytes", _i64)] + _MODIFIERS + [("sinks", _p), ("dsinks", _p)] +
                [("head_dim_v", _i64)])


class FwdVarlenParams(ctypes.Structure):
    """flashptx_fwd_varlen_params (cu_seqlens_q/_k: HOST int32 arrays of num_seqs + 1 entries)."""
    _fields_ = ([(n, _p) for n in ("q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k")] +
                [(n, _i64) for n in ("num_seqs", "total_q", "total_k", "max_seqlen_q", "max_seqlen_k", "heads_q",
                                     "heads_kv", "head_dim")] +
                [(t + "_" + x + "_stride", _i64) for t in ("q", "k", "v", "o") for x in ("row", "head")] +
                [("dtype", _int), ("causal", _int), ("softmax_scale", _f32)] + _MODIFIERS + [("head_dim_v", _i64)] +
                [("seqused_q", _p), ("seqused_k", _p)])


class BwdVarlenParams(ctypes.Structure):
    """flashptx_bwd_varlen_params (cu_seqlens_q/_k, seqused_q/_k: HOST int32 arrays)."""
    _fields_ = ([(n, _p) for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv", "cu_seqlens_q",
                                   "cu_seqlens_k")] +
                [(n, _i64) for n in ("num_seqs", "total_q", "total_k", "max_seqlen_q", "max_seqlen_k", "heads_q",
                                     "heads_kv", "head_dim")] +
                [(t + "_" + x + "_stride", _i64) for t in ("q", "k", "v", "o", "do", "dq", "dk", "dv")
                 for x in ("row", "head")] +
                [("dtype", _int), ("causal", _int), ("softmax_scale", _f32), ("deterministic", _int),
                 ("workspace", _p), ("workspace_bytes", _i64)] + _MODIFIERS + [("seqused_q", _p), ("seqused_k", _p)] +
                [("head_dim_v", _i64)])


class KvcacheParams(ctypes.Structure):
    """flashptx_kvcache_params (cache_seqlens, cache_batch_idx, page_table: DEVICE int32 arrays)."""
    _fields_ = ([(n, _p) for n in ("q", "k_cache", "v_cache", "o", "lse", "cache_seqlens", "cache_batch_idx",
                                   "page_table")] +
                [(n, _i64) for n in ("batch", "seqlen_q", "heads_q", "heads_kv", "head_dim", "cache_batch",
                                     "cache_seqlen", "max_pages", "page_table_stride")] +
                _strides("q", "k", "v", "o") +
                [("dtype", _int), ("causal", _int), ("softmax_scale", _f32), ("num_splits", _int),
                 ("workspace", _p), ("workspace_bytes", _i64), ("error_word", _p),
                 ("k_new", _p), ("v_new", _p), ("seqlen_new", _i64)] + _strides("k_new", "v_new") +
                [("rotary_cos", _p), ("rotary_sin", _p), ("rotary_dim", _i64), ("seqlen_ro", _i64),
                 ("rotary_interleaved", _int), ("cache_leftpad", _p)])


KVCACHE_ERR_SEQLEN, KVCACHE_ERR_PAGE, KVCACHE_ERR_BATCH_IDX, KVCACHE_ERR_ROTARY, KVCACHE_ERR_LEFTPAD = 1, 2, 4, 8, 16
KVCACHE_MAX_SPLITS = 128


class KernelInfo(ctypes.Structure):
    """flashptx_kernel_info."""
    _fields_ = [("symbol", ctypes.c_char_p), ("registers", _int), ("shared_bytes", _int), ("threads", _int),
                ("ctas", _int), ("tiles", _i64), ("schedule", ctypes.c_char_p)]


# name: (restype, argtypes), for every function of the header the package binds.
_P = ctypes.POINTER
SIGNATURES = {
    "flashptx_fwd": (_int, [_P(FwdParams), _p]),
    "flashptx_fwd_check": (_int, [_P(FwdParams)]),
    "flashptx_fwd_kernel_info": (_int, [_P(FwdParams), _P(KernelInfo)]),
    "flashptx_fwd_varlen": (_int, [_P(FwdVarlenParams), _p]),
    "flashptx_fwd_varlen_check": (_int, [_P(FwdVarlenParams)]),
    "flashptx_fwd_varlen_kernel_info": (_int, [_P(FwdVarlenParams), _P(KernelInfo)]),
    "flashptx_bwd": (_int, [_P(BwdParams), _p]),
    "flashptx_bwd_varlen": (_int, [_P(BwdVarlenParams), _p]),
    "flashptx_bwd_varlen_check": (_int, [_P(BwdVarlenParams)]),
    "flashptx_bwd_varlen_workspace_size": (_int, [_P(BwdVarlenParams), _P(_i64)]),
    "flashptx_bwd_check": (_int, [_P(BwdParams)]),
    "flashptx_bwd_workspace_size": (_int, [_P(BwdParams), _P(_i64)]),
    "flashptx_fwd_kvcache": (_int, [_P(KvcacheParams), _p]),
    "flashptx_fwd_kvcache_check": (_int, [_P(KvcacheParams)]),
    "flashptx_fwd_kvcache_workspace_size": (_int, [_P(KvcacheParams), _P(_i64)]),
    "flashptx_fwd_kvcache_num_splits": (_int, [_P(KvcacheParams), _P(_int)]),
    "flashptx_last_error": (ctypes.c_char_p, []),
    "flashptx_status_name": (ctypes.c_char_p, [_int]),
    "flashptx_version": (ctypes.c_char_p, []),
    "flashptx_version_number": (_int, []),
    "flashptx_set_option": (_int, [_int, _i64]),
    "flashptx_get_option": (_int, [_int, _P(_i64)]),
}


# ---- exceptions -------------------------------------------------------------------------------------
class FlashptxError(Exception):
    """A non-zero status of the library: .status (int), .status_name, .function; str() is the
    library's own message (flashptx_last_error), prefixed with the function that returned it."""

    def __init__(self, function, status, status_name, message):
        self.function, self.status, self.status_name, self.message = function, status, status_name, message
        super().__init__("%s: %s" % (function, message))

    def __reduce__(self):  # copy and pickle rebuild it from its parts, not from str(self)
        return (type(self), (self.function, self.status, self.status_name, self.message))


class FlashptxValueError(FlashptxError, ValueError):
    """The library rejected the input (bad shape, head dim, dtype, strides, alignment, workspace)."""


class FlashptxRuntimeError(FlashptxError, RuntimeError):
    """The machine cannot run it (FLASHPTX_ERR_UNSUPPORTED_DEVICE) or a CUDA call failed (FLASHPTX_ERR_CUDA)."""


class LibraryNotFoundError(OSError):
    """libflashptx.so was not found (the message lists every place looked, in order) or not loadable."""


def error_for_status(function, status, message):
    """The exception for a non-zero status: FlashptxRuntimeError for the device and CUDA statuses,
    FlashptxValueError for every other one. `message` is the library's (it names the status)."""
    name = STATUS_NAMES.get(status, "FLASHPTX_ERR_UNKNOWN(%d)" % status)
    if not message:
        message = name
    cls = FlashptxRuntimeError if status in RUNTIME_STATUSES else FlashptxValueError
    return cls(function, status, name, message)


def check(lib, function, status):
    """Raises the exception of a non-zero status, with flashptx_last_error (read on this thread)."""
    if status != FLASHPTX_OK:
        raise error_for_status(function, status, lib.flashptx_last_error().decode("utf-8", "replace"))


# ---- finding and loading the library ----------------------------------------------------------------
LIB_NAME = "libflashptx.so"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def source_tree_root(package_dir=PACKAGE_DIR):
    """The repository root when the package is the one in the source tree (tools/python/flashptx),
    else None (an installed copy somewhere else)."""
    root = os.path.abspath(os.path.join(package_dir, "..", "..", ".."))
    return root if os.path.isfile(os.path.join(root, "include", "flashptx.h")) else None


def candidates(env=None, package_dir=PACKAGE_DIR):
    """The places looked at, in order: [(label, path or None, why it is or is not used)].

    1. next to the package: <package>/libflashptx.so, the library an installed package carries
       (tools/python/flashptx_build.py puts it there)
    2. $FLASHPTX_LIB (a file, or a folder holding libflashptx.so). When it is set and the package
       carries none, it is the last place looked at: an explicit path that does not exist is an
       error, not a reason to load another build.
    3. the build tree: <repository root>/libflashptx.so, where `make` puts it (only for the package
       in the source tree, tools/python/flashptx)
    """
    env = os.environ if env is None else env
    out = []
    here = os.path.join(package_dir, LIB_NAME)
    out.append(("next to the package", here, "found" if os.path.isfile(here) else "no such file"))
    explicit = env.get("FLASHPTX_LIB", "")
    if explicit:
        path = os.path.join(explicit, LIB_NAME) if os.path.isdir(explicit) else explicit
        out.append(("$FLASHPTX_LIB", path, "found" if os.path.isfile(path) else "no such file"))
        return out
    out.append(("$FLASHPTX_LIB", None, "not set"))
    root = source_tree_root(package_dir)
    if root is None:
        out.append(("the build tree", None, "the package is not inside the flashptx source tree"))
    else:
        built = os.path.join(root, LIB_NAME)
        out.append(("the build tree, where `make` puts it", built,
                    "found" if os.path.isfile(built) else "no such file (not built yet?)"))
    return out


def find_library(env=None, package_dir=PACKAGE_DIR):
    """The path of libflashptx.so, or LibraryNotFoundError saying every place looked and how to fix it."""
    looked = candidates(env, package_dir)
    for _, path, why in looked:
        if why == "found":
            return path
    lines = ["flashptx: cannot find %s. Looked, in this order:" % LIB_NAME]
    for n, (label, path, why) in enumerate(looked, 1):
        lines.append("  %d. %s%s: %s" % (n, label, " (%s)" % path if path else "", why))
    root = source_tree_root(package_dir)
    lines.append("Build it with `make` at the repository root%s, or set FLASHPTX_LIB to the path of a built %s."
                 % (" (%s)" % root if root else "", LIB_NAME))
    raise LibraryNotFoundError("\n".join(lines))


def load_library(path):
    """ctypes.CDLL of `path` with the signatures bound; LibraryNotFoundError when it cannot be loaded."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise LibraryNotFoundError("flashptx: %s exists but cannot be loaded: %s" % (path, e)) from None
    missing = []
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name, None)
        if fn is None:
            missing.append(name)
            continue
        fn.restype, fn.argtypes = restype, argtypes
    if missing:
        raise LibraryNotFoundError("flashptx: %s lacks %s: it is older than this package; rebuild it with `make`"
                                   % (path, ", ".join(missing)))
    lib._flashptx_path = path
    return lib


_lib = None


def library():
    """The loaded libflashptx.so (found once per process, see candidates())."""
    global _lib
    if _lib is None:
        _lib = load_library(find_library())
    return _lib


def library_path():
    """The path of the libflashptx.so this process uses (loads it)."""
    return library()._flashptx_path


def version():
    """The version of the library this process uses, "MAJOR.MINOR.PATCH" (flashptx_version(); loads it)."""
    return library().flashptx_version().decode()


def allow_unverified_sm100(enabled=True):
    """Opts in (or back out) to the FA4 kernels on an sm_100 (Blackwell) GPU, for this process:
    flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100). They have never executed on a
    Blackwell GPU; without the opt-in every call there raises FlashptxRuntimeError
    (FLASHPTX_ERR_UNSUPPORTED_DEVICE) and available() is False, saying why."""
    lib = library()
    check(lib, "flashptx_set_option", lib.flashptx_set_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 1 if enabled else 0))


def unverified_sm100_allowed():
    """Whether this process opted in to the FA4 kernels (allow_unverified_sm100)."""
    lib = library()
    value = ctypes.c_int64(0)
    check(lib, "flashptx_get_option", lib.flashptx_get_option(FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, ctypes.byref(value)))
    return value.value == 1


# ---- the score modifiers, checked before anything is called -------------------------------------
def check_modifiers(where, window_size, softcap):
    """(window or None, softcap) from FlashAttention-3's window_size=(left, right) (-1: unbounded on
    that side; (-1, -1): none) and softcap (0: none), or ValueError naming the bad value."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError("%s: window_size must be a pair (left, right) of ints, got %r" % (where, window_size))
    for name, x in (("left", left), ("right", right)):
        if isinstance(x, bool) or not isinstance(x, int):
            raise ValueError("%s: window_size %s is %r, not an int" % (where, name, x))
        if x < -1:
            raise ValueError("%s: window_size %s is %d: a bound is -1 (unbounded) or more" % (where, name, x))
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)):
        raise ValueError("%s: softcap must be a number, got %r" % (where, softcap))
    cap = float(softcap)
    if not (cap >= 0.0 and cap != float("inf")):  # NaN fails the first comparison
        raise ValueError("%s: softcap is %r: it must be finite and 0 (none) or more" % (where, softcap))
    return ((left, right) if (left, right) != (-1, -1) else None), cap


def check_sinks(where, shape, dtype, heads_q):
    """None, or ValueError naming what is wrong with a sinks tensor of this shape (a tuple) and dtype
    (its name, "float32"): gpt-oss's sinks are one float32 logit per query head, [heads_q]."""
    if tuple(shape) != (heads_q,):
        raise ValueError("%s: sinks must have shape [heads_q] = (%d,), got %r" % (where, heads_q, tuple(shape)))
    if dtype != "float32":
        raise ValueError("%s: sinks must be float32 (one logit per query head), got %s" % (where, dtype))


# ---- flashptx.attention_with_kvcache's arguments, checked before anything is called ---------------
class TensorSpec(tuple):
    """What the checks below read of a tensor: (shape, stride, dtype name, device), e.g.
    ((2, 1, 8, 128), (1024, 1024, 128, 1), "bfloat16", "cuda:0"). Plain tuples, so that the checks
    run (and are tested) without torch."""
    __slots__ = ()

    def __new__(cls, shape, stride, dtype, device):
        return tuple.__new__(cls, (tuple(shape), tuple(stride), dtype, device))

    shape = property(lambda self: self[0])
    stride = property(lambda self: self[1])
    dtype = property(lambda self: self[2])
    device = property(lambda self: self[3])


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_scale(fail, softmax_scale):
    """The ABI's softmax_scale for a Python value: 0.0 for None (1/sqrt(head_dim)), else a finite
    number above 0; anything else goes to fail(message)."""
    if softmax_scale is None:
        return 0.0
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (int, float)):
        fail("softmax_scale must be a number or None, got %r" % (softmax_scale,))
    scale = float(softmax_scale)
    if not (0.0 < scale < float("inf")):
        fail("softmax_scale is %r: finite and above 0 (None: 1/sqrt(head_dim))" % (softmax_scale,))
    return scale


def check_kvcache(where, q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None, cache_seqlens=None,
                  cache_batch_idx=None, cache_leftpad=None, page_table=None, softmax_scale=None, causal=False,
                  window_size=(-1, -1), softcap=0.0, rotary_interleaved=True, num_splits=0):
    """The sizes of a flashptx_kvcache_params from FlashAttention-3's flash_attn_with_kvcache
    arguments (tensors as TensorSpec, cache_seqlens a TensorSpec, an int or None), or ValueError
    naming the bad value. What the library checks itself (head_dim, dtype support, the cache's
    strides, page sizes, the rotary dim's granularity) is left to it: its status is a ValueError too,
    raised before anything is launched. Returns a dict: batch, seqlen_q, heads_q, heads_kv,
    head_dim, paged, cache_batch, cache_seqlen, capacity, max_pages, page_table_stride, seqlen_new,
    rotary_dim, seqlen_ro, softmax_scale (0.0: 1/sqrt(head_dim)), seqlens (the int, or None)."""
    def fail(msg):
        raise ValueError("%s: %s" % (where, msg))

    def spec(name, t, dims):
        if not isinstance(t, TensorSpec):
            fail("%s must be a tensor, got %s" % (name, type(t).__name__))
        if len(t.shape) != len(dims):
            fail("%s must be [%s], got %d dims %s" % (name, ", ".join(dims), len(t.shape), t.shape))
        if t.device != q.device:
            fail("%s is on %s, q on %s: every tensor must be on q's device" % (name, t.device, q.device))

    if not isinstance(q, TensorSpec):
        fail("q must be a tensor, got %s" % type(q).__name__)
    spec("q", q, ("batch", "seqlen_q", "heads_q", "head_dim"))
    batch, seqlen_q, heads_q, head_dim = q.shape
    if q.dtype not in ("bfloat16", "float16"):
        fail("q is %s; the kernels take bfloat16" % q.dtype)
    paged = page_table is not None
    cdims = ("num_pages", "page_size", "heads_kv", "head_dim") if paged else \
        ("batch_cache", "seqlen_cache", "heads_kv", "head_dim")
    spec("k_cache", k_cache, cdims)
    spec("v_cache", v_cache, cdims)
    if k_cache.shape != v_cache.shape:
        fail("k_cache %s and v_cache %s must have one shape" % (k_cache.shape, v_cache.shape))
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dtype != q.dtype:
            fail("%s is %s, q %s: q and the cache must share one dtype" % (name, t.dtype, q.dtype))
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if t.shape[3] > 1 and t.stride[3] != 1:
            fail("%s's last dim has stride %d: the cache is read and written in place, never copied, so its "
                 "head_dim must be contiguous" % (name, t.stride[3]))
    cache_batch, cache_seqlen, heads_kv, dk = k_cache.shape
    if dk != head_dim:
        fail("the cache's head_dim %d is not q's %d" % (dk, head_dim))
    if heads_kv <= 0 or heads_q % heads_kv != 0:
        fail("heads_q %d must be a multiple of the cache's heads_kv %d" % (heads_q, heads_kv))

    def index(name, t, dims, shape):
        spec(name, t, dims)
        if t.dtype != "int32":
            fail("%s must be int32, got %s" % (name, t.dtype))
        if t.shape != shape:
            fail("%s must have shape %s, got %s" % (name, shape, t.shape))

    max_pages = page_table_stride = 0
    if paged:
        if cache_batch_idx is not None:
            fail("cache_batch_idx with page_table: the page table says where each sequence's keys are")
        spec("page_table", page_table, ("batch", "max_pages"))
        index("page_table", page_table, ("batch", "max_pages"), (batch, page_table.shape[1]))
        max_pages = page_table.shape[1]
        if max_pages == 0:
            fail("page_table has no column (max_pages 0)")
        if page_table.stride[1] != 1 or (batch > 1 and page_table.stride[0] < max_pages):
            fail("page_table's rows must be contiguous (stride %s)" % (page_table.stride,))
        page_table_stride = page_table.stride[0] if batch > 1 else max_pages
        capacity = max_pages * cache_seqlen
    else:
        if cache_batch_idx is not None:
            index("cache_batch_idx", cache_batch_idx, ("batch",), (batch,))
        elif cache_batch < batch:
            fail("the cache holds %d sequences (k_cache.shape[0]) for a batch of %d; pass cache_batch_idx to map "
                 "sequences to cache rows" % (cache_batch, batch))
        capacity = cache_seqlen
    if cache_leftpad is not None:  # keys [cache_leftpad[b], cache_seqlens[b] + seqlen_new): read on the device
        index("cache_leftpad", cache_leftpad, ("batch",), (batch,))

    seqlen_new = 0
    if (k is None) != (v is None):
        fail("k and v (the new keys and values) come together: %s is None" % ("k" if k is None else "v"))
    if k is not None:
        ndims = ("batch", "seqlen_new", "heads_kv", "head_dim")
        spec("k", k, ndims)
        spec("v", v, ndims)
        seqlen_new = k.shape[1]
        want = (batch, seqlen_new, heads_kv, head_dim)
        for name, t in (("k", k), ("v", v)):
            if t.shape != want:
                fail("%s must be [batch, seqlen_new, heads_kv, head_dim] = %s, got %s" % (name, want, t.shape))
            if t.dtype != q.dtype:
                fail("%s is %s, q %s: the new keys and values must be in the cache's dtype" % (name, t.dtype, q.dtype))
        if seqlen_new > capacity:
            fail("seqlen_new %d is above the cache's capacity %d" % (seqlen_new, capacity))

    seqlens = None
    if cache_seqlens is None:
        seqlens = capacity - seqlen_new  # FA3: without lengths, every sequence fills the cache
    elif _is_int(cache_seqlens):
        seqlens = cache_seqlens
    elif isinstance(cache_seqlens, TensorSpec):
        index("cache_seqlens", cache_seqlens, ("batch",), (batch,))
    else:
        fail("cache_seqlens must be an int or an int32 tensor [batch], got %s" % type(cache_seqlens).__name__)
    if seqlens is not None and not 0 <= seqlens <= capacity - seqlen_new:
        fail("cache_seqlens %d: the keys and the %d appended must fit the cache's capacity %d"
             % (seqlens, seqlen_new, capacity))

    rotary_dim = seqlen_ro = 0
    if (rotary_cos is None) != (rotary_sin is None):
        fail("rotary_cos and rotary_sin come together: %s is None" % ("rotary_cos" if rotary_cos is None else "rotary_sin"))
    if rotary_cos is not None:
        if k is None:
            fail("rotary_cos/sin without k and v: rotary applies to the appended keys and to q")
        rdims = ("seqlen_ro", "rotary_dim / 2")
        spec("rotary_cos", rotary_cos, rdims)
        spec("rotary_sin", rotary_sin, rdims)
        if rotary_cos.shape != rotary_sin.shape:
            fail("rotary_cos %s and rotary_sin %s must have one shape" % (rotary_cos.shape, rotary_sin.shape))
        for name, t in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin)):
            if t.dtype not in ("float32", "bfloat16", "float16"):
                fail("%s is %s: a floating tensor (it is used as float32)" % (name, t.dtype))
        seqlen_ro, rotary_dim = rotary_cos.shape[0], 2 * rotary_cos.shape[1]
        if seqlen_ro == 0 or rotary_dim == 0 or rotary_dim > head_dim:
            fail("rotary_cos is %s: [seqlen_ro >= 1, rotary_dim / 2] with 0 < rotary_dim <= head_dim %d"
                 % (rotary_cos.shape, head_dim))

    scale = _check_scale(fail, softmax_scale)
    window, cap = check_modifiers(where, window_size, softcap)
    if window is not None:
        fail("window_size %r: the KV-cache kernels have no sliding window yet ((-1, -1) only)" % (tuple(window_size),))
    if cap != 0.0:
        fail("softcap %r: the KV-cache kernels have no softcap yet (0 only)" % (softcap,))
    if not _is_int(num_splits) or not 0 <= num_splits <= KVCACHE_MAX_SPLITS:
        fail("num_splits is %r: an int, 0 (the library's choice) to %d" % (num_splits, KVCACHE_MAX_SPLITS))
    for name, x in (("causal", causal), ("rotary_interleaved", rotary_interleaved)):
        if not isinstance(x, bool):
            fail("%s must be a bool, got %r" % (name, x))
    return {"batch": batch, "seqlen_q": seqlen_q, "heads_q": heads_q, "heads_kv": heads_kv, "head_dim": head_dim,
            "paged": paged, "cache_batch": cache_batch, "cache_seqlen": cache_seqlen, "capacity": capacity,
            "max_pages": max_pages, "page_table_stride": page_table_stride, "seqlen_new": seqlen_new,
            "rotary_dim": rotary_dim, "seqlen_ro": seqlen_ro, "softmax_scale": scale, "seqlens": seqlens}


# ---- flashptx.attention_varlen's arguments, checked before anything is called ----------------------
VARLEN_MAX_SEQS = 1024  # FLASHPTX_VARLEN_MAX_SEQS (include/flashptx.h)


def check_varlen(where, q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                 seqused_k=None, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0):
    """The sizes of a varlen call from FlashAttention-3's flash_attn_varlen_func arguments, or
    ValueError naming the bad value. q, k, v: TensorSpec ([total_q, heads_q, head_dim], [total_k,
    heads_kv, head_dim], v's head dim its own: head_dim_v, whose pair with head_dim the library
    checks); cu_seqlens_q/_k: the host values (lists of ints, num_seqs + 1 each);
    seqused_q/_k: None or the host values (num_seqs ints each, 0 <= used <= the sequence's length).
    What the library checks itself (head dims, strides, alignment, more than VARLEN_MAX_SEQS
    sequences) is left to it: its status is a ValueError too, raised before anything launches.
    Returns a dict: num_seqs, total_q, total_k, heads_q, heads_kv, head_dim, head_dim_v, max_seqlen_q,
    max_seqlen_k, softmax_scale (0.0: 1/sqrt(head_dim)), window (None or (left, right)), softcap."""
    def fail(msg):
        raise ValueError("%s: %s" % (where, msg))

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, TensorSpec):
            fail("%s must be a tensor, got %s" % (name, type(t).__name__))
        if len(t.shape) != 3:
            fail("%s must be [total, heads, head_dim] (packed sequences), got %d dims %s"
                 % (name, len(t.shape), t.shape))
        if t.device != q.device:
            fail("%s is on %s, q on %s: every tensor must be on q's device" % (name, t.device, q.device))
        if t.dtype != q.dtype:
            fail("%s is %s, q %s: q, k and v must share one dtype" % (name, t.dtype, q.dtype))
    if q.dtype not in ("bfloat16", "float16"):
        fail("q is %s; the kernels take bfloat16 or float16" % q.dtype)
    if k.shape[:2] != v.shape[:2]:
        fail("k %s and v %s must share total_k and heads_kv" % (k.shape, v.shape))
    total_q, heads_q, head_dim = q.shape
    total_k, heads_kv, dk = k.shape
    if dk != head_dim:
        fail("k's head_dim %d is not q's %d" % (dk, head_dim))
    if heads_kv <= 0 or heads_q % heads_kv != 0:
        fail("heads_q %d must be a multiple of heads_kv %d" % (heads_q, heads_kv))

    def lengths(name, cu, total, total_name):
        if not isinstance(cu, (list, tuple)) or not all(_is_int(x) for x in cu):
            fail("%s must be int32 values, got %r" % (name, type(cu).__name__))
        if len(cu) < 1 or cu[0] != 0:
            fail("%s must start at 0, got %s" % (name, list(cu[:1])))
        for b in range(len(cu) - 1):
            if cu[b + 1] < cu[b]:
                fail("%s decreases at entry %d (%d then %d)" % (name, b + 1, cu[b], cu[b + 1]))
        if cu[-1] != total:
            fail("%s ends at %d, not at %s (%d)" % (name, cu[-1], total_name, total))
        return [cu[b + 1] - cu[b] for b in range(len(cu) - 1)]

    lq = lengths("cu_seqlens_q", cu_seqlens_q, total_q, "q.shape[0]")
    lk = lengths("cu_seqlens_k", cu_seqlens_k, total_k, "k.shape[0]")
    if len(lq) != len(lk):
        fail("cu_seqlens_q has %d sequences, cu_seqlens_k %d" % (len(lq), len(lk)))
    for name, m, lens in (("max_seqlen_q", max_seqlen_q, lq), ("max_seqlen_k", max_seqlen_k, lk)):
        if not _is_int(m):
            fail("%s must be an int, got %r" % (name, m))
        if lens and m < max(lens):
            fail("%s %d is below the longest sequence (%d)" % (name, m, max(lens)))
    for name, used, lens in (("seqused_q", seqused_q, lq), ("seqused_k", seqused_k, lk)):
        if used is None:
            continue
        if not isinstance(used, (list, tuple)) or not all(_is_int(x) for x in used):
            fail("%s must be int32 values, got %r" % (name, type(used).__name__))
        if len(used) != len(lens):
            fail("%s has %d entries for %d sequences" % (name, len(used), len(lens)))
        for b, (u, n) in enumerate(zip(used, lens)):
            if not 0 <= u <= n:
                fail("%s[%d] is %d: a used length is 0 to the sequence's length %d" % (name, b, u, n))
    scale = _check_scale(fail, softmax_scale)
    if not isinstance(causal, bool):
        fail("causal must be a bool, got %r" % (causal,))
    window, cap = check_modifiers(where, window_size, softcap)
    return {"num_seqs": len(lq), "total_q": total_q, "total_k": total_k, "heads_q": heads_q, "heads_kv": heads_kv,
            "head_dim": head_dim, "head_dim_v": v.shape[2], "max_seqlen_q": max_seqlen_q,
            "max_seqlen_k": max_seqlen_k, "softmax_scale": scale, "window": window, "softcap": cap}


def fwd_varlen_params(ptrs, a, strides, dtype, causal):
    """FwdVarlenParams from pointers {q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k[, seqused_q, seqused_k]}
    (the four arrays: host memory), check_varlen's dict `a`, strides {q, k, v, o: (row, head)} in
    elements and a dtype code."""
    p = FwdVarlenParams()
    for n in ("q", "k", "v", "o", "lse", "cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k"):
        setattr(p, n, ptrs.get(n) or None)
    for n in ("num_seqs", "total_q", "total_k", "max_seqlen_q", "max_seqlen_k", "heads_q", "heads_kv", "head_dim"):
        setattr(p, n, a[n])
    for n in ("q", "k", "v", "o"):
        setattr(p, n + "_row_stride", strides[n][0])
        setattr(p, n + "_head_stride", strides[n][1])
    p.dtype = dtype
    p.causal = 1 if causal else 0
    p.softmax_scale = a["softmax_scale"]
    if a["window"] is not None:
        p.window = 1
        p.window_left, p.window_right = a["window"]
    p.softcap = a["softcap"]
    p.head_dim_v = a.get("head_dim_v", 0)  # V's and O's head dim (the (192, 128) split)
    return p


def bwd_varlen_params(ptrs, a, strides, dtype, causal, deterministic):
    """BwdVarlenParams from pointers {q, k, v, o, lse, dout, dq, dk, dv, cu_seqlens_q, cu_seqlens_k[,
    seqused_q, seqused_k]}, check_varlen's dict and strides {q, k, v, o, do, dq, dk, dv: (row, head)}.
    The workspace is set by the caller (flashptx_bwd_varlen_workspace_size)."""
    p = BwdVarlenParams()
    for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv", "cu_seqlens_q", "cu_seqlens_k", "seqused_q",
              "seqused_k"):
        setattr(p, n, ptrs.get(n) or None)
    for n in ("num_seqs", "total_q", "total_k", "max_seqlen_q", "max_seqlen_k", "heads_q", "heads_kv", "head_dim"):
        setattr(p, n, a[n])
    for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv"):
        setattr(p, n + "_row_stride", strides[n][0])
        setattr(p, n + "_head_stride", strides[n][1])
    p.dtype = dtype
    p.causal = 1 if causal else 0
    p.softmax_scale = a["softmax_scale"]
    p.deterministic = 1 if deterministic else 0
    if a["window"] is not None:
        p.window = 1
        p.window_left, p.window_right = a["window"]
    p.softcap = a["softcap"]
    p.head_dim_v = a.get("head_dim_v", 0)  # V's, O's, dO's and dV's head dim (the (192, 128) split)
    return p


def kvcache_params(ptrs, a, strides, dtype, causal, num_splits, rotary_interleaved):
    """KvcacheParams from pointers {q, k_cache, v_cache, o[, lse, cache_seqlens, cache_batch_idx,
    page_table, k_new, v_new, rotary_cos, rotary_sin, workspace, error_word, cache_leftpad]}, check_kvcache's dict
    `a`, strides {q, k, v, o[, k_new, v_new]: (batch, row, head)} in elements and a dtype code.
    The workspace's size is set by the caller (flashptx_fwd_kvcache_workspace_size)."""
    p = KvcacheParams()
    for n in ("q", "k_cache", "v_cache", "o", "lse", "cache_seqlens", "cache_batch_idx", "page_table", "k_new",
              "v_new", "rotary_cos", "rotary_sin", "workspace", "error_word", "cache_leftpad"):
        setattr(p, n, ptrs.get(n) or None)
    for n in ("batch", "seqlen_q", "heads_q", "heads_kv", "head_dim", "cache_batch", "cache_seqlen", "max_pages",
              "page_table_stride", "rotary_dim", "seqlen_ro"):
        setattr(p, n, a[n])
    p.seqlen_new = a["seqlen_new"] if ptrs.get("k_new") else 0
    for n in strides:
        b, r, h = strides[n]
        setattr(p, n + "_batch_stride", b)
        setattr(p, n + "_row_stride", r)
        setattr(p, n + "_head_stride", h)
    p.dtype = dtype
    p.causal = 1 if causal else 0
    p.softmax_scale = a["softmax_scale"]
    p.num_splits = num_splits
    p.rotary_interleaved = 1 if rotary_interleaved else 0
    return p


# ---- parameters from plain numbers (torch-free; the torch layer passes tensors' pointers) --------
def fwd_params(ptrs, shape_q, shape_k, strides, dtype, causal, softmax_scale, window_size=None, softcap=0.0,
               head_dim_v=0):
    """FwdParams from pointers {q,k,v,o,lse[,sinks]}, q's and k's [batch, seqlen, heads, head_dim], strides
    {q,k,v,o: (batch, row, head)} in elements, a dtype code, causal, and the scale (0: 1/sqrt(d));
    window_size (left, right) (None: no window) and softcap (0: none) as include/flashptx.h; the
    sinks' pointer (fp32 [heads_q]) when ptrs has one; head_dim_v: V's and O's head dim (0: q's)."""
    p = FwdParams()
    for n in ("q", "k", "v", "o", "lse"):
        setattr(p, n, ptrs.get(n) or None)
    p.batch, p.seqlen_q, p.heads_q, p.head_dim = shape_q
    p.seqlen_k, p.heads_kv = shape_k[1], shape_k[2]
    for n in ("q", "k", "v", "o"):
        b, r, h = strides[n]
        setattr(p, n + "_batch_stride", b)
        setattr(p, n + "_row_stride", r)
        setattr(p, n + "_head_stride", h)
    dq, dk, dv, do = dtype if isinstance(dtype, tuple) else (dtype,) * 4
    p.q_dtype, p.k_dtype, p.v_dtype, p.o_dtype = dq, dk, dv, do
    p.causal = 1 if causal else 0
    p.softmax_scale = softmax_scale
    p.tile_counter = ptrs.get("tile_counter") or None
    if window_size is not None:
        p.window = 1
        p.window_left, p.window_right = window_size
    p.softcap = softcap
    p.sinks = ptrs.get("sinks") or None
    p.head_dim_v = head_dim_v
    return p


def bwd_params(ptrs, shape_q, shape_k, strides, dtype, causal, softmax_scale, deterministic, window_size=None,
               softcap=0.0, head_dim_v=0):
    """BwdParams from pointers {q,k,v,o,lse,dout,dq,dk,dv[,sinks,dsinks]} and strides {q,k,v,o,do,dq,dk,dv};
    window_size (left, right) (None: none) and softcap (0: none) as the forward's (fwd_params);
    head_dim_v: V's, O's, dO's and dV's head dim (0: q's), as the forward's."""
    p = BwdParams()
    for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv", "sinks", "dsinks"):
        setattr(p, n, ptrs.get(n) or None)
    p.batch, p.seqlen_q, p.heads_q, p.head_dim = shape_q
    p.seqlen_k, p.heads_kv = shape_k[1], shape_k[2]
    for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv"):
        b, r, h = strides[n]
        setattr(p, n + "_batch_stride", b)
        setattr(p, n + "_row_stride", r)
        setattr(p, n + "_head_stride", h)
    p.dtype = dtype
    p.causal = 1 if causal else 0
    p.softmax_scale = softmax_scale
    p.deterministic = 1 if deterministic else 0
    if window_size is not None:
        p.window = 1
        p.window_left, p.window_right = window_size
    p.softcap = softcap
    p.head_dim_v = head_dim_v
    return p


def probe_device(lib):
    """(True, description) when this library can launch on the current CUDA device, else (False, the
    library's own reason: no driver, no device, a device it has no kernels for, sm_100 without the
    opt-in...). Launches nothing and touches no memory: flashptx_fwd_kernel_info of a small valid
    problem with placeholder pointers, which answers as flashptx_fwd would (the same plan)."""
    fake = 1 << 20  # 16-byte aligned, never dereferenced: kernel_info only plans
    p = fwd_params({n: fake for n in ("q", "k", "v", "o")}, (1, 128, 1, 128), (1, 128, 1, 128),
                   {n: (128 * 128, 128, 128) for n in ("q", "k", "v", "o")}, FLASHPTX_BF16, False, 0.0)
    info = KernelInfo()
    st = lib.flashptx_fwd_kernel_info(ctypes.byref(p), ctypes.byref(info))
    if st != FLASHPTX_OK:
        return False, lib.flashptx_last_error().decode("utf-8", "replace") or STATUS_NAMES.get(st, str(st))
    return True, "the current CUDA device runs %s" % (info.symbol or b"?").decode()


def _torch_reason():
    """None when torch with CUDA is importable here, else why not (imports torch when it is there)."""
    try:
        import torch
    except ImportError as e:
        if (e.name or "").split(".")[0] == "torch":
            return "PyTorch is not installed (flashptx.attention takes torch tensors)"
        return "PyTorch cannot be imported: %s" % e
    except Exception as e:  # noqa: BLE001 - a broken install is a reason like any other
        return "PyTorch cannot be imported: %s" % e
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device (torch %s, built for CUDA %s)" % (torch.__version__, torch.version.cuda)
    return None


def unavailable_reasons():
    """Every reason flashptx.attention cannot run here ([] when it can): the library, the device (as
    the library itself says it), PyTorch."""
    reasons = []
    try:
        lib = library()
    except LibraryNotFoundError as e:
        reasons.append(str(e))
        lib = None
    if lib is not None:
        ok, why = probe_device(lib)
        if not ok:
            reasons.append("no usable GPU: " + why)
    t = _torch_reason()
    if t:
        reasons.append(t)
    return reasons


def unavailable_reason():
    """None when flashptx.attention can run here, else one message with every reason."""
    r = unavailable_reasons()
    return "; ".join(r) if r else None


def available():
    """True when flashptx.attention can run here: the library loads, the library runs on the current
    device (its own answer: an sm_90 GPU, or an sm_100 one after allow_unverified_sm100()), and
    PyTorch with CUDA is installed. unavailable_reason() says why not."""
    return not unavailable_reasons()
