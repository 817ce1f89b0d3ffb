"""graphcore.torch: a PyTorch model, or a whole training step, in a
graphcore graph.

::

    import graphcore.torch as gct

    model = torch.nn.Sequential(...).cuda().eval()
    g = gct.graph(model, torch.randn(32, 1024, device="cuda"), buckets=[1, 4, 16, 32])
    y = g(x)                      # x: 1 to 32 rows; y: x's rows of the output

    s = gct.step(train_step, (x, y), optimizer=opt)   # forward, backward, step
    loss = s(x, y)

``graph(model_or_fn, example_inputs, buckets=None, pool=None, warmup=3)``
captures ``model_or_fn(*inputs)`` once per bucket (a number of rows; the
first dimension of every input), all buckets in one graphcore pool, and
returns a ``Graphed`` callable. ``step(fn, example_inputs, optimizer=None,
pool=None, warmup=3)`` captures a whole training step (``fn`` runs the
forward pass, ``loss.backward()`` and ``optimizer.step()``) and returns a
``Step`` callable; parameters, gradients and optimizer state are updated in
place, where they live, at every call. ``loop(body, example_inputs,
max_iters, grad=False)`` runs a captured body on the device inside a WHILE
node, in one launch, while the body's first output (a float32 flag) says so
and at most ``max_iters`` times: a greedy decode loop that stops at an end
token, a training loop that stops under a loss.

How (``docs/porting-from-torch-cuda-graph.md`` says why this way):

- PyTorch captures (``torch.cuda.CUDAGraph(keep_graph=True)``, warm-up on
  a side stream first, as PyTorch's recipe does), with every allocation of
  the capture routed to a ``torch.cuda.MemPool`` whose allocator is
  libgraphcore's own ``gc_torch_alloc`` / ``gc_torch_free``
  (``torch.cuda.memory.CUDAPluggableAllocator``): the graph's memory is
  graphcore pool memory. graphcore then wraps the captured CUDA graph
  (``gc_graph_wrap``), declares each input's static buffer a graph argument
  and instantiates it.
- A call binds the caller's input tensors to the arguments (no copy:
  ``gc_exec_launch_with`` patches the kernels that read them) and launches
  on PyTorch's current stream. A request with fewer rows than its bucket is
  copied into the bucket's static input (padded); one with exactly the
  bucket's rows is bound as it is.
- Outputs are returned as tensors over the pool memory the graph wrote:
  **valid until the next call of the same graph** (any bucket), as
  ``torch.cuda.graph``'s static outputs are until the next replay; clone
  them to keep them. Outputs whose first dimension is the bucket's rows
  are trimmed to the request's rows (a view).
- A bucket copies every request into its static input instead of binding
  it where binding cannot work: an input that a copy node of the graph
  reads or writes (``x.clone()``, ``x.copy_()``: CUDA cannot move a copy
  node's endpoint from pool memory to PyTorch's own), an output that is a
  view of an input, or a binding the check after capture found wrong.
  ``stats()`` gives each bucket's ``mode`` and ``reason``.

Inputs must be CUDA tensors on the example's device, of the example's
dtype, its trailing shape (all dimensions but the first), contiguous; all
inputs of a call have the same rows, at most the largest bucket. Anything
else raises before anything is launched: ``TypeError`` (not a tensor),
``graphcore.InvalidArgumentError`` (also a ValueError) naming the input,
what was expected and what came, ``graphcore.NoBucketError`` (more rows
than the largest bucket). A model that fails while it is captured (a
``.item()``, a host synchronization, an operation CUDA graphs do not
support) raises ``graphcore.CaptureError`` naming the bucket and the
failure (the original exception chained), with the pool's allocated bytes
as they were.

Limits: random operations in the captured work (dropout in training
mode) draw the same numbers at every call (PyTorch advances a graph's RNG
offset in its own replay(), which graphcore's launch does not run); models
whose rows depend on one another (batch norm in training mode) see a padded
bucket's extra rows.

Graphs of one pool must not run concurrently (as PyTorch's graphs sharing
a pool): call them in one stream order. ``import graphcore`` never needs
PyTorch; ``import graphcore.torch`` needs PyTorch >= 2.6 built with CUDA
(captures need ``CUDAGraph(keep_graph=True).raw_cuda_graph()``, 2.7 and
later) and a libgraphcore with the allocator exports.
"""

import re

MIN_TORCH = (2, 6)

try:
    import torch as _torch
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "graphcore.torch needs PyTorch (torch >= %d.%d, with CUDA), and `import torch` failed: "
        "%s. Install it (pip install torch); `import graphcore` itself works without it."
        % (MIN_TORCH + (_e,))
    ) from _e


def _version(text):
    m = re.match(r"(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


if _version(_torch.__version__) < MIN_TORCH:
    raise ImportError(
        "graphcore.torch needs torch >= %d.%d; this is torch %s (%s)"
        % (MIN_TORCH + (_torch.__version__, getattr(_torch, "__file__", "?")))
    )

from ._graphs import BucketStats, Graphed, Loop, Step, graph, loop, step  # noqa: E402

__all__ = ["graph", "step", "loop", "Graphed", "Step", "Loop", "BucketStats", "MIN_TORCH"]
