#!/usr/bin/env python3
"""CPU-side checks of the Python package tools/python/flashptx: no torch, no GPU, no pytest needed.

    python3 tools/python/tests/test_cpu.py      # exit 0 when nothing failed; last line "N passed, N failed, N skipped"

Run by ./run_tests (suite "python cpu", tests/host/test_python.cpp). What it checks:
- the ctypes mirrors of flashptx_fwd_params, flashptx_bwd_params and flashptx_kernel_info against
  include/flashptx.h: field names and order (parsed from the header text), each field's type class,
  offsets and sizes by the C layout rules, and, where a C compiler is on PATH, against offsetof()
  of the real header; the status and dtype enums; the prototypes of the functions the package binds
- status codes to exceptions: ValueError for rejected input, RuntimeError for device and CUDA ones,
  the library's message kept
- the lookup of libflashptx.so: next to the package, $FLASHPTX_LIB (the last place when set), the
  build tree; the message when it is nowhere
- `import flashptx` without torch (and that it never imports torch by itself); available() is
  False with a reason; attention without torch and attention_varlen raise informative errors; the
  options are keyword-only with FlashAttention-3's names (FA3's positional call raises TypeError)
- with the built library (skipped when there is none): every status name matches the library's,
  the library's own validation messages come back as FlashptxValueError, the device probe (a GPU
  or the library's reason for there being none), the version and the sm_100 opt-in, and the
  package installed outside the source tree (pip install --target) carrying its library
"""
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_PARENT = os.path.dirname(HERE)  # tools/python
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
HEADER = os.path.join(REPO, "include", "flashptx.h")
sys.path.insert(0, PKG_PARENT)

from flashptx import _abi  # noqa: E402

RESULTS = []  # (name, "ok" | "FAIL" | "skip", detail)
CASES = []


class Skip(Exception):
    pass


def case(fn):
    CASES.append(fn)
    return fn


# ---- the header, parsed -------------------------------------------------------------------------------
def header_text():
    with open(HEADER) as f:
        return f.read()


def strip_comments(s):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", s, flags=re.S))


DECL = re.compile(r"^(?P<type>(?:const\s+)?\w+(?:\s*\*)?)\s*(?P<names>\w+(?:\s*,\s*\w+)*)$")


def parse_struct(text, name):
    """[(field, C type)] of `typedef struct NAME { ... } NAME;`, in order."""
    m = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), text, re.S)
    assert m, "no typedef struct %s in %s" % (name, HEADER)
    fields = []
    for decl in strip_comments(m.group(1)).split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        d = DECL.match(decl)
        assert d, "cannot parse the declaration %r in %s" % (decl, name)
        ctype = d.group("type").replace(" ", "")
        fields += [(n.strip(), ctype) for n in d.group("names").split(",")]
    return fields


def parse_enum(text, name):
    m = re.search(r"typedef\s+enum\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), text, re.S)
    assert m, "no typedef enum %s" % name
    return {k: int(v) for k, v in re.findall(r"(FLASHPTX_\w+)\s*=\s*(\d+)", strip_comments(m.group(1)))}


# C type -> (class, size, alignment) on LP64 (x86-64, aarch64 Linux)
def c_class(ctype):
    if ctype.endswith("*"):
        return ("pointer", 8, 8)
    return {"int64_t": ("int64", 8, 8), "int": ("int32", 4, 4), "flashptx_dtype": ("int32", 4, 4),
            "float": ("float", 4, 4)}[ctype]


def ctypes_class(t):
    if t in (ctypes.c_void_p, ctypes.c_char_p) or issubclass(t, ctypes._Pointer):
        return "pointer"
    return {ctypes.c_int64: "int64", ctypes.c_int: "int32", ctypes.c_float: "float"}[t]


def c_layout(fields):
    """{field: offset} and the struct's size by the C rules."""
    off, align_max, out = 0, 1, {}
    for n, t in fields:
        _, size, align = c_class(t)
        off = (off + align - 1) // align * align
        out[n] = off
        off += size
        align_max = max(align_max, align)
    return out, (off + align_max - 1) // align_max * align_max


STRUCTS = [("flashptx_fwd_params", _abi.FwdParams), ("flashptx_bwd_params", _abi.BwdParams),
           ("flashptx_fwd_varlen_params", _abi.FwdVarlenParams), ("flashptx_bwd_varlen_params", _abi.BwdVarlenParams),
           ("flashptx_kvcache_params", _abi.KvcacheParams), ("flashptx_kernel_info", _abi.KernelInfo)]


@case
def struct_fields_match_the_header():
    text = header_text()
    for cname, py in STRUCTS:
        fields = parse_struct(text, cname)
        names = [n for n, _ in fields]
        pynames = [f[0] for f in py._fields_]
        assert pynames == names, "%s: field order differs from the header:\n  header: %s\n  ctypes: %s" % (
            cname, names, pynames)
        for (n, ct), (_, pt) in zip(fields, py._fields_):
            assert c_class(ct)[0] == ctypes_class(pt), "%s.%s: header %s, ctypes %s" % (cname, n, ct, pt.__name__)
        offsets, size = c_layout(fields)
        for n, _ in fields:
            assert getattr(py, n).offset == offsets[n], "%s.%s at offset %d in ctypes, %d by the C rules" % (
                cname, n, getattr(py, n).offset, offsets[n])
        assert ctypes.sizeof(py) == size, "sizeof(%s): ctypes %d, C rules %d" % (cname, ctypes.sizeof(py), size)


@case
def struct_offsets_match_the_compiler():
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise Skip("no C compiler on PATH")
    text = header_text()
    tmp = tempfile.mkdtemp(prefix="flashptx-pytest-")
    try:
        # A stand-in for the one thing the header takes from the CUDA runtime: no toolkit needed.
        with open(os.path.join(tmp, "cuda_runtime_api.h"), "w") as f:
            f.write("typedef struct CUstream_st* cudaStream_t;\n")
        lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "flashptx.h"', "int main(void) {"]
        for cname, _ in STRUCTS:
            lines.append('  printf("%s sizeof %%zu\\n", sizeof(%s));' % (cname, cname))
            for n, _ in parse_struct(text, cname):
                lines.append('  printf("%s %s %%zu\\n", offsetof(%s, %s));' % (cname, n, cname, n))
        lines += ["  return 0;", "}"]
        src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([cc, "-std=c99", "-I", tmp, "-I", os.path.join(REPO, "include"), src, "-o", exe],
                           capture_output=True, text=True)
        assert r.returncode == 0, "compiling the offsetof probe failed:\n" + r.stderr
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
        got = {(a, b): int(c) for a, b, c in (ln.split() for ln in out if ln.strip())}
        for cname, py in STRUCTS:
            assert got[(cname, "sizeof")] == ctypes.sizeof(py), "sizeof(%s): C %d, ctypes %d" % (
                cname, got[(cname, "sizeof")], ctypes.sizeof(py))
            for n, _ in py._fields_:
                assert got[(cname, n)] == getattr(py, n).offset, "%s.%s: C offset %d, ctypes %d" % (
                    cname, n, got[(cname, n)], getattr(py, n).offset)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@case
def enums_match_the_header():
    text = header_text()
    status = parse_enum(text, "flashptx_status")
    assert status == {v: k for k, v in _abi.STATUS_NAMES.items()}, "flashptx_status differs:\n  header %s\n  package %s" % (
        status, _abi.STATUS_NAMES)
    assert parse_enum(text, "flashptx_dtype") == _abi.DTYPE_CODES
    assert parse_enum(text, "flashptx_option") == _abi.OPTION_CODES
    assert _abi.FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100 == _abi.OPTION_CODES["FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100"]
    assert _abi.FLASHPTX_BF16 == _abi.DTYPE_CODES["FLASHPTX_BF16"]
    assert _abi.FLASHPTX_FP16 == _abi.DTYPE_CODES["FLASHPTX_FP16"]


def c_arg_type(decl):
    """The ctypes type a C parameter declaration maps to."""
    decl = " ".join(decl.split())
    for struct, py in (("flashptx_fwd_params", _abi.FwdParams), ("flashptx_bwd_params", _abi.BwdParams),
                       ("flashptx_fwd_varlen_params", _abi.FwdVarlenParams),
                       ("flashptx_bwd_varlen_params", _abi.BwdVarlenParams), ("flashptx_kernel_info", _abi.KernelInfo),
                       ("flashptx_kvcache_params", _abi.KvcacheParams)):
        if struct in decl:
            return ctypes.POINTER(py)
    if re.match(r"^int\s*\*", decl):
        return ctypes.POINTER(ctypes.c_int)
    if re.match(r"^int64_t\s*\*", decl):
        return ctypes.POINTER(ctypes.c_int64)
    if re.match(r"^int64_t\s+\w+$", decl):
        return ctypes.c_int64
    if decl.startswith("cudaStream_t"):
        return ctypes.c_void_p
    if decl.startswith("flashptx_status") or decl.startswith("flashptx_option") or decl.startswith("int "):
        return ctypes.c_int
    raise AssertionError("unmapped C parameter %r" % decl)


@case
def bound_functions_match_the_prototypes():
    text = strip_comments(header_text())
    protos = {m.group(2): (" ".join(m.group(1).split()), m.group(3).strip())
              for m in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(flashptx_\w+)\s*\(([^()]*)\)\s*;", text)}
    for name, (restype, argtypes) in _abi.SIGNATURES.items():
        assert name in protos, "%s is not declared in %s" % (name, HEADER)
        ret, args = protos[name]
        want_ret = ctypes.c_char_p if ret.replace(" ", "") == "constchar*" else ctypes.c_int
        assert ret in ("flashptx_status", "int", "const char*", "const char *"), "%s returns %s" % (name, ret)
        assert restype is want_ret, "%s: restype %s for C %s" % (name, restype, ret)
        c_args = [] if args in ("", "void") else [a.strip() for a in args.split(",")]
        assert len(c_args) == len(argtypes), "%s: %d C parameters, %d bound" % (name, len(c_args), len(argtypes))
        for a, t in zip(c_args, argtypes):
            assert c_arg_type(a) == t, "%s: parameter %r bound as %s" % (name, a, t)


# ---- statuses -> exceptions -------------------------------------------------------------------------
@case
def statuses_become_the_right_exceptions():
    for code, name in _abi.STATUS_NAMES.items():
        if code == 0:
            continue
        e = _abi.error_for_status("flashptx_fwd", code, name + ": the library's words")
        assert isinstance(e, _abi.FlashptxError) and e.status == code and e.status_name == name
        assert str(e) == "flashptx_fwd: " + name + ": the library's words", str(e)
        if name in ("FLASHPTX_ERR_UNSUPPORTED_DEVICE", "FLASHPTX_ERR_CUDA"):
            assert isinstance(e, RuntimeError) and not isinstance(e, ValueError), name
        else:
            assert isinstance(e, ValueError) and not isinstance(e, RuntimeError), name
    e = _abi.error_for_status("flashptx_bwd", 3, "")
    assert "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" in str(e)

    class FakeLib:
        @staticmethod
        def flashptx_last_error():
            return b"FLASHPTX_ERR_BAD_HEADS: heads_q (8) must be a positive multiple of heads_kv (3)"
    _abi.check(FakeLib, "flashptx_fwd", 0)
    try:
        _abi.check(FakeLib, "flashptx_fwd", 7)
    except ValueError as e:
        assert "heads_q (8)" in str(e) and e.status_name == "FLASHPTX_ERR_BAD_HEADS"
    else:
        raise AssertionError("status 7 raised nothing")


# ---- the library lookup -------------------------------------------------------------------------------
class Tree:
    """A throw-away source tree: <root>/include/flashptx.h and <root>/tools/python/flashptx/."""

    def __init__(self, in_source_tree=True):
        self.tmp = tempfile.mkdtemp(prefix="flashptx-lookup-")
        self.root = os.path.join(self.tmp, "repo")
        self.pkg = os.path.join(self.root, "tools", "python", "flashptx")
        os.makedirs(self.pkg)
        if in_source_tree:
            os.makedirs(os.path.join(self.root, "include"))
            self.touch(os.path.join(self.root, "include", "flashptx.h"))
        self.custom = os.path.join(self.tmp, "custom")
        os.makedirs(self.custom)

    @staticmethod
    def touch(p):
        with open(p, "w") as f:
            f.write("x")
        return p

    def __enter__(self):
        return self

    def __exit__(self, *a):
        shutil.rmtree(self.tmp, ignore_errors=True)


def lookup_error(env, pkg):
    try:
        _abi.find_library(env, pkg)
    except _abi.LibraryNotFoundError as e:
        return str(e)
    raise AssertionError("find_library found something")


@case
def lookup_order():
    with Tree() as t:
        beside = t.touch(os.path.join(t.pkg, "libflashptx.so"))
        built = t.touch(os.path.join(t.root, "libflashptx.so"))
        mine = t.touch(os.path.join(t.custom, "libflashptx.so"))
        # 1. next to the package (what an installed package carries) wins over both
        assert _abi.find_library({}, t.pkg) == beside
        assert _abi.find_library({"FLASHPTX_LIB": mine}, t.pkg) == beside
        os.remove(beside)
        # 2. $FLASHPTX_LIB, as a file or as a folder, over the build tree
        assert _abi.find_library({"FLASHPTX_LIB": mine}, t.pkg) == mine
        assert _abi.find_library({"FLASHPTX_LIB": t.custom}, t.pkg) == mine
        # ... and when it names nothing, nothing else is loaded in its place
        missing = os.path.join(t.custom, "nope.so")
        msg = lookup_error({"FLASHPTX_LIB": missing}, t.pkg)
        assert "$FLASHPTX_LIB" in msg and missing in msg and "no such file" in msg, msg
        # 3. the build tree
        assert _abi.find_library({"FLASHPTX_LIB": ""}, t.pkg) == built
        os.remove(built)
        msg = lookup_error({}, t.pkg)
        lines = msg.split("\n")
        assert lines[0].startswith("flashptx: cannot find libflashptx.so"), msg
        assert lines[1].strip().startswith("1. next to the package (%s)" % os.path.join(t.pkg, "libflashptx.so")), msg
        assert lines[2].strip() == "2. $FLASHPTX_LIB: not set", msg
        assert lines[3].strip().startswith("3. the build tree") and os.path.join(t.root, "libflashptx.so") in lines[3], msg
        assert "make" in lines[4] and t.root in lines[4] and "FLASHPTX_LIB" in lines[4], msg
    with Tree(in_source_tree=False) as t:  # an installed copy outside the tree: no build tree to look in
        msg = lookup_error({}, t.pkg)
        assert "not inside the flashptx source tree" in msg, msg
        assert _abi.source_tree_root(t.pkg) is None


@case
def a_file_that_is_no_library_is_reported():
    with Tree() as t:
        bad = t.touch(os.path.join(t.custom, "libflashptx.so"))
        try:
            _abi.load_library(bad)
        except _abi.LibraryNotFoundError as e:
            assert bad in str(e) and "cannot be loaded" in str(e), str(e)
        else:
            raise AssertionError("loaded a text file")


@case
def the_real_package_finds_the_build_tree():
    assert _abi.source_tree_root() == REPO, (_abi.source_tree_root(), REPO)


# ---- import without torch ------------------------------------------------------------------------------
def run_python(code, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, "python -c failed (%d):\n%s%s" % (r.returncode, r.stdout, r.stderr)
    return r.stdout


@case
def import_never_imports_torch():
    out = run_python("import sys, flashptx; print('torch' in sys.modules); print(sorted(flashptx.__all__))")
    assert out.split("\n")[0] == "False", "import flashptx imported torch:\n" + out
    assert "attention" in out and "available" in out


@case
def import_and_errors_without_torch():
    code = r'''
import sys
sys.modules["torch"] = None          # as if torch were not installed: `import torch` fails
import flashptx
assert flashptx.available() is False
reason = flashptx.unavailable_reason()
assert "PyTorch is not installed" in reason, reason
try:
    flashptx.attention(1, 2, 3)
except RuntimeError as e:
    assert "needs PyTorch" in str(e) and "not installed" in str(e), str(e)
else:
    raise AssertionError("attention ran without torch")
try:
    flashptx.attention(1, 2, 3, 0.088, True)   # FA3's flash_attn_func(q, k, v, softmax_scale, causal)
except TypeError as e:
    assert "positional" in str(e), str(e)
else:
    raise AssertionError("a positional softmax_scale and causal were accepted")
try:
    flashptx.attention_with_kvcache(1, 2, 3, cache_seqlens=4)
except RuntimeError as e:
    assert "attention_with_kvcache needs PyTorch" in str(e), str(e)
else:
    raise AssertionError("attention_with_kvcache ran without torch")
try:
    flashptx.attention_with_kvcache(1, 2, 3, 4, 5, None)   # FA3's positional qv / FA2's rotary_cos
except TypeError as e:
    assert "positional" in str(e), str(e)
else:
    raise AssertionError("a sixth positional argument was accepted")
try:
    flashptx.attention_varlen(1, 2, 3, None, None, 0, 0, 0.088)
except TypeError as e:
    assert "positional" in str(e), str(e)
else:
    raise AssertionError("attention_varlen took a positional softmax_scale")
try:
    flashptx.attention_varlen(1, 2, 3, None, None, 0, 0)
except RuntimeError as e:
    assert "attention_varlen needs PyTorch" in str(e), str(e)
else:
    raise AssertionError("attention_varlen ran without torch")
print(reason)
'''
    run_python(code)


@case
def options_are_keyword_only_with_fa3_names():
    """The torch wrapper's signature (read from its source: torch is not needed here): q, k, v, then
    keyword-only options, with FA3's flash_attn_func names where they mean the same thing."""
    import ast
    import inspect
    import flashptx
    with open(os.path.join(PKG_PARENT, "flashptx", "_torch.py")) as f:
        tree = ast.parse(f.read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "attention")
    assert [a.arg for a in fn.args.args] == ["q", "k", "v"], [a.arg for a in fn.args.args]
    assert fn.args.vararg is None and fn.args.kwarg is None
    kw = [a.arg for a in fn.args.kwonlyargs]
    assert kw[:3] == ["softmax_scale", "causal", "deterministic"], kw
    defaults = [ast.literal_eval(d) for d in fn.args.kw_defaults]
    assert defaults[:3] == [None, False, False], defaults
    # The stand-in used without torch has the same signature.
    stub = inspect.signature(flashptx._attention_without_torch)
    assert [p.name for p in stub.parameters.values()] == ["q", "k", "v"] + kw, stub
    assert all(p.kind == p.KEYWORD_ONLY for p in list(stub.parameters.values())[3:]), stub
    # attention_with_kvcache: q, k_cache, v_cache, k, v positional (FA2 and FA3 agree on those), the
    # rest keyword-only, FA3's flash_attn_with_kvcache names; the stand-in without torch the same
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "attention_with_kvcache")
    assert [a.arg for a in fn.args.args] == ["q", "k_cache", "v_cache", "k", "v"], [a.arg for a in fn.args.args]
    kw = [a.arg for a in fn.args.kwonlyargs]
    for name in ("rotary_cos", "rotary_sin", "cache_seqlens", "cache_batch_idx", "cache_leftpad", "page_table",
                 "softmax_scale", "causal", "window_size", "softcap", "rotary_interleaved", "num_splits",
                 "return_softmax_lse"):
        assert name in kw, (name, kw)
    defaults = dict(zip(kw, (ast.literal_eval(d) for d in fn.args.kw_defaults)))
    assert (defaults["causal"], defaults["rotary_interleaved"], defaults["num_splits"], defaults["window_size"]) == \
        (False, True, 0, (-1, -1)), defaults
    stub = inspect.signature(flashptx._attention_with_kvcache_without_torch)
    assert [p.name for p in stub.parameters.values()] == ["q", "k_cache", "v_cache", "k", "v"] + kw, stub
    assert all(p.kind == p.KEYWORD_ONLY for p in list(stub.parameters.values())[5:]), stub
    # attention_varlen: FA3's flash_attn_varlen_func positional arguments (q, k, v, the prefix sums
    # and the maxima), then keyword-only options with its names; the stand-in without torch the same
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "attention_varlen")
    assert [a.arg for a in fn.args.args] == ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q",
                                             "max_seqlen_k"], [a.arg for a in fn.args.args]
    kw = [a.arg for a in fn.args.kwonlyargs]
    assert kw == ["softmax_scale", "causal", "window_size", "softcap", "seqused_q", "seqused_k", "deterministic",
                  "return_lse"], kw
    defaults = [ast.literal_eval(d) for d in fn.args.kw_defaults]
    assert defaults == [None, False, (-1, -1), 0.0, None, None, False, False], defaults
    stub = inspect.signature(flashptx._attention_varlen_without_torch)
    assert [p.name for p in stub.parameters.values()] == [a.arg for a in fn.args.args] + kw, stub
    assert all(p.kind == p.KEYWORD_ONLY for p in list(stub.parameters.values())[7:]), stub
    assert [p.default for p in list(stub.parameters.values())[7:]] == defaults, stub


@case
def window_and_softcap_values_are_checked():
    """window_size and softcap (FA3's names): bad values are ValueError before any call; (-1, -1) and 0
    mean none."""
    ok = _abi.check_modifiers("t", (-1, -1), 0.0)
    assert ok == (None, 0.0), ok
    assert _abi.check_modifiers("t", (128, 0), 30) == ((128, 0), 30.0)
    assert _abi.check_modifiers("t", (-1, 7), 0.5) == ((-1, 7), 0.5)
    for bad in ((-2, 0), (0, -3), (1.5, 0), (True, 0), (1,), 5, None, ("a", 1)):
        try:
            _abi.check_modifiers("t", bad, 0.0)
        except ValueError as e:
            assert "window_size" in str(e), e
        else:
            raise AssertionError("window_size %r accepted" % (bad,))
    for bad in (-1.0, float("nan"), float("inf"), "3", True):
        try:
            _abi.check_modifiers("t", (-1, -1), bad)
        except ValueError as e:
            assert "softcap" in str(e), e
        else:
            raise AssertionError("softcap %r accepted" % (bad,))
    # The params struct carries them at the header's offsets (checked against the header above).
    p = _abi.fwd_params({}, (1, 2, 3, 64), (1, 5, 3, 64), {n: (0, 0, 0) for n in "qkvo"}, 0, True, 0.0, (4, 1), 2.5)
    assert (p.window, p.window_left, p.window_right, p.softcap) == (1, 4, 1, 2.5)
    p = _abi.fwd_params({}, (1, 2, 3, 64), (1, 5, 3, 64), {n: (0, 0, 0) for n in "qkvo"}, 0, True, 0.0)
    assert (p.window, p.window_left, p.window_right, p.softcap) == (0, 0, 0, 0.0)


@case
def sinks_shape_and_dtype_are_checked():
    """sinks (gpt-oss's): float32 [heads_q], else ValueError before any call; the params structs carry
    the pointers (the forward's sinks, the backward's sinks and dsinks) at the header's offsets."""
    assert _abi.check_sinks("t", (8,), "float32", 8) is None
    for shape, dtype, msg in (((8, 1), "float32", "shape"), ((4,), "float32", "shape"), ((), "float32", "shape"),
                              ((8,), "bfloat16", "float32"), ((8,), "float64", "float32")):
        try:
            _abi.check_sinks("t", shape, dtype, 8)
        except ValueError as e:
            assert msg in str(e), e
        else:
            raise AssertionError("sinks %r %s accepted" % (shape, dtype))
    p = _abi.fwd_params({"sinks": 4096}, (1, 2, 3, 64), (1, 5, 3, 64), {n: (0, 0, 0) for n in "qkvo"}, 0, True, 0.0)
    assert p.sinks == 4096
    b = _abi.bwd_params({"sinks": 4096, "dsinks": 8192}, (1, 2, 3, 64), (1, 5, 3, 64),
                        {n: (0, 0, 0) for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv")}, 0, False, 0.0, True)
    assert (b.sinks, b.dsinks) == (4096, 8192)
    assert _abi.STATUS_NAMES[23] == "FLASHPTX_ERR_BAD_SINKS"


# ---- flashptx.attention_with_kvcache's arguments (torch-free checks) -------------------------------------
def T(shape, dtype="bfloat16", device="cuda:0", stride=None):
    """A TensorSpec, contiguous unless told."""
    if stride is None:
        stride, n = [], 1
        for x in reversed(shape):
            stride.insert(0, n)
            n *= max(x, 1)
    return _abi.TensorSpec(shape, stride, dtype, device)


def kv_args(**over):
    """A valid paged decode call (batch 3, GQA 8/2, page 64, 4 pages per sequence) with overrides."""
    a = {"q": T((3, 1, 8, 128)), "k_cache": T((20, 64, 2, 128)), "v_cache": T((20, 64, 2, 128)),
         "cache_seqlens": T((3,), "int32"), "page_table": T((3, 4), "int32")}
    a.update(over)
    return a


def kv_rejects(words, **over):
    a = kv_args(**over)
    try:
        _abi.check_kvcache("flashptx.attention_with_kvcache", **a)
    except ValueError as e:
        assert str(e).startswith("flashptx.attention_with_kvcache: "), str(e)
        for w in words if isinstance(words, tuple) else (words,):
            assert w in str(e), "%r not in %r" % (w, str(e))
        return
    raise AssertionError("accepted %r" % (over,))


@case
def kvcache_arguments_are_checked_before_any_call():
    """attention_with_kvcache: FA3's arguments into the sizes of flashptx_kvcache_params, or a
    ValueError naming the bad value (what the library checks itself is its own test, below)."""
    a = _abi.check_kvcache("t", **kv_args())
    assert (a["batch"], a["seqlen_q"], a["heads_q"], a["heads_kv"], a["head_dim"]) == (3, 1, 8, 2, 128), a
    assert a["paged"] and (a["cache_batch"], a["cache_seqlen"], a["max_pages"], a["page_table_stride"]) == (20, 64, 4, 4)
    assert a["capacity"] == 256 and a["seqlens"] is None and a["softmax_scale"] == 0.0 and a["seqlen_new"] == 0
    # contiguous, an int length, an append with rotary (cos/sin [seqlen_ro, rotary_dim / 2])
    a = _abi.check_kvcache("t", T((2, 5, 4, 128)), T((3, 300, 4, 128)), T((3, 300, 4, 128)), T((2, 5, 4, 128)),
                           T((2, 5, 4, 128)), T((300, 32), "float32"), T((300, 32), "float32"), cache_seqlens=200,
                           cache_batch_idx=T((2,), "int32"), softmax_scale=0.1, causal=True, num_splits=3)
    assert (a["paged"], a["capacity"], a["seqlens"], a["seqlen_new"], a["rotary_dim"], a["seqlen_ro"]) == \
        (False, 300, 200, 5, 64, 300), a
    assert abs(a["softmax_scale"] - 0.1) < 1e-12
    # no lengths: the full cache (less what is appended)
    assert _abi.check_kvcache("t", T((2, 1, 4, 128)), T((2, 90, 4, 128)), T((2, 90, 4, 128)))["seqlens"] == 90
    # left padding: an int32 [batch] tensor, carried by the struct
    assert _abi.check_kvcache("t", **kv_args(cache_leftpad=T((3,), "int32")))["batch"] == 3
    assert _abi.kvcache_params({"cache_leftpad": 4096}, _abi.check_kvcache("t", **kv_args()), {}, 0, False, 0,
                               False).cache_leftpad == 4096
    # a padded page table: its row stride is passed on
    assert _abi.check_kvcache("t", **kv_args(page_table=T((3, 4), "int32", stride=(6, 1))))["page_table_stride"] == 6
    new = T((3, 2, 2, 128))
    for words, over in (
            ("q must be a tensor", {"q": 5}),
            ("q must be [batch, seqlen_q, heads_q, head_dim]", {"q": T((3, 8, 128))}),
            ("q is float32", {"q": T((3, 1, 8, 128), "float32")}),
            ("must share one dtype", {"k_cache": T((20, 64, 2, 128), "float16")}),
            ("must have one shape", {"v_cache": T((20, 32, 2, 128))}),
            ("k_cache must be [num_pages, page_size", {"k_cache": T((20, 64, 256))}),
            ("head_dim 64 is not q's 128", {"k_cache": T((20, 64, 2, 64)), "v_cache": T((20, 64, 2, 64))}),
            ("multiple of the cache's heads_kv 3", {"k_cache": T((20, 64, 3, 128)), "v_cache": T((20, 64, 3, 128))}),
            ("on q's device", {"v_cache": T((20, 64, 2, 128), device="cuda:1")}),
            ("k_cache's last dim has stride 2", {"k_cache": T((20, 64, 2, 128), stride=(32768, 512, 256, 2))}),
            ("on q's device", {"cache_seqlens": T((3,), "int32", device="cpu")}),
            ("cache_seqlens must be int32", {"cache_seqlens": T((3,), "int64")}),
            ("cache_seqlens must have shape (3,)", {"cache_seqlens": T((4,), "int32")}),
            ("cache_seqlens must be an int or an int32 tensor", {"cache_seqlens": 2.5}),
            ("cache_seqlens must be an int or an int32 tensor", {"cache_seqlens": True}),
            ("cache_seqlens 257", {"cache_seqlens": 257}),
            ("cache_seqlens -1", {"cache_seqlens": -1}),
            ("page_table must be int32", {"page_table": T((3, 4), "int64")}),
            ("page_table must have shape (3, 4)", {"page_table": T((2, 4), "int32")}),
            ("no column", {"page_table": T((3, 0), "int32")}),
            ("rows must be contiguous", {"page_table": T((3, 4), "int32", stride=(1, 3))}),
            ("cache_batch_idx with page_table", {"cache_batch_idx": T((3,), "int32")}),
            ("cache_leftpad must be int32", {"cache_leftpad": T((3,), "int64")}),
            ("cache_leftpad must have shape (3,)", {"cache_leftpad": T((4,), "int32")}),
            ("on q's device", {"cache_leftpad": T((3,), "int32", device="cpu")}),
            ("k and v (the new keys and values) come together: v is None", {"k": new}),
            ("k must be [batch, seqlen_new, heads_kv, head_dim] = (3, 2, 2, 128)", {"k": T((3, 2, 8, 128)),
                                                                                    "v": new}),
            ("in the cache's dtype", {"k": new, "v": T((3, 2, 2, 128), "float16")}),
            ("seqlen_new 300 is above the cache's capacity 256", {"k": T((3, 300, 2, 128)), "v": T((3, 300, 2, 128))}),
            ("cache_seqlens 250: the keys and the 7 appended", {"k": T((3, 7, 2, 128)), "v": T((3, 7, 2, 128)),
                                                                 "cache_seqlens": 250}),
            ("rotary_cos/sin without k and v", {"rotary_cos": T((256, 32), "float32"),
                                                "rotary_sin": T((256, 32), "float32")}),
            ("rotary_cos and rotary_sin come together: rotary_sin is None", {"k": new, "v": new,
                                                                             "rotary_cos": T((256, 32), "float32")}),
            ("must have one shape", {"k": new, "v": new, "rotary_cos": T((256, 32), "float32"),
                                     "rotary_sin": T((255, 32), "float32")}),
            ("rotary_cos is int32", {"k": new, "v": new, "rotary_cos": T((256, 32), "int32"),
                                     "rotary_sin": T((256, 32), "int32")}),
            ("0 < rotary_dim <= head_dim 128", {"k": new, "v": new, "rotary_cos": T((256, 80), "float32"),
                                                "rotary_sin": T((256, 80), "float32")}),
            ("rotary_cos must be [seqlen_ro, rotary_dim / 2]", {"k": new, "v": new, "rotary_cos": T((256,), "float32"),
                                                               "rotary_sin": T((256,), "float32")}),
            ("softmax_scale is 0", {"softmax_scale": 0}),
            ("softmax_scale is -0.5", {"softmax_scale": -0.5}),
            ("softmax_scale is nan", {"softmax_scale": float("nan")}),
            ("softmax_scale must be a number", {"softmax_scale": "0.1"}),
            ("no sliding window", {"window_size": (128, 0)}),
            ("window_size left is -2", {"window_size": (-2, 0)}),
            ("no softcap", {"softcap": 30.0}),
            ("num_splits is 129", {"num_splits": 129}),
            ("num_splits is -1", {"num_splits": -1}),
            ("num_splits is True", {"num_splits": True}),
            ("causal must be a bool", {"causal": 1}),
            ("rotary_interleaved must be a bool", {"rotary_interleaved": None})):
        kv_rejects(words, **over)
    # contiguous: a batch larger than the cache needs cache_batch_idx; the index must be int32 [batch]
    for words, over in (("pass cache_batch_idx", {}),
                        ("cache_batch_idx must have shape (3,)", {"cache_batch_idx": T((2,), "int32")})):
        kv_rejects(words, page_table=None, k_cache=T((2, 64, 2, 128)), v_cache=T((2, 64, 2, 128)), **over)


# ---- with the built library ------------------------------------------------------------------------------
def real_library():
    try:
        return _abi.library()
    except _abi.LibraryNotFoundError as e:
        raise Skip("no libflashptx.so here (%s)" % str(e).split("\n")[0])


def params(head_dim=128, heads=(8, 8)):
    fake = 1 << 20
    s, d = 256, head_dim
    return _abi.fwd_params({n: fake for n in ("q", "k", "v", "o")}, (2, s, heads[0], d), (2, s, heads[1], d),
                           {"q": (s * heads[0] * d, heads[0] * d, d), "k": (s * heads[1] * d, heads[1] * d, d),
                            "v": (s * heads[1] * d, heads[1] * d, d), "o": (s * heads[0] * d, heads[0] * d, d)},
                           _abi.FLASHPTX_BF16, True, 0.0)


def bparams(head_dim):
    fake = 1 << 20
    s, h, d = 256, 8, head_dim
    st = (s * h * d, h * d, d)
    return _abi.bwd_params({n: fake for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv")},
                           (2, s, h, d), (2, s, h, d), {n: st for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv")},
                           _abi.FLASHPTX_BF16, True, 0.0, True)


@case
def library_status_names_match():
    lib = real_library()
    for code, name in _abi.STATUS_NAMES.items():
        assert lib.flashptx_status_name(code).decode() == name, (code, name)


@case
def library_validation_comes_back_as_value_errors():
    lib = real_library()
    _abi.check(lib, "flashptx_fwd_check", lib.flashptx_fwd_check(ctypes.byref(params())))
    # head dims 96 and 192 pass the forward's validation, and (192, 128) through head_dim_v
    for d in (96, 192):
        _abi.check(lib, "flashptx_fwd_check", lib.flashptx_fwd_check(ctypes.byref(params(head_dim=d))))
    split = params(head_dim=192)
    split.head_dim_v = 128
    _abi.check(lib, "flashptx_fwd_check", lib.flashptx_fwd_check(ctypes.byref(split)))
    bad_split = params(head_dim=128)
    bad_split.head_dim_v = 64
    for p, status, words in ((params(head_dim=80), "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM", "(80, 80)"),
                             (bad_split, "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM", "(128, 64)"),
                             (params(heads=(8, 3)), "FLASHPTX_ERR_BAD_HEADS", "heads_q (8)")):
        try:
            _abi.check(lib, "flashptx_fwd_check", lib.flashptx_fwd_check(ctypes.byref(p)))
        except _abi.FlashptxValueError as e:
            assert isinstance(e, ValueError) and e.status_name == status and words in str(e), str(e)
        else:
            raise AssertionError("accepted: " + status)
    need = ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_workspace_size", lib.flashptx_bwd_workspace_size(ctypes.byref(bparams(128)),
                                                                                     ctypes.byref(need)))
    assert need.value > 0, need.value
    # head_dim 256 has a backward too (and 96, 192 on the d128, d256 kernels); 80 is refused with the
    # library's status and words
    need256 = ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_workspace_size",
               lib.flashptx_bwd_workspace_size(ctypes.byref(bparams(256)), ctypes.byref(need256)))
    assert need256.value > need.value, (need256.value, need.value)
    try:
        _abi.check(lib, "flashptx_bwd_workspace_size",
                   lib.flashptx_bwd_workspace_size(ctypes.byref(bparams(80)), ctypes.byref(need)))
    except _abi.FlashptxValueError as e:
        assert e.status_name == "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" and "backward" in str(e), str(e)
    else:
        raise AssertionError("the d80 backward was accepted")
    # 96 has a backward now, on the d128 kernels: its workspace is the d128 one or more
    need96 = ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_workspace_size",
               lib.flashptx_bwd_workspace_size(ctypes.byref(bparams(96)), ctypes.byref(need96)))
    assert need96.value > 0, need96.value
    # (192, 128) through head_dim_v (V's, O's, dO's and dV's strides at 128 columns): the d256
    # kernels' workspace, the (192, 192) one; other pairs refused with the pair in the words
    def bsplit(dq, dv):
        p = bparams(dq)
        p.head_dim_v = dv
        s, h = 256, 8
        for n in ("v", "o", "do", "dv"):
            setattr(p, n + "_batch_stride", s * h * dv)
            setattr(p, n + "_row_stride", h * dv)
            setattr(p, n + "_head_stride", dv)
        return p
    need_split, need192 = ctypes.c_int64(0), ctypes.c_int64(0)
    _abi.check(lib, "flashptx_bwd_workspace_size",
               lib.flashptx_bwd_workspace_size(ctypes.byref(bsplit(192, 128)), ctypes.byref(need_split)))
    _abi.check(lib, "flashptx_bwd_workspace_size",
               lib.flashptx_bwd_workspace_size(ctypes.byref(bparams(192)), ctypes.byref(need192)))
    assert need_split.value == need192.value > 0, (need_split.value, need192.value)
    need = ctypes.c_int64(0)
    for dq, dv in ((192, 64), (128, 192)):
        try:
            _abi.check(lib, "flashptx_bwd_workspace_size",
                       lib.flashptx_bwd_workspace_size(ctypes.byref(bsplit(dq, dv)), ctypes.byref(need)))
        except _abi.FlashptxValueError as e:
            assert e.status_name == "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" and "(%d, %d)" % (dq, dv) in str(e), str(e)
        else:
            raise AssertionError("the (%d, %d) backward was accepted" % (dq, dv))


@case
def library_varlen_validation_names_the_bad_entry():
    lib = real_library()
    fake, h, d = 1 << 20, 8, 128
    def vparams(cu_q, cu_k):
        p = _abi.FwdVarlenParams()
        p.q = p.k = p.v = p.o = fake
        p.cu_seqlens_q = ctypes.cast(cu_q, ctypes.c_void_p)
        p.cu_seqlens_k = ctypes.cast(cu_k, ctypes.c_void_p)
        p.num_seqs = len(cu_q) - 1
        p.total_q, p.total_k = cu_q[-1], cu_k[-1]
        p.max_seqlen_q = max(b - a for a, b in zip(cu_q[:-1], cu_q[1:]))
        p.max_seqlen_k = max(b - a for a, b in zip(cu_k[:-1], cu_k[1:]))
        p.heads_q = p.heads_kv = h
        p.head_dim = d
        p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = h * d
        p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = d
        p.dtype, p.causal = _abi.FLASHPTX_BF16, 1
        return p
    arr = lambda *x: (ctypes.c_int32 * len(x))(*x)
    good_q, good_k = arr(0, 100, 100, 137), arr(0, 120, 125, 125)
    _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(vparams(good_q, good_k))))
    bad_q = arr(0, 100, 90, 137)
    p = vparams(good_q, good_k)
    p.cu_seqlens_q = ctypes.cast(bad_q, ctypes.c_void_p)
    try:
        _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(p)))
    except _abi.FlashptxValueError as e:
        assert e.status_name == "FLASHPTX_ERR_BAD_CU_SEQLENS" and "decreases at entry 2" in str(e), str(e)
    else:
        raise AssertionError("a decreasing cu_seqlens_q was accepted")
    # head dims 96 and 192, and (192, 128) through head_dim_v (V's and O's strides at 128 columns),
    # pass the varlen forward's validation; (128, 64) is the library's UNSUPPORTED_HEAD_DIM
    for dd in (96, 192):
        p = vparams(good_q, good_k)
        p.head_dim = dd
        p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = h * dd
        p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = dd
        _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(p)))
        if dd == 192:
            p.head_dim_v = 128
            p.v_row_stride = p.o_row_stride = h * 128
            p.v_head_stride = p.o_head_stride = 128
            _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(p)))
    p = vparams(good_q, good_k)
    p.head_dim_v = 64
    try:
        _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(p)))
    except _abi.FlashptxValueError as e:
        assert e.status_name == "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" and "(128, 64)" in str(e), str(e)
    else:
        raise AssertionError("(128, 64) was accepted by the varlen forward")


def varlen_args(**over):
    """check_varlen's arguments of a valid packed batch (3 sequences, GQA 8/2, d128), with overrides."""
    a = dict(q=T((137, 8, 128), stride=(1024, 128, 1)), k=T((125, 2, 128), stride=(256, 128, 1)),
             v=T((125, 2, 128), stride=(256, 128, 1)), cu_seqlens_q=[0, 100, 100, 137], cu_seqlens_k=[0, 120, 125, 125],
             max_seqlen_q=100, max_seqlen_k=120)
    a.update(over)
    return a


@case
def varlen_arguments_are_checked_before_any_call():
    """flashptx.attention_varlen's checks (torch-free: tensors as TensorSpec, cu_seqlens and seqused as
    the host values the torch layer copies out): valid batches give the C struct's sizes; each bad
    value is a ValueError naming it."""
    a = _abi.check_varlen("t", **varlen_args())
    assert (a["num_seqs"], a["total_q"], a["total_k"], a["heads_q"], a["heads_kv"], a["head_dim"]) == \
        (3, 137, 125, 8, 2, 128), a
    assert (a["softmax_scale"], a["window"], a["softcap"]) == (0.0, None, 0.0), a
    ok = _abi.check_varlen("t", **varlen_args(seqused_q=[0, 0, 37], seqused_k=[120, 5, 0], softmax_scale=0.1,
                                              window_size=(16, 0), softcap=30.0, causal=True))
    assert (ok["window"], ok["softcap"]) == ((16, 0), 30.0), ok
    assert a["head_dim_v"] == 128, a
    # v's own head dim (the (192, 128) split): passed on as head_dim_v, its pair checked by the library
    split = _abi.check_varlen("t", **varlen_args(q=T((137, 8, 192)), k=T((125, 2, 192)), v=T((125, 2, 128))))
    assert (split["head_dim"], split["head_dim_v"]) == (192, 128), split
    bad = [
        (dict(seqused_q=[0, 1, 37]), "seqused_q[1] is 1: a used length is 0 to the sequence's length 0"),
        (dict(seqused_q=[-1, 0, 0]), "seqused_q[0] is -1"),
        (dict(seqused_k=[121, 0, 0]), "seqused_k[0] is 121"),
        (dict(seqused_k=[1, 2]), "seqused_k has 2 entries for 3 sequences"),
        (dict(seqused_q=[1.5, 0, 0]), "seqused_q must be int32 values"),
        (dict(cu_seqlens_q=[0, 100, 90, 137]), "cu_seqlens_q decreases at entry 2"),
        (dict(cu_seqlens_q=[1, 100, 100, 137]), "cu_seqlens_q must start at 0"),
        (dict(cu_seqlens_k=[0, 120, 125, 126]), "cu_seqlens_k ends at 126, not at k.shape[0] (125)"),
        (dict(cu_seqlens_k=[0, 120, 125]), "cu_seqlens_q has 3 sequences, cu_seqlens_k 2"),
        (dict(max_seqlen_q=99), "max_seqlen_q 99 is below the longest sequence (100)"),
        (dict(max_seqlen_k=120.0), "max_seqlen_k must be an int"),
        (dict(q=T((2, 137, 8, 128))), "q must be [total, heads, head_dim]"),
        (dict(k=T((125, 3, 128)), v=T((125, 3, 128))), "heads_q 8 must be a multiple of heads_kv 3"),
        (dict(v=T((125, 3, 128))), "must share total_k and heads_kv"),
        (dict(v=T((124, 2, 128))), "must share total_k and heads_kv"),
        (dict(k=T((125, 2, 128), "float16"), v=T((125, 2, 128), "float16")), "q, k and v must share one dtype"),
        (dict(q=T((137, 8, 128), "float32"), k=T((125, 2, 128), "float32"), v=T((125, 2, 128), "float32")),
         "bfloat16 or float16"),
        (dict(k=T((125, 2, 128), device="cuda:1")), "every tensor must be on q's device"),
        (dict(softmax_scale=-1.0), "softmax_scale is -1.0"),
        (dict(causal=1), "causal must be a bool"),
        (dict(window_size=(-2, 0)), "window_size left is -2"),
        (dict(softcap=float("nan")), "softcap is nan"),
    ]
    for over, words in bad:
        try:
            _abi.check_varlen("flashptx.attention_varlen", **varlen_args(**over))
        except ValueError as e:
            assert words in str(e) and str(e).startswith("flashptx.attention_varlen: "), (words, str(e))
        else:
            raise AssertionError("accepted: %r" % (over,))


@case
def library_varlen_backward_and_seqused_validation():
    """The structs attention_varlen builds (fwd_varlen_params, bwd_varlen_params), through the library's
    own checks (no GPU needed): accepted as built, with seqused too; a used length past its sequence is
    FlashptxValueError (FLASHPTX_ERR_BAD_SHAPE) naming the entry; the backward's workspace size; the
    backward's window and softcap accepted, bad bounds and softcaps refused with their statuses."""
    lib = real_library()
    fake = 1 << 20
    arr = lambda *x: (ctypes.c_int32 * len(x))(*x)
    cu_q, cu_k = arr(0, 100, 100, 137), arr(0, 120, 125, 125)
    a = _abi.check_varlen("t", **varlen_args())
    addr = lambda x: ctypes.cast(x, ctypes.c_void_p).value
    ptrs = {n: fake for n in ("q", "k", "v", "o", "lse", "dout", "dq", "dk", "dv")}
    ptrs.update(cu_seqlens_q=addr(cu_q), cu_seqlens_k=addr(cu_k))
    st = {"q": (1024, 128), "o": (1024, 128), "do": (1024, 128), "dq": (1024, 128),
          "k": (256, 128), "v": (256, 128), "dk": (256, 128), "dv": (256, 128)}
    f = _abi.fwd_varlen_params(ptrs, a, st, _abi.FLASHPTX_BF16, True)
    fchk = lambda p: _abi.check(lib, "flashptx_fwd_varlen_check", lib.flashptx_fwd_varlen_check(ctypes.byref(p)))
    bchk = lambda p: _abi.check(lib, "flashptx_bwd_varlen_check", lib.flashptx_bwd_varlen_check(ctypes.byref(p)))
    fchk(f)
    b = _abi.bwd_varlen_params(ptrs, a, st, _abi.FLASHPTX_BF16, True, True)
    need = ctypes.c_int64(-1)
    _abi.check(lib, "flashptx_bwd_varlen_workspace_size",
               lib.flashptx_bwd_varlen_workspace_size(ctypes.byref(b), ctypes.byref(need)))
    assert need.value > 0, need.value
    b.workspace, b.workspace_bytes = fake, need.value
    bchk(b)
    good_q, good_k, bad_k = arr(0, 0, 37), arr(120, 1, 0), arr(0, 6, 0)
    for p, chk in ((f, fchk), (b, bchk)):
        p.seqused_q, p.seqused_k = addr(good_q), addr(good_k)
        chk(p)
        p.seqused_k = addr(bad_k)
        try:
            chk(p)
        except _abi.FlashptxValueError as e:
            assert e.status_name == "FLASHPTX_ERR_BAD_SHAPE" and "seqused_k[1] is 6, above sequence 1's length 5" in \
                str(e), str(e)
        else:
            raise AssertionError("a used length past its sequence was accepted")
    b.seqused_q = b.seqused_k = None
    # A window and a softcap: the local varlen kernels take them (accepted as built); a bound below -1
    # and a negative softcap keep their statuses.
    b.window, b.window_left, b.window_right = 1, 16, 0
    b.softcap = 10.0
    bchk(b)
    for field, value, status in (("window_left", -2, "FLASHPTX_ERR_BAD_WINDOW"), ("softcap", -1.0, "FLASHPTX_ERR_BAD_SOFTCAP")):
        old = getattr(b, field)
        setattr(b, field, value)
        try:
            bchk(b)
        except _abi.FlashptxValueError as e:
            assert e.status_name == status, str(e)
        else:
            raise AssertionError("the varlen backward took %s %r" % (field, value))
        setattr(b, field, old)
    # Head dims 96 and 192 (the d128 and d256 varlen kernels over zero columns): accepted, the workspace
    # that of the kernel's head dim (d96's the d128 one); 80 is UNSUPPORTED_HEAD_DIM naming the dims.
    b.window = b.window_left = b.window_right = 0
    b.softcap = 0.0
    sizes = {}
    b.head_dim_v = 0  # V's head dim: q's
    for dd in (96, 128, 192, 256, 80):
        b.head_dim = dd
        b.q_row_stride = b.o_row_stride = b.do_row_stride = b.dq_row_stride = 8 * dd
        b.k_row_stride = b.v_row_stride = b.dk_row_stride = b.dv_row_stride = 2 * dd
        for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv"):
            setattr(b, n + "_head_stride", dd)
        need = ctypes.c_int64(-1)
        try:
            _abi.check(lib, "flashptx_bwd_varlen_workspace_size",
                       lib.flashptx_bwd_varlen_workspace_size(ctypes.byref(b), ctypes.byref(need)))
        except _abi.FlashptxValueError as e:
            assert dd == 80 and e.status_name == "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" and \
                "64, 96, 128, 192, 256" in str(e), str(e)
            continue
        assert dd != 80, "the varlen backward took head_dim 80"
        sizes[dd] = need.value
        b.workspace_bytes = need.value
        bchk(b)
    assert sizes[96] == sizes[128] and sizes[192] == sizes[256], sizes
    # (192, 128) through head_dim_v: V's, O's, dO's and dV's strides at 128 columns, the d256 kernel's
    # workspace; (192, 64) refused naming the pair
    b.head_dim, b.head_dim_v = 192, 128
    b.q_row_stride = b.dq_row_stride = 8 * 192
    b.o_row_stride = b.do_row_stride = 8 * 128
    b.k_row_stride = b.dk_row_stride = 2 * 192
    b.v_row_stride = b.dv_row_stride = 2 * 128
    for n in ("q", "k", "dq", "dk"):
        setattr(b, n + "_head_stride", 192)
    for n in ("v", "o", "do", "dv"):
        setattr(b, n + "_head_stride", 128)
    need = ctypes.c_int64(-1)
    _abi.check(lib, "flashptx_bwd_varlen_workspace_size",
               lib.flashptx_bwd_varlen_workspace_size(ctypes.byref(b), ctypes.byref(need)))
    assert need.value == sizes[192], (need.value, sizes)
    b.workspace_bytes = need.value
    bchk(b)
    b.head_dim_v = 64
    try:
        bchk(b)
        raise AssertionError("the varlen backward took (192, 64)")
    except _abi.FlashptxValueError as e:
        assert e.status_name == "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM" and "(192, 64)" in str(e), str(e)
    b.head_dim_v = 0


def kv_struct(a, **over):
    """A KvcacheParams of check_kvcache's dict `a` over placeholder pointers (never dereferenced:
    only the checks run), contiguous strides."""
    fake = 1 << 20
    b, sq, hq, hk, d = a["batch"], a["seqlen_q"], a["heads_q"], a["heads_kv"], a["head_dim"]
    ptrs = {n: fake for n in ("q", "k_cache", "v_cache", "o", "lse", "cache_seqlens")}
    if a["paged"]:
        ptrs["page_table"] = fake
    strides = {"q": (sq * hq * d, hq * d, d), "o": (sq * hq * d, hq * d, d),
               "k": (a["cache_seqlen"] * hk * d, hk * d, d), "v": (a["cache_seqlen"] * hk * d, hk * d, d)}
    if a["seqlen_new"]:
        ptrs["k_new"] = ptrs["v_new"] = fake
        strides["k_new"] = strides["v_new"] = (a["seqlen_new"] * hk * d, hk * d, d)
    if a["rotary_dim"]:
        ptrs["rotary_cos"] = ptrs["rotary_sin"] = fake
    p = _abi.kvcache_params(ptrs, a, strides, _abi.FLASHPTX_BF16, True, over.pop("num_splits", 1), False)
    for n, x in over.items():
        setattr(p, n, x)
    return p


@case
def library_kvcache_validation_comes_back_as_value_errors():
    """The struct attention_with_kvcache builds, through the library's own checks (no GPU needed):
    accepted as built; the library's refusals (head dim, page size, rotary dim, the workspace) are
    FlashptxValueError with its words; the workspace size of a forced split count needs no device."""
    lib = real_library()
    chk = lambda p: _abi.check(lib, "flashptx_fwd_kvcache_check", lib.flashptx_fwd_kvcache_check(ctypes.byref(p)))
    paged = _abi.check_kvcache("t", **kv_args())
    chk(kv_struct(paged))
    new = T((3, 2, 2, 128))
    rot = _abi.check_kvcache("t", **kv_args(k=new, v=new, rotary_cos=T((256, 32), "float32"),
                                            rotary_sin=T((256, 32), "float32")))
    need = ctypes.c_int64(-1)
    p = kv_struct(rot, num_splits=3)
    _abi.check(lib, "flashptx_fwd_kvcache_workspace_size",
               lib.flashptx_fwd_kvcache_workspace_size(ctypes.byref(p), ctypes.byref(need)))
    assert need.value > 0, need.value
    p.workspace, p.workspace_bytes = 1 << 20, need.value
    chk(p)
    for d in (64, 256):  # the head dims beside 128 (their own kernels)
        chk(kv_struct(_abi.check_kvcache("t", **kv_args(q=T((3, 1, 8, d)), k_cache=T((20, 64, 2, d)),
                                                        v_cache=T((20, 64, 2, d))))))
    p.workspace_bytes = need.value - 1
    for p, status, words in (
            (p, "FLASHPTX_ERR_WORKSPACE", "workspace"),
            (kv_struct(_abi.check_kvcache("t", **kv_args(q=T((3, 1, 8, 96)), k_cache=T((20, 64, 2, 96)),
                                                         v_cache=T((20, 64, 2, 96))))),
             "FLASHPTX_ERR_UNSUPPORTED_HEAD_DIM", "head_dim 96: the KV-cache forward has head_dim 64, 128 or 256"),
            (kv_struct(_abi.check_kvcache("t", **kv_args(k_cache=T((20, 48, 2, 128)), v_cache=T((20, 48, 2, 128))))),
             "FLASHPTX_ERR_UNSUPPORTED", "page_size 48"),
            (kv_struct(_abi.check_kvcache("t", **kv_args(k=new, v=new, rotary_cos=T((256, 12), "float32"),
                                                         rotary_sin=T((256, 12), "float32")))),
             "FLASHPTX_ERR_BAD_SHAPE", "rotary_dim 24"),
            (kv_struct(paged, k_row_stride=2 * 128 + 3), "FLASHPTX_ERR_MISALIGNED", "k_cache row stride 259")):
        try:
            chk(p)
        except _abi.FlashptxValueError as e:
            assert isinstance(e, ValueError) and e.status_name == status and words in str(e), (status, str(e))
        else:
            raise AssertionError("accepted: " + status)
    # num_splits 0: the plan's choice needs the device (here: none, a RuntimeError), or the GPU's answer
    ok, _ = _abi.probe_device(lib)
    n = ctypes.c_int(-1)
    st = lib.flashptx_fwd_kvcache_num_splits(ctypes.byref(kv_struct(paged, num_splits=0)), ctypes.byref(n))
    if ok:
        assert st == 0 and 1 <= n.value <= _abi.KVCACHE_MAX_SPLITS, (st, n.value)
    else:
        assert _abi.STATUS_NAMES[st] == "FLASHPTX_ERR_UNSUPPORTED_DEVICE", st


@case
def device_probe_says_why():
    lib = real_library()
    ok, why = _abi.probe_device(lib)
    assert why, "the probe gave no words"
    if ok:
        return  # a machine with an sm_90 GPU: nothing more to say here (tests/test_gpu.py runs there)
    assert why.startswith("FLASHPTX_ERR_UNSUPPORTED_DEVICE: "), why
    assert _abi.available() is False
    assert why in _abi.unavailable_reason(), (why, _abi.unavailable_reason())
    p = params()
    info = _abi.KernelInfo()
    st = lib.flashptx_fwd_kernel_info(ctypes.byref(p), ctypes.byref(info))
    try:
        _abi.check(lib, "flashptx_fwd_kernel_info", st)
    except _abi.FlashptxRuntimeError as e:
        assert isinstance(e, RuntimeError) and not isinstance(e, ValueError) and e.status == 9, str(e)
    else:
        raise AssertionError("no device, yet kernel_info succeeded")
    print("      (no GPU here, as the library says: %s)" % why)


@case
def library_version_and_the_sm100_opt_in():
    lib = real_library()
    with open(os.path.join(REPO, "VERSION")) as f:
        want = f.read().strip()
    assert _abi.version() == want, (_abi.version(), want)
    major, minor, patch = (int(x) for x in want.split("."))
    assert lib.flashptx_version_number() == major * 10000 + minor * 100 + patch
    out = run_python("import flashptx; print(flashptx.__version__)")
    assert out.strip() == want, out
    assert _abi.unverified_sm100_allowed() is False
    try:
        _abi.allow_unverified_sm100(True)
        assert _abi.unverified_sm100_allowed() is True
    finally:
        _abi.allow_unverified_sm100(False)
    assert _abi.unverified_sm100_allowed() is False
    st = lib.flashptx_set_option(_abi.FLASHPTX_OPT_ALLOW_UNVERIFIED_SM100, 2)
    msg = lib.flashptx_last_error().decode()
    assert _abi.STATUS_NAMES[st] == "FLASHPTX_ERR_BAD_OPTION" and "takes 0 or 1, not 2" in msg, (st, msg)
    assert _abi.unverified_sm100_allowed() is False  # a refused value changes nothing


@case
def installs_outside_the_tree_carrying_its_library():
    """pip install --target DIR tools/python (no index, no build isolation: the backend needs
    nothing), then from another folder, with PYTHONPATH=DIR alone and no FLASHPTX_LIB, the package
    imports from DIR and loads the library inside DIR."""
    lib = real_library()
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        raise Skip("no pip for %s" % sys.executable)
    tmp = tempfile.mkdtemp(prefix="flashptx-pip-")
    try:
        target, away = os.path.join(tmp, "site"), os.path.join(tmp, "elsewhere")
        os.makedirs(away)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FLASHPTX_LIB")}
        env["FLASHPTX_LIB"] = lib._flashptx_path  # the build to carry: the one these tests load
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
                            "--no-build-isolation", "--disable-pip-version-check", "--target", target, PKG_PARENT],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, "pip install --target failed:\n%s%s" % (r.stdout, r.stderr)
        carried = os.path.join(target, "flashptx", "libflashptx.so")
        assert os.path.isfile(carried), os.listdir(os.path.join(target, "flashptx"))
        with open(carried, "rb") as a, open(lib._flashptx_path, "rb") as b:
            assert a.read() == b.read(), "the carried library differs from the build's"
        del env["FLASHPTX_LIB"]
        env["PYTHONPATH"] = target
        code = ("import os, flashptx; print(flashptx.__file__); print(flashptx.library_path()); "
                "print(flashptx.__version__); print(flashptx.available())")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=away, timeout=120)
        assert r.returncode == 0, "import from the target failed:\n%s%s" % (r.stdout, r.stderr)
        pkg_file, path, version, _ = r.stdout.strip().split("\n")
        inside = lambda p: os.path.realpath(p).startswith(os.path.realpath(target) + os.sep)
        assert inside(pkg_file), "imported %s, not the installed copy in %s" % (pkg_file, target)
        assert inside(path), "loaded %s, not the library inside %s" % (path, target)
        assert version == _abi.version(), (version, _abi.version())
        dist = [d for d in os.listdir(target) if d.endswith(".dist-info")]
        assert dist == ["flashptx-%s.dist-info" % version], dist
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    for fn in CASES:
        name = fn.__name__
        try:
            fn()
            RESULTS.append((name, "ok", ""))
        except Skip as e:
            RESULTS.append((name, "skip", str(e)))
        except Exception:  # noqa: BLE001 - report every failure, run every case
            RESULTS.append((name, "FAIL", traceback.format_exc()))
        status, detail = RESULTS[-1][1], RESULTS[-1][2]
        print("%-4s %s%s" % (status, name, (": " + detail.rstrip()) if detail else ""), flush=True)
    n = {s: sum(1 for r in RESULTS if r[1] == s) for s in ("ok", "FAIL", "skip")}
    print("%d passed, %d failed, %d skipped" % (n["ok"], n["FAIL"], n["skip"]))
    return 1 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
