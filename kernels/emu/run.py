#!/usr/bin/env python3
"""Build kernels/emu/check.cpp with g++ and run it: every built-in kernel run on
the CPU (one OS thread per CUDA thread) and checked against a float64
reference, or bit for bit where a kernel promises that. No GPU needed.

    python3 kernels/emu/run.py            # all groups (a few minutes on 2 cores)
    python3 kernels/emu/run.py gemm       # one group: elementwise, bias_add, chain, maps, zips,
                                          # bias_grad, mse, linear_small, gemm, gemm_linear, weight_sgd,
                                          # train_step, mlp2_step, mlp_fused, mlp_rows
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        print(f"{cxx} not found (set CXX to a C++20 compiler)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "check"
        cmd = [cxx, "-std=c++20", "-O2", "-ffp-contract=off", "-pthread", "-Wall", "-Wno-unknown-pragmas",
               "-o", str(exe), str(HERE / "check.cpp")]
        if subprocess.call(cmd) != 0:
            return 1
        return subprocess.call([str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
