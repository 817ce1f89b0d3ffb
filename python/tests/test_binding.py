"""The binding against the header: every C function declared with the
right types, the constants and status names, the structures' layout (as a
C compiler lays them out) and the version. No GPU needed."""
import ctypes as C
import os
import re
import shutil
import subprocess

import pytest

import graphcore as gc
from conftest import REPO

# graphcore.h and the header of the built-in ops it includes.
HEADERS = [os.path.join(REPO, "include", h) for h in ("graphcore.h", "graphcore_ops.h")]


def header_text():
    text = ""
    for path in HEADERS:
        with open(path) as f:
            text += f.read() + "\n"
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def header_functions():
    """name -> (return type, [parameter types]) as C spells them."""
    found = {}
    for ret, name, params in re.findall(
            r"^(enum gc_status|const char \*|int|uint32_t|void \*|void|uint64_t|size_t)\s*(gc_\w+)\(([^;]*?)\);",
            header_text(), flags=re.M | re.S):
        params = " ".join(params.split())
        types = [] if params == "void" else [
            re.sub(r"\s*\b\w+$", "", p.strip()) if not p.strip().endswith("*") else p.strip()
            for p in params.split(",")]
        found[name] = (ret.strip(), types)
    return found


STRUCTS = {
    "gc_device_info": gc.DeviceInfo, "gc_node": gc.Node, "gc_dim3": gc.Dim3,
    "gc_chain_op": gc.ChainOp, "gc_mlp_layer": gc.MlpLayer, "gc_pool_options": gc.PoolOptions,
    "gc_pool_statistics": gc.PoolStatistics, "gc_runner_bucket": gc.RunnerBucket,
    "gc_exec_statistics": gc.ExecStatistics, "gc_binding": gc.Binding,
    "gc_runner_statistics": gc.RunnerStatistics, "gc_cond_handle": gc.CondHandle,
    "gc_cache_options": gc.CacheOptions, "gc_cache_statistics": gc.CacheStatistics,
    "gc_cache_entry": gc.CacheEntry, "gc_arg_use": gc.ArgUse,
}
HANDLES = {"gc_context", "gc_stream", "gc_pool", "gc_module", "gc_function", "gc_graph",
           "gc_exec", "gc_runner", "gc_event", "gc_cache"}
SCALARS = {"int": C.c_int, "uint32_t": C.c_uint32, "uint64_t": C.c_uint64, "size_t": C.c_size_t,
           "float": C.c_float, "gc_capture_mode": C.c_uint32, "gc_event_flags": C.c_uint32,
           "gc_event_capture_flags": C.c_uint32, "gc_graph_wrap_flags": C.c_uint32,
           "gc_cond_type": C.c_uint32, "gc_host_fn": gc.HOST_FN, "gc_record_fn": gc.RECORD_FN,
           "gc_record_rows_fn": gc.RECORD_ROWS_FN, "gc_cache_record_fn": gc.CACHE_RECORD_FN}


def expected_ctype(c_type):
    """The ctypes type a C parameter type must be declared as."""
    t = re.sub(r"\bconst\b|\bstruct\b|\benum\b", "", c_type)
    stars = t.count("*")
    base = t.replace("*", "").split()
    base = base[0] if base else ""
    if base in HANDLES:
        return C.c_void_p if stars == 1 else C.POINTER(C.c_void_p)
    if base in STRUCTS:
        return STRUCTS[base] if stars == 0 else C.POINTER(STRUCTS[base])
    if base in ("void", "float") and stars == 1:
        return C.c_void_p  # an address
    if base == "void" and stars == 2:
        return C.POINTER(C.c_void_p)
    if base == "char" and stars == 1:
        return C.c_char_p
    if stars == 0:
        return SCALARS[base]
    return C.POINTER(SCALARS[base])


RETURNS = {"enum gc_status": C.c_int, "const char *": C.c_char_p, "int": C.c_int,
           "uint32_t": C.c_uint32, "void *": C.c_void_p, "void": None}


def test_every_function_is_declared():
    functions = header_functions()
    assert len(functions) > 50, "header parse found too few functions"
    missing = sorted(set(functions) - set(gc.PROTOTYPES))
    extra = sorted(set(gc.PROTOTYPES) - set(functions))
    assert not missing, "graphcore.h functions missing from the binding: %s" % missing
    assert not extra, "binding declares functions not in graphcore.h: %s" % extra


@pytest.mark.parametrize("name", sorted(header_functions()))
def test_prototype_matches_header(name):
    ret, params = header_functions()[name]
    restype, argtypes = gc.PROTOTYPES[name]
    assert restype is RETURNS[ret], (name, ret, restype)
    assert len(argtypes) == len(params), (name, params)
    for i, (c_type, declared) in enumerate(zip(params, argtypes)):
        assert declared == expected_ctype(c_type), "%s parameter %d (%s): declared %s" % (
            name, i, c_type, declared)
    fn = getattr(gc.lib, name)
    assert fn.argtypes == argtypes and fn.restype is restype
    if ret == "enum gc_status":
        assert fn.errcheck is not None, "%s does not raise on failure" % name


def header_macros():
    return {m: int(v) for m, v in re.findall(r"^#define (GC_\w+) (\d+)$", header_text(), re.M)}


def test_constants_match_header():
    macros = header_macros()
    checked = 0
    for name, value in macros.items():
        if name.startswith("GC_VERSION_"):
            continue
        assert getattr(gc, name[3:]) == value, name
        checked += 1
    assert checked >= 14


def test_status_names_match_header_and_library():
    enum = re.search(r"typedef enum gc_status \{(.*?)\} gc_status;", header_text(), re.S).group(1)
    values = {n: int(v) for n, v in re.findall(r"(GC_\w+) = (\d+)", enum)}
    assert {v: n for n, v in values.items()} == gc.STATUS_NAMES
    for code, name in gc.STATUS_NAMES.items():
        assert gc.status_name(code) == name
        if code:
            assert gc.ERRORS[code].code == code
    assert gc.status_name(999) == "GC_UNKNOWN_STATUS"


def test_version_matches_library_and_header():
    macros = header_macros()
    header = (macros["GC_VERSION_MAJOR"], macros["GC_VERSION_MINOR"], macros["GC_VERSION_PATCH"])
    assert gc.version() == header
    assert gc.__version__ == "%d.%d.%d" % header


LAYOUT_C = r"""
#include <stddef.h>
#include <stdio.h>
#include "graphcore.h"
#define S(t) printf("%s %zu\n", #t, sizeof(struct t));
#define F(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(struct t, f));
int main(void) {
@BODY@
    return 0;
}
"""


def test_structure_layout_matches_c(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert cc, "this test compiles a C program: install a C compiler (apt-get install -y gcc)"
    lines = []
    for cname, cls in STRUCTS.items():
        lines.append("    S(%s)" % cname)
        for field, _ in cls._fields_:
            lines.append("    F(%s, %s)" % (cname, field))
    src = tmp_path / "layout.c"
    src.write_text(LAYOUT_C.replace("@BODY@", "\n".join(lines)))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", os.path.join(REPO, "include"), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    c_layout = dict(line.split() for line in out.splitlines())
    for cname, cls in STRUCTS.items():
        assert int(c_layout[cname]) == C.sizeof(cls), cname
        for field, _ in cls._fields_:
            assert int(c_layout["%s.%s" % (cname, field)]) == getattr(cls, field).offset, (
                cname, field)


def test_mlp_workspace_bytes_needs_no_device():
    layers = [(0x100, None, 4, 4, True), gc.MlpLayer(0x100, None, 4, 2, 0)]
    assert gc.mlp_workspace_bytes(2, layers) == 768  # the counter, one intermediate tagged and as floats
    with pytest.raises(gc.InvalidArgumentError):
        gc.mlp_workspace_bytes(2, [])
