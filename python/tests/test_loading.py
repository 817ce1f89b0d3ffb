"""Finding the library: `import graphcore` never needs it; the first call
does, and looks at $GRAPHCORE_LIB first (and only, when set), then
pkg-config's libdir, the package's folder, the repository, the system
loader, naming each place in its error; the example runs (fully with a
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
    r = run_python("import graphcore; print(graphcore.__version__)",
                   GRAPHCORE_LIB="/nonexistent/libgraphcore.so")
    assert r.returncode == 0 and r.stdout.strip() == gc.__version__, r.stderr
    r = run_python("import graphcore; graphcore.device_count()",
                   GRAPHCORE_LIB="/nonexistent/libgraphcore.so")
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr
    assert "$GRAPHCORE_LIB: /nonexistent/libgraphcore.so (no such file)" in r.stderr
    assert "pkg-config" not in r.stderr.split("searched:")[1].split("Build it")[0], r.stderr
    r = run_python("import graphcore; print(graphcore.LIBRARY)", GRAPHCORE_LIB=gc.LIBRARY)
    assert r.returncode == 0 and r.stdout.strip() == gc.LIBRARY


def test_import_without_the_library_lists_the_places_searched():
    # No GRAPHCORE_LIB, pkg-config that knows no graphcore, a copy of the
    # package outside the repository, an empty loader path.
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(PYTHON_DIR, "graphcore"), os.path.join(tmp, "graphcore"))
        env = {k: v for k, v in os.environ.items() if k != "GRAPHCORE_LIB"}
        env.update(PYTHONPATH=tmp, PKG_CONFIG_LIBDIR=tmp, PKG_CONFIG_PATH="", LD_LIBRARY_PATH="")
        code = "import graphcore; print(graphcore.__version__); graphcore.device_count()"
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, cwd=tmp)
    if "graphcore: cannot load libgraphcore" not in r.stderr:
        import pytest
        pytest.skip("libgraphcore is installed system-wide (the loader found it)")
    assert r.stdout.strip() == gc.__version__
    lines = [l.strip() for l in r.stderr.split("searched:")[1].split("Build it")[0].splitlines()
             if l.strip()]
    places = [l.split(":")[0] for l in lines]
    assert places == ["pkg-config libdir", "package folder", "system loader"], r.stderr
    assert "no such file" in lines[1]
    assert "repository" not in r.stderr.split("Build it")[0]


def test_search_order():
    order = gc.loader.candidates()
    places = [place for place, _, _ in order]
    assert places[0] == "pkg-config libdir"
    assert places[1] == "package folder"
    assert order[1][1] == os.path.join(PYTHON_DIR, "graphcore", "libgraphcore.so.0")
    assert [path for place, path, _ in order if place == "repository"] == [
        os.path.join(REPO, d, "libgraphcore.so") for d in ("target/release", "target/debug", "stage/lib")]
    assert order[-1] == ("system loader", "libgraphcore.so.0", None)


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
