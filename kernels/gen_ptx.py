#!/usr/bin/env python3
"""Compile graphcore's built-in kernels (kernels/*.cu) to PTX with NVRTC.

Each kernels/*.cu becomes kernels/ptx/<stem>.ptx; the kernels/*.cuh files are
passed to NVRTC as in-memory headers (include them as "common.cuh").

    python3 kernels/gen_ptx.py            # (re)write kernels/ptx/<stem>.ptx
    python3 kernels/gen_ptx.py --check    # regenerate into a temp dir, compare,
                                          # exit 1 with a summary on any difference

The PTX is committed; the Rust crate embeds it. NVRTC 12.0 is used on purpose:
`--gpu-architecture=compute_75` then gives PTX ISA 8.0, which every driver
from CUDA 12.0 on can JIT for every GPU from sm_75 on. NVRTC needs no GPU.
A source that needs a newer target says so in a line of its own,
`// gen_ptx: compute_80` (linear_tf32.cu: mma.sync with TF32 operands); the
kernel table then loads that module only on GPUs of that capability.

Every source is also compiled for `compute_90` into kernels/ptx/sm90/<stem>.ptx:
there GC_PDL_WAIT / GC_PDL_TRIGGER (common.cuh) are griddepcontrol
instructions (programmatic dependent launch); the kernel table loads these
variants on GPUs of compute capability 9.0 and later.

Where NVRTC comes from (first found wins):
  1. the environment variable NVRTC_LIB (path to libnvrtc.so.12);
  2. `nvidia/cuda_nvrtc/lib/libnvrtc.so.12` in any sys.path entry
     (the PyPI wheel `nvidia-cuda-nvrtc-cu12==12.0.76`);
  3. `.nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12` at the repository root
     (the same wheel unzipped into that git-ignored folder).
"""

import argparse
import ctypes
import difflib
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PTX_DIR = HERE / "ptx"
# The compute_90 variants, as kernels/ptx/<SM90_DIR>/<stem>.ptx.
SM90_DIR = "sm90"
SM90_TARGET = "compute_90"
WANTED_VERSION = (12, 0)
OPTIONS = [
    "--gpu-architecture=compute_75",
    "-default-device",
    "--std=c++17",
]

INSTALL_HINT = """\
NVRTC 12.0 (libnvrtc.so.12) was not found. Install it without a GPU or CUDA toolkit:
    pip install nvidia-cuda-nvrtc-cu12==12.0.76
or unzip that wheel into <repo>/.nvrtc (git-ignored):
    pip download --no-deps nvidia-cuda-nvrtc-cu12==12.0.76 -d /tmp/nvrtc
    unzip -o /tmp/nvrtc/*.whl -d .nvrtc
or point NVRTC_LIB at a libnvrtc.so.12."""


def find_nvrtc():
    env = os.environ.get("NVRTC_LIB")
    if env:
        return Path(env)
    rel = Path("nvidia") / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"
    for entry in sys.path:
        if entry and (Path(entry) / rel).is_file():
            return Path(entry) / rel
    local = REPO / ".nvrtc" / rel
    if local.is_file():
        return local
    return None


class Nvrtc:
    def __init__(self, path):
        self.lib = ctypes.CDLL(str(path))
        lib = self.lib
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._ok(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)

    def _ok(self, rc, what, log=""):
        if rc != 0:
            msg = self.lib.nvrtcGetErrorString(rc).decode()
            raise RuntimeError(f"{what} failed: {msg}\n{log}")

    def compile(self, source, name, headers, options=None, want_log=False):
        lib = self.lib
        prog = ctypes.c_void_p()
        names = sorted(headers)
        hdr_src = (ctypes.c_char_p * len(names))(*[headers[h].encode() for h in names])
        hdr_names = (ctypes.c_char_p * len(names))(*[h.encode() for h in names])
        self._ok(
            lib.nvrtcCreateProgram(
                ctypes.byref(prog), source.encode(), name.encode(), len(names), hdr_src, hdr_names
            ),
            "nvrtcCreateProgram",
        )
        try:
            options = OPTIONS if options is None else options
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = lib.nvrtcCompileProgram(prog, len(options), opts)
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors="replace").strip()
            self._ok(rc, f"compiling {name}", log)
            if want_log:
                return log
            if log:
                # Warnings are errors: the sources are meant to compile cleanly.
                raise RuntimeError(f"compiling {name} gave warnings:\n{log}")
            self._ok(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
            ptx = ctypes.create_string_buffer(size.value)
            self._ok(lib.nvrtcGetPTX(prog, ptx), "nvrtcGetPTX")
            return ptx.value.decode()
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(prog))


def target_of(src):
    """The PTX target of a source's main module: the one its `// gen_ptx:
    compute_XY` line names, else OPTIONS' (compute_75)."""
    m = re.search(r"^// gen_ptx: (compute_\d+)$", src, re.M)
    if m:
        return m.group(1)
    return next(o.split("=", 1)[1] for o in OPTIONS if o.startswith("--gpu-architecture="))


def options_for(target):
    """NVRTC options for one target: OPTIONS with its architecture."""
    return [f"--gpu-architecture={target}" if o.startswith("--gpu-architecture=") else o for o in OPTIONS]


def variants(cu, src):
    """(relative PTX path, target) of every module one source makes: its
    main module and its compute_90 variant."""
    return [(cu.stem + ".ptx", target_of(src)), (f"{SM90_DIR}/{cu.stem}.ptx", SM90_TARGET)]


def sources():
    return sorted(HERE.glob("*.cu"))


def headers():
    """Every kernels/*.cuh, handed to NVRTC in memory (no include paths)."""
    return {h.name: h.read_text(encoding="utf-8") for h in sorted(HERE.glob("*.cuh"))}


def stable(ptx):
    """PTX without NVVM's call-sequence numbers: comments (`// callseq 3,
    0`) counted across the compilations of one process, so they differ from
    run to run (control.cu calls cudaGraphSetConditional)."""
    return re.sub(r"// callseq \d+(, \d+)?", "// callseq", ptx)


def generate(nvrtc, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    hdrs = headers()
    for cu in sources():
        src = cu.read_text(encoding="utf-8")
        for rel, target in variants(cu, src):
            opts = options_for(target)
            ptx = stable(nvrtc.compile(src, cu.name, hdrs, opts))
            # NVVM has been seen to emit different (equivalent) PTX from run to
            # run for some code shapes; such output could never pass --check.
            for _ in range(2):
                if stable(nvrtc.compile(src, cu.name, hdrs, opts)) != ptx:
                    raise RuntimeError(
                        f"NVRTC output for {cu.name} ({target}) is not deterministic; change the "
                        "code shape (see gc_lds4 in common.cuh for one known cause)"
                    )
            if not ptx.endswith("\n"):
                ptx += "\n"
            dest = out_dir / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(ptx, encoding="utf-8")
            written.append(rel)
    return written


def committed():
    """Every committed PTX file, as a path relative to kernels/ptx/."""
    return sorted(p.relative_to(PTX_DIR).as_posix() for p in PTX_DIR.rglob("*.ptx"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument(
        "--stats",
        metavar="SM",
        help="print ptxas register / spill / shared-memory use per kernel for sm_SM "
        "(e.g. 90; compiles a cubin in memory, writes nothing)",
    )
    args = ap.parse_args()

    path = find_nvrtc()
    if path is None or not path.is_file():
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    nvrtc = Nvrtc(path)
    if nvrtc.version != WANTED_VERSION:
        print(
            f"warning: NVRTC {nvrtc.version[0]}.{nvrtc.version[1]} at {path}; the committed "
            f"PTX comes from {WANTED_VERSION[0]}.{WANTED_VERSION[1]} (nvidia-cuda-nvrtc-cu12==12.0.76)",
            file=sys.stderr,
        )

    if args.stats:
        opts = [f"--gpu-architecture=sm_{args.stats}", "-default-device", "--std=c++17",
                "--ptxas-options=-v"]
        hdrs = headers()
        for cu in sources():
            # A source that calls the device runtime (control.cu) leaves its
            # calls to the linker: compile it as relocatable device code.
            src = cu.read_text(encoding="utf-8")
            rdc = ["--relocatable-device-code=true"] if "cudaGraphSetConditional" in src else []
            log = nvrtc.compile(src, cu.name, hdrs, opts + rdc, want_log=True)
            entry = None
            for line in log.splitlines():
                if "Compiling entry function" in line:
                    entry = line.split("'")[1]
                elif entry and ("spill" in line or "Used" in line):
                    text = line.split(":", 1)[-1] if "info" in line else line.split(".", 1)[-1]
                    print(f"{entry:28} {text.strip()}")
        return 0

    if not args.check:
        names = generate(nvrtc, PTX_DIR)
        stale = [name for name in committed() if name not in names]
        for name in stale:
            (PTX_DIR / name).unlink()
        print(f"wrote {len(names)} PTX file(s) to {PTX_DIR.relative_to(REPO)}"
              + (f", removed {', '.join(stale)}" if stale else ""))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        names = generate(nvrtc, Path(tmp))
        problems = []
        for name in names:
            new = (Path(tmp) / name).read_text(encoding="utf-8")
            old_path = PTX_DIR / name
            if not old_path.is_file():
                problems.append(f"{name}: missing from kernels/ptx/")
                continue
            old = old_path.read_text(encoding="utf-8")
            if old != new:
                diff = list(
                    difflib.unified_diff(
                        old.splitlines(), new.splitlines(), "committed", "regenerated", lineterm="", n=0
                    )
                )
                changed = sum(1 for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---"))
                problems.append(f"{name}: {changed} line(s) differ; first lines:\n  "
                                + "\n  ".join(diff[2:12]))
        for name in committed():
            if name not in names:
                problems.append(f"{name}: no kernels/{Path(name).stem}.cu for it")
        if problems:
            print("PTX is out of date (run python3 kernels/gen_ptx.py):", file=sys.stderr)
            for p in problems:
                print(" - " + p, file=sys.stderr)
            return 1
        print(f"PTX up to date ({len(names)} file(s))")
        return 0


if __name__ == "__main__":
    sys.exit(main())
