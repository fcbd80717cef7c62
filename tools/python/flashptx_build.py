"""The build backend of the flashptx Python package (PEP 517 and PEP 660; pyproject.toml names it).

It needs nothing but the standard library. The wheel holds the package's Python files and the
libflashptx.so that `make` built, as package data: flashptx/libflashptx.so, which the package loads
first (flashptx/_abi.py, candidates()). The wheel is named by the library's own version
(flashptx_version(); in the source tree it must equal the VERSION file at the repository root),
and tagged py3-none-<platform>: pure Python for any Python 3, one binary for one platform.

The library is taken from, in this order: $FLASHPTX_LIB (a file, or a folder holding
libflashptx.so), flashptx/libflashptx.so beside this file (an sdist carries it there), the
repository root two folders up (the source tree after `make`).

    pip install tools/python            a wheel, installed (also: --target DIR, pip wheel tools/python)
    pip install -e tools/python         editable: the package in the tree, loading the tree's library
"""
import base64
import ctypes
import hashlib
import io
import os
import sysconfig
import tarfile
import zipfile

NAME = "flashptx"
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, NAME)
LIB_NAME = "libflashptx.so"
SUMMARY = ("FlashAttention-3 (Hopper, sm_90) and FlashAttention-4 (Blackwell, sm_100) kernels written in PTX, "
           "from PyTorch, over libflashptx.so's C ABI")


class BuildError(RuntimeError):
    pass


# ---- what goes in ---------------------------------------------------------------------------------
def library_path():
    """The libflashptx.so to carry, or BuildError saying where it was looked for."""
    looked = []
    explicit = os.environ.get("FLASHPTX_LIB", "")
    if explicit:
        path = os.path.join(explicit, LIB_NAME) if os.path.isdir(explicit) else explicit
        if os.path.isfile(path):
            return path
        raise BuildError("flashptx build: $FLASHPTX_LIB is %s, which is no file" % path)
    for path in (os.path.join(PACKAGE, LIB_NAME), os.path.join(HERE, "..", "..", LIB_NAME)):
        path = os.path.abspath(path)
        if os.path.isfile(path):
            return path
        looked.append(path)
    raise BuildError("flashptx build: no %s to put in the package (looked at %s). Build it with `make` at the "
                     "repository root, or set FLASHPTX_LIB to a built one." % (LIB_NAME, ", ".join(looked)))


def library_version(path):
    """flashptx_version() of the library at `path`, checked against the VERSION file when there is one."""
    try:
        lib = ctypes.CDLL(path)
        fn = lib.flashptx_version
    except (OSError, AttributeError) as e:
        raise BuildError("flashptx build: %s has no flashptx_version() (%s): rebuild it with `make`" % (path, e))
    fn.restype, fn.argtypes = ctypes.c_char_p, []
    version = fn().decode()
    root = os.path.join(HERE, "..", "..")
    version_file = os.path.join(root, "VERSION")
    if os.path.isfile(os.path.join(root, "include", "flashptx.h")) and os.path.isfile(version_file):
        with open(version_file) as f:
            want = f.read().strip()
        if want != version:
            raise BuildError("flashptx build: %s is version %s but VERSION says %s: rebuild it with `make`"
                             % (path, version, want))
    return version


def python_files():
    """{path in the wheel: path on disk} of the package's modules."""
    return {NAME + "/" + f: os.path.join(PACKAGE, f) for f in sorted(os.listdir(PACKAGE)) if f.endswith(".py")}


def metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: BSD-3-Clause\n"
            "Requires-Python: >=3.9\nProvides-Extra: torch\nRequires-Dist: torch>=2.4; extra == \"torch\"\n"
            % (NAME, version, SUMMARY))


def platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


# ---- the wheel ------------------------------------------------------------------------------------
def write_wheel(wheel_directory, version, files):
    """A wheel of `files` ({path in the wheel: bytes}) plus its .dist-info; returns its file name."""
    tag = "py3-none-" + platform_tag()
    dist_info = "%s-%s.dist-info" % (NAME, version)
    files = dict(files)
    files[dist_info + "/METADATA"] = metadata(version).encode()
    files[dist_info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: flashptx_build\nRoot-Is-Purelib: false\nTag: %s\n"
                                   % tag).encode()
    files[dist_info + "/top_level.txt"] = (NAME + "\n").encode()
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append(dist_info + "/RECORD,,")
    files[dist_info + "/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = "%s-%s-%s.whl" % (NAME, version, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return wheel_name


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 / PEP 660 hooks ----------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = library_path()
    files = {name: read(path) for name, path in python_files().items()}
    files[NAME + "/" + LIB_NAME] = read(lib)
    return write_wheel(wheel_directory, library_version(lib), files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding one .pth line, this folder: `import flashptx` then imports the package in the
    tree, which loads the tree's library (the build tree, or $FLASHPTX_LIB)."""
    lib = library_path()
    return write_wheel(wheel_directory, library_version(lib), {NAME + ".pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    """The package's source with the library in it (flashptx/libflashptx.so), so that a wheel built
    from the sdist carries the same library."""
    lib = library_path()
    version = library_version(lib)
    base = "%s-%s" % (NAME, version)
    members = {"pyproject.toml": read(os.path.join(HERE, "pyproject.toml")),
               "flashptx_build.py": read(os.path.abspath(__file__)),
               "PKG-INFO": metadata(version).encode()}
    members.update({name: read(path) for name, path in python_files().items()})
    members[NAME + "/" + LIB_NAME] = read(lib)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for member, data in members.items():
            info = tarfile.TarInfo(base + "/" + member)
            info.size, info.mode = len(data), 0o755 if member.endswith(".so") else 0o644
            t.addfile(info, io.BytesIO(data))
    return name
