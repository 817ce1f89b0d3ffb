"""The header's constants, C structures and function prototypes.

``PROTOTYPES`` maps every function of include/graphcore.h to its ctypes
(restype, argtypes); python/tests/test_binding.py checks it, the constants
and the structure layouts against the header. The map and zip ops' prototypes
and the CHAIN_* opcodes come from _map_ops.py, generated from their
declarations. Imports nothing else of the package.
"""

import ctypes as C

from ._map_ops import CHAIN_OPCODES, MAP_OPS

__all__ = [
    "INSTANTIATE_UPLOAD", "INSTANTIATE_AUTO_FREE_ON_LAUNCH", "INSTANTIATE_USE_NODE_PRIORITY",
    "INSTANTIATE_FUSE_ELEMENTWISE", "CAPTURE_THREAD_LOCAL", "CAPTURE_GLOBAL", "CAPTURE_RELAXED",
    "CHAIN_FILL", "CHAIN_MAX", "CHAIN_MIN", "CHAIN_MAX_OPS", "RUNNER_MAX_BUCKETS", "EVENT_DISABLE_TIMING", "EVENT_EXTERNAL",
    "GRAPH_WRAP_BORROW", "GRAPH_WRAP_ADOPT", "ARG_EXACT", "ARG_ROWS", "Binding", "COND_RESET_ON_LAUNCH",
    "COND_IF", "COND_IF_ELSE", "COND_WHILE", "COND_SWITCH", "CMP_LT", "CMP_LE", "CMP_GT", "CMP_GE",
    "CondHandle", "Dim3", "Node", "DeviceInfo", "ChainOp",
    "MlpLayer", "MLP_MAX_LAYERS", "MLP_FUSED", "MLP_FUSED_ALWAYS", "MLP_TF32", "LINEAR_RELU", "LINEAR_TF32",
    "LINEAR_GRAPHCORE", "LINEAR_CUBLASLT", "LINEAR_BACKEND_GRAPHCORE", "LINEAR_BACKEND_CUBLASLT",
    "REDUCTION_SUM", "REDUCTION_MEAN",
    "PoolOptions", "PoolStatistics", "ExecStatistics", "RunnerBucket", "RunnerStatistics",
    "HOST_FN", "RECORD_FN", "RECORD_ROWS_FN", "PROTOTYPES", "ALLOCATOR_MAX_DEVICES", "FALLBACK_EAGER",
    "FALLBACK_HARD_FAIL", "CACHE_EXEC_BASE_BYTES", "CACHE_DEFAULT_NODE_BYTES", "CACHE_HIT",
    "CACHE_MISS", "CACHE_EAGER", "CacheOptions", "CacheStatistics", "CacheEntry",
    "CACHE_RECORD_FN", "ArgUse", "ARG_USE_KERNEL", "ARG_USE_MEMCPY_DST", "ARG_USE_MEMCPY_SRC",
    "ARG_USE_MEMSET",
] + ["CHAIN_" + _name for _name in CHAIN_OPCODES]

# ------------------------------------------------------------------ constants
# (the header's macros; python/tests checks them against it)

INSTANTIATE_UPLOAD = 1
INSTANTIATE_AUTO_FREE_ON_LAUNCH = 2
INSTANTIATE_USE_NODE_PRIORITY = 4
INSTANTIATE_FUSE_ELEMENTWISE = 8
CAPTURE_THREAD_LOCAL = 0
CAPTURE_GLOBAL = 1
CAPTURE_RELAXED = 2
CHAIN_FILL = 1
CHAIN_MAX = 5
CHAIN_MIN = 6
# CHAIN_MUL, CHAIN_ADD, CHAIN_RELU, CHAIN_GELU, ...: the map ops' opcodes.
globals().update(("CHAIN_" + _name, _value) for _name, _value in CHAIN_OPCODES.items())
CHAIN_MAX_OPS = 8
MLP_MAX_LAYERS = 64
MLP_FUSED = 1
MLP_FUSED_ALWAYS = 2
MLP_TF32 = 16
REDUCTION_SUM = 0
REDUCTION_MEAN = 1
LINEAR_RELU = 1
LINEAR_TF32 = 2
LINEAR_GRAPHCORE = 4
LINEAR_CUBLASLT = 8
LINEAR_BACKEND_GRAPHCORE = 0
LINEAR_BACKEND_CUBLASLT = 1
RUNNER_MAX_BUCKETS = 16
ALLOCATOR_MAX_DEVICES = 64
FALLBACK_EAGER = 1
FALLBACK_HARD_FAIL = 2
CACHE_EXEC_BASE_BYTES = 16384
CACHE_DEFAULT_NODE_BYTES = 10240
CACHE_HIT = 0
CACHE_MISS = 1
CACHE_EAGER = 2
EVENT_DISABLE_TIMING = 1
EVENT_EXTERNAL = 1
GRAPH_WRAP_BORROW = 0
GRAPH_WRAP_ADOPT = 1
ARG_EXACT = 1
ARG_ROWS = 2
ARG_USE_KERNEL = 0
ARG_USE_MEMCPY_DST = 1
ARG_USE_MEMCPY_SRC = 2
ARG_USE_MEMSET = 3
COND_RESET_ON_LAUNCH = 1
COND_IF = 0
COND_IF_ELSE = 1
COND_WHILE = 2
COND_SWITCH = 3
CMP_LT = 0
CMP_LE = 1
CMP_GT = 2
CMP_GE = 3

# ------------------------------------------------------------- C structures


class Dim3(C.Structure):
    """gc_dim3: a grid or block shape."""

    _fields_ = [("x", C.c_uint32), ("y", C.c_uint32), ("z", C.c_uint32)]

    def __repr__(self):
        return "Dim3(%d, %d, %d)" % (self.x, self.y, self.z)


class Node(C.Structure):
    """gc_node: a node of a graph (its graph's id and its index)."""

    _fields_ = [("graph", C.c_uint64), ("index", C.c_uint32)]

    def __eq__(self, other):
        return isinstance(other, Node) and (self.graph, self.index) == (other.graph, other.index)

    def __hash__(self):
        return hash((self.graph, self.index))

    def __repr__(self):
        return "Node(graph=%d, index=%d)" % (self.graph, self.index)


class Binding(C.Structure):
    """gc_binding: argument ``index`` now at ``ptr`` (``bytes`` there, or 0)."""

    _fields_ = [("index", C.c_size_t), ("ptr", C.c_void_p), ("bytes", C.c_size_t)]


class ArgUse(C.Structure):
    """gc_arg_use: one use of an argument (Exec.arg_use_list())."""

    _fields_ = [
        ("node", C.c_size_t),
        ("kind", C.c_uint32),
        ("nested", C.c_uint32),
        ("offset", C.c_size_t),
        ("delta", C.c_uint64),
        ("kernel", C.c_char * 64),
    ]


class DeviceInfo(C.Structure):
    """gc_device_info (Context.info())."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("name", C.c_char * 256),
        ("ordinal", C.c_int),
        ("cc_major", C.c_int),
        ("cc_minor", C.c_int),
        ("sm_count", C.c_int),
        ("total_bytes", C.c_uint64),
        ("free_bytes", C.c_uint64),
        ("driver_version", C.c_int),
    ]


class CondHandle(C.Structure):
    """gc_cond_handle: a conditional handle (its graph's id, CUDA's value)."""

    _fields_ = [("graph", C.c_uint64), ("raw", C.c_uint64)]


class ChainOp(C.Structure):
    """gc_chain_op: one operation of op_chain (CHAIN_* opcode, constant)."""

    _fields_ = [("op", C.c_uint32), ("value", C.c_float)]


class MlpLayer(C.Structure):
    """gc_mlp_layer: one layer of op_mlp (w, b device addresses, widths, relu)."""

    _fields_ = [
        ("w", C.c_void_p),
        ("b", C.c_void_p),
        ("inputs", C.c_uint32),
        ("outputs", C.c_uint32),
        ("relu", C.c_int),
    ]


class PoolOptions(C.Structure):
    """gc_pool_options (Pool(ctx, initial_bytes=..., max_bytes=...))."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("initial_bytes", C.c_uint64),
        ("max_bytes", C.c_uint64),
    ]


class PoolStatistics(C.Structure):
    """gc_pool_statistics (Pool.stats()), named as PyTorch names them."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("allocated_bytes", C.c_uint64),
        ("reserved_bytes", C.c_uint64),
        ("peak_allocated_bytes", C.c_uint64),
        ("peak_reserved_bytes", C.c_uint64),
        ("segment_count", C.c_uint64),
        ("block_count", C.c_uint64),
        ("free_block_count", C.c_uint64),
        ("alloc_count", C.c_uint64),
        ("free_count", C.c_uint64),
    ]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_[1:]}


class ExecStatistics(C.Structure):
    """gc_exec_statistics (Exec.stats()): node counts before and after fusion."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("graph_nodes", C.c_uint64),
        ("fused_away", C.c_uint64),
        ("instantiated_nodes", C.c_uint64),
        ("chains", C.c_uint64),
    ]

    def as_dict(self):
        return {name: getattr(self, name) for name, _ in self._fields_[1:]}


class RunnerBucket(C.Structure):
    """gc_runner_bucket: one bucket of RunnerStatistics."""

    _fields_ = [
        ("batch", C.c_uint32),
        ("node_count", C.c_uint32),
        ("capture_us", C.c_double),
        ("pool_bytes", C.c_uint64),
    ]


class RunnerStatistics(C.Structure):
    """gc_runner_statistics (Runner.stats())."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("bucket_count", C.c_uint32),
        ("buckets", RunnerBucket * RUNNER_MAX_BUCKETS),
        ("pool", PoolStatistics),
        ("eager_runs", C.c_uint64),
        ("exact_buckets", C.c_uint32),
    ]


class CacheOptions(C.Structure):
    """gc_cache_options."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("max_entries", C.c_size_t),
        ("max_bytes", C.c_uint64),
        ("warmup_runs", C.c_uint32),
        ("flags", C.c_uint32),
        ("node_bytes", C.c_uint64),
    ]


class CacheStatistics(C.Structure):
    """gc_cache_statistics."""

    _fields_ = [("struct_size", C.c_size_t)] + [
        (name, C.c_uint64) for name in (
            "entries", "hits", "misses", "evictions", "eager_runs", "failed_records", "bytes",
            "pool_bytes", "exec_bytes", "max_entries", "max_bytes")
    ] + [("pool", PoolStatistics)]


class CacheEntry(C.Structure):
    """gc_cache_entry."""

    _fields_ = [
        ("struct_size", C.c_size_t),
        ("node_count", C.c_uint64),
        ("pool_bytes", C.c_uint64),
        ("exec_bytes", C.c_uint64),
        ("bytes", C.c_uint64),
        ("capture_us", C.c_double),
    ]


HOST_FN = C.CFUNCTYPE(None, C.c_void_p)
RECORD_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint32, C.c_void_p)
RECORD_ROWS_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint32, C.c_void_p, C.c_void_p)
CACHE_RECORD_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_size_t, C.c_void_p)

# ------------------------------------------------------------ the C functions

_S = C.c_int  # gc_status (checked: a failure raises)
_H = C.c_void_p  # a handle (gc_context *, gc_stream *, ...)
_D = C.c_void_p  # an address (void *, float *)
_P = C.POINTER

# Every function of include/graphcore.h: name -> (restype, argtypes).
# python/tests/test_binding.py checks this table against the header.
PROTOTYPES = {
    "gc_status_name": (C.c_char_p, [C.c_int]),
    "gc_last_error": (C.c_char_p, []),
    "gc_last_cuda_result": (C.c_int, []),
    "gc_version": (C.c_uint32, []),
    # devices
    "gc_device_count": (_S, [_P(C.c_int)]),
    "gc_context_create": (_S, [C.c_int, _P(_H)]),
    "gc_context_info": (_S, [_H, _P(DeviceInfo)]),
    "gc_context_synchronize": (_S, [_H]),
    "gc_context_destroy": (_S, [_H]),
    # streams
    "gc_stream_create": (_S, [_H, _P(_H)]),
    "gc_stream_create_with_priority": (_S, [_H, C.c_int, _P(_H)]),
    "gc_stream_priority_range": (_S, [_H, _P(C.c_int), _P(C.c_int)]),
    "gc_stream_wrap": (_S, [_H, _D, _P(_H)]),
    "gc_stream_raw": (_S, [_H, _P(_D)]),
    "gc_stream_wait_stream": (_S, [_H, _H]),
    "gc_stream_synchronize": (_S, [_H]),
    "gc_stream_is_capturing": (_S, [_H, _P(C.c_int)]),
    "gc_stream_destroy": (_S, [_H]),
    # events
    "gc_event_create": (_S, [_H, C.c_uint32, _P(_H)]),
    "gc_event_wrap": (_S, [_H, _D, _P(_H)]),
    "gc_event_raw": (_S, [_H, _P(_D)]),
    "gc_event_record": (_S, [_H, _H, C.c_uint32]),
    "gc_stream_wait_event": (_S, [_H, _H, C.c_uint32]),
    "gc_event_synchronize": (_S, [_H]),
    "gc_event_query": (_S, [_H, _P(C.c_int)]),
    "gc_event_elapsed_ms": (_S, [_H, _H, _D]),
    "gc_event_destroy": (_S, [_H]),
    # memory
    "gc_pool_create": (_S, [_H, _P(PoolOptions), _P(_H)]),
    "gc_pool_alloc": (_S, [_H, C.c_size_t, _P(_D)]),
    "gc_pool_free": (_S, [_H, _D]),
    "gc_pool_stats": (_S, [_H, _P(PoolStatistics)]),
    "gc_pool_trim": (_S, [_H]),
    "gc_pool_enable_peer_access": (_S, [_H, _H]),
    "gc_pool_destroy": (_S, [_H]),
    # allocator (no status: NULL or nothing, and gc_last_error)
    "gc_allocator_set_pool": (_S, [C.c_int, _H]),
    "gc_torch_alloc": (C.c_void_p, [C.c_size_t, C.c_int, _D]),
    "gc_torch_free": (None, [_D, C.c_size_t, C.c_int, _D]),
    "gc_engine_alloc": (C.c_void_p, [_D, C.c_size_t, C.c_int, _D]),
    "gc_engine_free": (None, [_D, _D, C.c_size_t, C.c_int, _D]),
    "gc_host_alloc": (_S, [_H, C.c_size_t, _P(_D)]),
    "gc_host_free": (_S, [_H, _D]),
    "gc_memcpy_async": (_S, [_H, _D, _D, C.c_size_t]),
    "gc_memset_async": (_S, [_H, _D, C.c_int, C.c_size_t]),
    "gc_memset_async_elem": (_S, [_H, _D, C.c_uint32, C.c_uint32, C.c_size_t]),
    # kernels
    "gc_module_load": (_S, [_H, _D, C.c_size_t, _P(_H)]),
    "gc_module_function": (_S, [_H, C.c_char_p, _P(_H)]),
    "gc_function_wrap": (_S, [_H, _D, C.c_char_p, _P(_H)]),
    "gc_kernel_builtin": (_S, [_H, C.c_char_p, _P(_H)]),
    "gc_launch": (_S, [_H, _H, Dim3, Dim3, C.c_uint32, _P(_D)]),
    "gc_launch_host_func": (_S, [_H, HOST_FN, _D]),
    "gc_function_raw": (_S, [_H, _P(_D)]),
    "gc_function_destroy": (_S, [_H]),
    "gc_module_destroy": (_S, [_H]),
    # capture
    "gc_capture_begin": (_S, [_H, _H, C.c_uint32]),
    "gc_capture_end": (_S, [_H, _P(_H)]),
    "gc_capture_arg": (_S, [_H, _D, C.c_size_t, C.c_uint32, _P(C.c_size_t)]),
    "gc_capture_scalar_arg": (_S, [_H, _D, C.c_size_t, _P(C.c_size_t)]),
    # building
    "gc_graph_create": (_S, [_H, _P(_H)]),
    "gc_graph_add_kernel": (
        _S, [_H, _H, Dim3, Dim3, C.c_uint32, _P(_D), _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_memcpy": (_S, [_H, _D, _D, C.c_size_t, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_memset": (_S, [_H, _D, C.c_int, C.c_size_t, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_memset_elem": (
        _S, [_H, _D, C.c_uint32, C.c_uint32, C.c_size_t, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_host": (_S, [_H, HOST_FN, _D, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_child": (_S, [_H, _H, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_empty": (_S, [_H, _P(Node), C.c_size_t, _P(Node)]),
    "gc_graph_add_dependency": (_S, [_H, Node, Node]),
    "gc_graph_add_programmatic_dependency": (_S, [_H, Node, Node]),
    "gc_graph_clone": (_S, [_H, _P(_H)]),
    "gc_graph_wrap": (_S, [_H, _D, C.c_uint32, _P(_H)]),
    "gc_graph_declare_arg": (_S, [_H, _D, C.c_size_t, C.c_uint32, _P(C.c_size_t)]),
    "gc_graph_declare_scalar_arg": (_S, [_H, _D, C.c_size_t, _P(C.c_size_t)]),
    "gc_graph_node_count": (_S, [_H, _P(C.c_size_t)]),
    "gc_graph_raw": (_S, [_H, _P(_D)]),
    "gc_graph_pool_bytes": (_S, [_H, _P(C.c_uint64)]),
    "gc_graph_write_dot": (_S, [_H, C.c_char_p]),
    "gc_graph_destroy": (_S, [_H]),
    # conditional nodes
    "gc_graph_conditional_handle_create": (_S, [_H, C.c_uint32, C.c_uint32, _P(CondHandle)]),
    "gc_cond_handle_raw": (_S, [CondHandle, _P(C.c_uint64)]),
    "gc_graph_add_conditional": (
        _S, [_H, C.c_uint32, CondHandle, C.c_uint32, _P(Node), C.c_size_t, _P(Node), _P(_H),
             C.c_size_t]),
    "gc_capture_begin_into": (_S, [_H, _H, _H, C.c_uint32]),
    "gc_op_cond_set_u32": (_S, [_H, CondHandle, _P(C.c_uint32)]),
    "gc_op_cond_count": (_S, [_H, CondHandle, _P(C.c_uint32), C.c_uint32]),
    "gc_op_cond_set_f32": (
        _S, [_H, CondHandle, _D, C.c_float, C.c_uint32, _P(C.c_uint32), C.c_uint32]),
    # replay
    "gc_graph_instantiate": (_S, [_H, C.c_uint32, _P(_H)]),
    "gc_exec_upload": (_S, [_H, _H]),
    "gc_exec_launch": (_S, [_H, _H]),
    "gc_exec_launch_with": (_S, [_H, _H, _P(Binding), C.c_size_t]),
    "gc_exec_arg_info": (_S, [_H, C.c_size_t, _P(C.c_size_t)]),
    "gc_exec_arg_uses": (_S, [_H, C.c_size_t, _P(ArgUse), C.c_size_t, _P(C.c_size_t)]),
    "gc_exec_update": (_S, [_H, _H]),
    "gc_exec_set_kernel_args": (_S, [_H, Node, _P(_D)]),
    "gc_exec_raw": (_S, [_H, _P(_D)]),
    "gc_exec_stats": (_S, [_H, _P(ExecStatistics)]),
    "gc_exec_write_dot": (_S, [_H, C.c_char_p]),
    "gc_exec_destroy": (_S, [_H]),
    # bucketed graphs
    "gc_runner_create": (_S, [_H, _H, _P(_H)]),
    "gc_runner_capture": (_S, [_H, _P(C.c_uint32), C.c_size_t, RECORD_FN, _D, C.c_uint32]),
    "gc_runner_capture_exact": (_S, [_H, _P(C.c_uint32), C.c_size_t, RECORD_ROWS_FN, _D, C.c_uint32]),
    "gc_runner_replay_exact": (
        _S, [_H, C.c_uint32, _H, _P(Binding), C.c_size_t, _P(C.c_uint32)]),
    "gc_runner_replay": (_S, [_H, C.c_uint32, _H, _P(C.c_uint32)]),
    "gc_runner_replay_with": (
        _S, [_H, C.c_uint32, _H, _P(Binding), C.c_size_t, _P(C.c_uint32)]),
    "gc_runner_stats": (_S, [_H, _P(RunnerStatistics)]),
    "gc_runner_set_fallback": (_S, [_H, C.c_uint32]),
    "gc_runner_destroy": (_S, [_H]),
    # graph cache
    "gc_cache_create": (_S, [_H, _P(CacheOptions), _P(_H)]),
    "gc_cache_launch": (
        _S, [_H, _D, C.c_size_t, _H, _P(Binding), C.c_size_t, CACHE_RECORD_FN, _D, _P(C.c_int)]),
    "gc_cache_stats": (_S, [_H, _P(CacheStatistics)]),
    "gc_cache_entry_info": (_S, [_H, _D, C.c_size_t, _P(CacheEntry)]),
    "gc_cache_set_fallback": (_S, [_H, C.c_uint32]),
    "gc_cache_set_budget": (_S, [_H, C.c_size_t, C.c_uint64]),
    "gc_cache_pool": (_S, [_H, _P(_H)]),
    "gc_cache_clear": (_S, [_H]),
    "gc_cache_destroy": (_S, [_H]),
    # built-in kernels, typed
    "gc_op_chain": (_S, [_H, _D, _D, C.c_uint64, _P(ChainOp), C.c_uint32]),
    "gc_op_mse_workspace_bytes": (_S, [_H, C.c_uint64, _P(C.c_uint64)]),
    "gc_op_fill": (_S, [_H, _D, C.c_uint64, C.c_float]),
    "gc_op_axpy": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_sgd": (_S, [_H, _D, _D, C.c_uint64, C.c_float]),
    "gc_op_bias_add": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32]),
    "gc_op_linear": (_S, [_H, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_int]),
    "gc_op_linear_backend": (_S, [_H, C.c_uint32, C.c_uint32, C.c_uint32, C.c_int, _P(C.c_int)]),
    "gc_cublaslt_version": (_S, [_P(C.c_size_t)]),
    "gc_op_linear_rows": (_S, [_H, _D, _D, _D, _D, _P(C.c_uint32), C.c_uint32, C.c_uint32, C.c_uint32, C.c_int]),
    "gc_op_linear_backward_input": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32]),
    "gc_op_linear_backward_weight": (_S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32]),
    "gc_op_linear_weight_sgd": (
        _S, [_H, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_float]),
    "gc_op_bias_grad": (_S, [_H, _D, _D, C.c_uint32, C.c_uint32]),
    "gc_op_bias_sgd": (_S, [_H, _D, _D, C.c_uint32, C.c_uint32, C.c_float]),
    "gc_op_mse": (_S, [_H, _D, _D, _D, _D, C.c_uint64, C.c_float, _D, C.c_uint64]),
    "gc_op_mse_reduction": (_S, [_H, _D, _D, _D, _D, C.c_uint64, C.c_uint32, _D, C.c_uint64]),
    "gc_op_mlp_workspace_bytes": (_S, [C.c_uint32, _P(MlpLayer), C.c_uint32, _P(C.c_uint64)]),
    "gc_op_mlp": (_S, [_H, _D, _D, C.c_uint32, _P(MlpLayer), C.c_uint32, _D, C.c_uint64, C.c_uint32]),
    "gc_op_mlp_rows": (_S, [_H, _D, _D, _P(C.c_uint32), C.c_uint32, _P(MlpLayer), C.c_uint32, _D, C.c_uint64,
                            C.c_uint32]),
    "gc_op_linear_mse_step_workspace_bytes": (_S, [_H, C.c_uint32, C.c_uint32, C.c_uint32, _P(C.c_uint64)]),
    "gc_op_linear_mse_step": (_S, [_H, _D, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_float, C.c_float,
                                   _D, C.c_uint64]),
    "gc_op_mlp2_mse_step_workspace_bytes": (_S, [_H, C.c_uint32, C.c_uint32, C.c_uint32, _P(C.c_uint64)]),
    "gc_op_mlp2_mse_step": (_S, [_H, _D, _D, _D, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_uint32,
                                 C.c_float, C.c_float, _D, C.c_uint64]),
    "gc_op_linear_mse_step_flags": (_S, [_H, _D, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32, C.c_float,
                                         C.c_float, _D, C.c_uint64, C.c_int]),
    "gc_op_mlp2_mse_step_flags": (_S, [_H, _D, _D, _D, _D, _D, _D, _D, C.c_uint32, C.c_uint32, C.c_uint32,
                                       C.c_uint32, C.c_float, C.c_float, _D, C.c_uint64, C.c_int]),
}
# The map and zip ops (gc_op_<name>(stream, y, x, n[, c]), gc_op_<name>(stream, z, x, y, n)),
# their parameter kinds declared in _map_ops.py.
_KINDS = {"p": _D, "n": C.c_uint64, "f": C.c_float}
PROTOTYPES.update((_cname, (_S, [_H] + [_KINDS[k] for k in _kinds]))
                  for _cname, _params, _kinds in MAP_OPS)
