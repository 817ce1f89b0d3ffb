"""A training step built from graphcore's per-layer ops, one kernel each (no
fused step op): what the fused step ops are measured against
(train_vs_torch.py) and taken apart beside (perf/gemm_harness/step_kernels.py)."""
import graphcore as gc


def enqueue_per_layer_step(stream, kind, params, x, y, loss, bufs, mse_ws, mse_bytes, lr, tf32=False):
    """Enqueues one step of `kind` on `stream`: "linear" (params w, b:
    linear, MSE, the weight-gradient SGD and the bias SGD) or "mlp2" (params
    w1, b1, w2, b2: both layers, MSE, the input gradient and ReLU mask, then
    each layer's updates). x is rows x width, every layer width x width;
    bufs: three rows x width tensors (h, the output, dH); mse_ws: the MSE's
    workspace of mse_bytes bytes; loss: one float, written. tf32: the
    forward layers with GC_LINEAR_TF32 (the backward ops have no TF32 form)."""
    t = gc.LINEAR_TF32 if tf32 else 0
    rows, width = x.shape
    n = rows * width
    h, p, dh = bufs
    if kind == "linear":
        w, b = params
        gc.op_linear(stream, p, x, w, b, rows, width, width, t)
        gc.op_mse(stream, loss, p, p, y, n, 1.0, mse_ws, mse_bytes)
        gc.op_linear_weight_sgd(stream, w, p, x, rows, width, width, lr)
        gc.op_bias_sgd(stream, b, p, rows, width, lr)
        return
    w1, b1, w2, b2 = params
    gc.op_linear(stream, h, x, w1, b1, rows, width, width, 1 | t)
    gc.op_linear(stream, p, h, w2, b2, rows, width, width, t)
    gc.op_mse(stream, loss, p, p, y, n, 1.0, mse_ws, mse_bytes)
    gc.op_linear_backward_input(stream, dh, p, w2, rows, width, width)
    gc.op_relu_backward(stream, dh, dh, h, n)
    gc.op_linear_weight_sgd(stream, w2, p, h, rows, width, width, lr)
    gc.op_bias_sgd(stream, b2, p, rows, width, lr)
    gc.op_linear_weight_sgd(stream, w1, dh, x, rows, width, width, lr)
    gc.op_bias_sgd(stream, b1, dh, rows, width, lr)
