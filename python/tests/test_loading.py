"""Finding the library: $GRAPHCORE_LIB first (and only, when set), then the
installed locations, then the repository; the example runs (fully with a
GPU, else it reports the missing driver as the C example does)."""
import os
import subprocess
import sys

import graphcore as gc
from conftest import HAVE_GPU, REPO

PYTHON_DIR = os.path.join(REPO, "python")


def run_python(code, **env):
    full = dict(os.environ, PYTHONPATH=PYTHON_DIR, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full)


def test_graphcore_lib_is_used_alone():
    r = run_python("import graphcore", GRAPHCORE_LIB="/nonexistent/libgraphcore.so")
    assert r.returncode != 0
    assert "cannot load libgraphcore from $GRAPHCORE_LIB" in r.stderr
    assert "/nonexistent/libgraphcore.so (no such file)" in r.stderr
    r = run_python("import graphcore; print(graphcore.LIBRARY)", GRAPHCORE_LIB=gc.LIBRARY)
    assert r.returncode == 0 and r.stdout.strip() == gc.LIBRARY


def test_search_order():
    order = gc._candidates()
    assert order[0] == "libgraphcore.so.0"  # the loader: installed, LD_LIBRARY_PATH
    assert "/usr/local/lib/libgraphcore.so.0" in order
    repo_paths = [p for p in order if p.startswith(REPO)]
    assert repo_paths == [os.path.join(REPO, d, "libgraphcore.so")
                          for d in ("target/release", "target/debug", "stage/lib")]
    assert order.index("/usr/local/lib/libgraphcore.so.0") < order.index(repo_paths[0])


def test_forward_backward_example():
    script = os.path.join(REPO, "python", "examples", "forward_backward.py")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True)
    print(r.stdout, r.stderr)
    if HAVE_GPU:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "forward_backward.py: all runs correct" in r.stdout
        for run in ("eager:", "built:", "captured:"):
            assert run in r.stdout
    else:
        assert r.returncode == 2, r.stdout + r.stderr
        assert "forward_backward.py: GC_ERROR_NO_DRIVER" in r.stderr
        assert "no CUDA driver" in r.stderr
