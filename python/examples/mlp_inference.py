"""The PyTorch notes' MLP (1024 -> 512 -> 256 -> 10, ReLU) served from
Python with graph arguments, as c_examples/mlp_inference.c serves it from C:
one graph per batch size (1, 4, 16, 32) in one graphcore pool, each
declaring its input and output as arguments ``x`` and ``y``. Every request
comes in its own torch tensor and gets its own output tensor:

    runner.replay(rows, stream, x=request_in, y=request_out)

binds the bucket's graph to them and replays it, with no copy into a
static input and none out of a static output. The replays run on PyTorch's
current stream (borrowed), so they are ordered with the torch work around
them. Each request's output is checked against PyTorch's own forward pass.

A request of ``rows`` rows runs the smallest bucket of at least ``rows``
rows, which reads and writes the bucket's rows: the request's tensors have
the bucket's rows (the first ``rows`` hold the request); a smaller tensor
is refused (InvalidArgumentError naming the argument).

Exact-size requests (``Server(..., exact=True)``): the buckets are captured
with ``runner.capture(..., exact=True)`` through ``gc.op_mlp_rows``, whose
kernels read the row count from device memory, and

    runner.replay(rows, stream, exact=True, x=request_in, y=request_out)

takes tensors of exactly ``rows`` rows: no padding, and the output has
exactly the request's rows.

    python3 python/examples/mlp_inference.py
(needs PyTorch with CUDA; without a CUDA driver it prints graphcore's
message and exits with status 2).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphcore as gc  # noqa: E402

IN, H1, H2, OUT = 1024, 512, 256, 10
BUCKETS = (1, 4, 16, 32)


class Server:
    """The MLP's bucket graphs in one pool, served with bindings. ``layers``
    are the three torch Linear layers (weights as PyTorch lays them out:
    outputs x inputs, contiguous, on the GPU)."""

    def __init__(self, ctx, layers, torch, exact=False):
        self.ctx, self.torch, self.exact = ctx, torch, exact
        self.pool = gc.Pool(ctx)
        self.params = [(lin.weight.detach().contiguous(), lin.bias.detach().contiguous())
                       for lin in layers]
        # The static input and output the graphs are captured on; bindings
        # replace them on every replay.
        self.x = torch.zeros(BUCKETS[-1], IN, device="cuda")
        self.y = torch.zeros(BUCKETS[-1], OUT, device="cuda")
        torch.cuda.synchronize()  # the weights are ready before the capture reads them
        self.runner = gc.Runner(ctx, self.pool)
        if exact:
            widths = (IN, H1, H2, OUT)
            self.layers = [(w, b, widths[i], widths[i + 1], i < 2) for i, (w, b) in enumerate(self.params)]
            self.ws_bytes = gc.mlp_workspace_bytes(BUCKETS[-1], self.layers)
            self.ws = self.pool.alloc(self.ws_bytes)
            self.runner.capture(BUCKETS, self._forward_rows, warmup_runs=1, exact=True)
        else:
            self.runner.capture(BUCKETS, self._forward, warmup_runs=1)

    def _forward(self, stream, rows):
        """One bucket's work; under capture, x and y become its arguments."""
        stream.capture_arg(self.x[:rows], name="x")
        stream.capture_arg(self.y[:rows], name="y")
        h1 = self.pool.alloc(rows * H1 * 4)
        h2 = self.pool.alloc(rows * H2 * 4)
        (w1, b1), (w2, b2), (w3, b3) = self.params
        gc.op_linear(stream, h1, self.x, w1, b1, rows, H1, IN, 1)
        gc.op_linear(stream, h2, h1, w2, b2, rows, H2, H1, 1)
        gc.op_linear(stream, self.y, h2, w3, b3, rows, OUT, H2, 0)
        self.pool.free(h1)
        self.pool.free(h2)

    def _forward_rows(self, stream, batch, rows):
        """One bucket's work for exact-size requests: each layer reads its
        row count at ``rows`` (device memory the replay binds); x and y are
        declared as rows, so a replay binds tensors of exactly that many."""
        stream.capture_arg(self.x[:batch], name="x", rows=True)
        stream.capture_arg(self.y[:batch], name="y", rows=True)
        gc.op_mlp_rows(stream, self.y, self.x, rows, batch, self.layers, self.ws, self.ws_bytes)

    @staticmethod
    def bucket(rows):
        """The bucket a request of ``rows`` rows runs."""
        return next(b for b in BUCKETS if b >= rows)

    def request_tensors(self, rows):
        """Input and output tensors for a request, with its bucket's rows."""
        b = self.bucket(rows)
        return (self.torch.zeros(b, IN, device="cuda"), self.torch.empty(b, OUT, device="cuda"))

    def serve(self, rows, x, y, stream):
        """Replays the bucket for ``rows`` rows bound to ``x`` and ``y``."""
        return self.runner.replay(rows, stream, x=x, y=y)

    def serve_exact(self, rows, x, y, stream):
        """An exact-size request (a Server made with exact=True): ``x`` and
        ``y`` of exactly ``rows`` rows; returns the bucket replayed."""
        return self.runner.replay(rows, stream, exact=True, x=x, y=y)


def main():
    try:
        import torch
    except ImportError:
        print("mlp_inference.py needs PyTorch")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(IN, H1), torch.nn.ReLU(), torch.nn.Linear(H1, H2), torch.nn.ReLU(),
        torch.nn.Linear(H2, OUT)).cuda().eval()
    ctx = gc.Context(0)
    server = Server(ctx, [mlp[0], mlp[2], mlp[4]], torch)
    stream = gc.Stream.wrap(ctx, torch.cuda.current_stream())
    worst, failed = 0.0, 0
    requests = [1, 3, 4, 7, 16, 20, 32, 2, 31]
    with torch.no_grad():
        for i, rows in enumerate(requests):
            x, y = server.request_tensors(rows)
            x[:rows] = torch.randn(rows, IN, device="cuda")
            bucket = server.serve(rows, x, y, stream)
            want = mlp(x[:rows])
            err = float((y[:rows] - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ok = err <= 1e-4
            worst, failed = max(worst, err), failed + (not ok)
            print("request %d: %2d rows -> bucket %2d, own buffers (x at 0x%x): max rel err vs "
                  "torch %.1e %s" % (i, rows, bucket, x.data_ptr(), err, "ok" if ok else "WRONG"))
        # A request tensor smaller than its bucket's range is refused.
        x, y = server.request_tensors(3)
        try:
            server.serve(3, x[:3], y, stream)
            print("a 3-row input for bucket 4 was NOT refused")
            failed += 1
        except gc.InvalidArgumentError as e:
            print("a 3-row input for bucket 4 is refused: %s" % str(e).splitlines()[0][:100])
        # Exact-size requests: tensors of exactly the request's rows.
        exact = Server(ctx, [mlp[0], mlp[2], mlp[4]], torch, exact=True)
        for i, rows in enumerate(requests):
            x = torch.randn(rows, IN, device="cuda")
            y = torch.empty(rows, OUT, device="cuda")
            bucket = exact.serve_exact(rows, x, y, stream)
            want = mlp(x)
            err = float((y - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ok = err <= 1e-4
            worst, failed = max(worst, err), failed + (not ok)
            print("exact request %d: %2d rows -> bucket %2d, tensors of %d rows: max rel err vs "
                  "torch %.1e %s" % (i, rows, bucket, rows, err, "ok" if ok else "WRONG"))
    torch.cuda.synchronize()
    stats = server.pool.stats()
    print("%d requests, no copies; worst rel err %.1e; pool reserved %.1f MB; %s" % (
        2 * len(requests), worst, stats.reserved_bytes / 1e6, "all ok" if not failed else
        "%d FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except gc.Error as e:
        print("graphcore: %s" % e)
        sys.exit(2)
