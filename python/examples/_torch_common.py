"""What the graphcore.torch examples (torch_cnn.py, torch_mlp.py,
torch_decoder.py, torch_train_step.py) share: opening PyTorch, the
PyTorch notes' recipe for one bucket, a request checked against it, the
refusals, and the exit on a graphcore error. Not an example itself; each
example imports it from its own folder, so they still run as

    python3 python/examples/torch_mlp.py

Importing this file needs no torch.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphcore as gc  # noqa: E402


def open_torch(name):
    """(torch, graphcore.torch) with TF32 matmuls off and the seed 0, or
    None after saying why (``name``: the example's file name) where PyTorch
    or a CUDA GPU for it is missing."""
    try:
        import torch
        import graphcore.torch as gct
    except ImportError as e:
        print("%s: %s" % (name, e))
        return None
    if not torch.cuda.is_available():
        print("%s: no CUDA GPU for PyTorch: skipping" % name)
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    return torch, gct


def recipe(torch, model, x, pool=None):
    """PyTorch's recipe on the static input x: three warm-up calls on a side
    stream, then the capture (in ``pool``): (x, graph, static output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g, pool=pool):
        y = model(x)
    return x, g, y


def check_request(torch, g, model, ref, buckets, x):
    """Serves x through the graph family g and checks the output against
    the eager model (within 1e-5 relative) and, bitwise, against the
    recipe's replay of the same bucket (``ref``: {rows: recipe(...)}, x
    copied into its static input, zero-padded): (bucket, relative error,
    bitwise equal, ok)."""
    rows = x.shape[0]
    y = g(x).clone()
    with torch.no_grad():
        want = model(x)
    rel = float((y - want).abs().max() / want.abs().max().clamp_min(1e-30))
    bucket = next(b for b in buckets if b >= rows)
    sx, sg, sy = ref[bucket]
    sx.zero_()
    sx[:rows].copy_(x)
    sg.replay()
    same = torch.equal(y, sy[:rows])
    return bucket, rel, same, rel <= 1e-5 and same


def refusals(g, cases, width):
    """Calls g with each (bad input, what it is) of ``cases`` and prints
    whether it was refused (the error's first ``width`` characters): the
    number NOT refused."""
    failed = 0
    for bad, what in cases:
        try:
            g(bad)
            print("%s was NOT refused" % what)
            failed += 1
        except (gc.InvalidArgumentError, gc.NoBucketError) as e:
            print("%s is refused: %s" % (what, str(e)[:width]))
    return failed


def run(main):
    """Exits with main()'s status, or 2 after printing a graphcore error."""
    try:
        sys.exit(main())
    except gc.Error as e:
        print("graphcore: %s" % e)
        sys.exit(2)
