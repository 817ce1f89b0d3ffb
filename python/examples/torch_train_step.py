"""The PyTorch notes' training step, as the notes write it (nn.Linear
1024 x 1024, batch 64, nn.MSELoss, torch.optim.SGD, random weights and
data), captured whole through graphcore.torch:

    s = graphcore.torch.step(train_step, (x, y), optimizer=opt)
    loss = s(x, y)     # forward, loss.backward(), optimizer.step(): one launch

The parameters, their gradients and the optimizer's state are updated in
place, where they live; each call binds the batch's own tensors (no copy
into static inputs). The same model is trained side by side with the notes'
recipe (warm-up on a side stream, torch.cuda.graph, static x and y
refreshed with copy_ and a replay per step) from the same initial weights
on the same batches; after 100 steps the weights must be bitwise equal.

    python3 python/examples/torch_train_step.py
(needs PyTorch >= 2.6 with CUDA; without PyTorch or a GPU it says so and
exits with status 2).
"""
import copy

import _torch_common as tc

N, D_IN, D_OUT, STEPS = 64, 1024, 1024, 100


def recipe(torch, model, opt, loss_fn, x, y):
    """The notes' recipe: warm-up on a side stream, then one capture."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return g, loss


def main():
    opened = tc.open_torch("torch_train_step.py")
    if opened is None:
        return 2
    torch, gct = opened
    ours = torch.nn.Linear(D_IN, D_OUT).cuda()
    theirs = copy.deepcopy(ours)
    loss_fn = torch.nn.MSELoss()
    # The targets come from a fixed teacher layer, so there is something to
    # learn and the loss falls (random targets would leave it flat); the
    # mean over 1024 outputs makes each step small, hence the learning rate.
    opt = torch.optim.SGD(ours.parameters(), lr=1.0)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=1.0)
    teacher = torch.nn.Linear(D_IN, D_OUT).cuda()
    with torch.no_grad():
        xs = [torch.randn(N, D_IN, device="cuda") for _ in range(8)]
        batches = [(x, teacher(x)) for x in xs]

    def train_step(x, y):
        loss = loss_fn(ours(x), y)
        loss.backward()
        opt.step()
        return loss

    s = gct.step(train_step, batches[0], optimizer=opt)
    sx, sy = batches[0][0].clone(), batches[0][1].clone()
    g, static_loss = recipe(torch, theirs, opt_theirs, loss_fn, sx, sy)

    first = None
    for i in range(STEPS):
        x, y = batches[i % len(batches)]
        loss = float(s(x, y))
        sx.copy_(x)
        sy.copy_(y)
        g.replay()
        first = loss if first is None else first
        if i % 25 == 0 or i == STEPS - 1:
            print("step %3d: loss %.6f (recipe %.6f)" % (i, loss, float(static_loss)))
    torch.cuda.synchronize()
    same_w = torch.equal(ours.weight, theirs.weight)
    same_b = torch.equal(ours.bias, theirs.bias)
    ok = same_w and same_b and loss < first
    st = s.stats()
    b = st["buckets"][N]
    print("after %d steps: weights %s, bias %s the recipe's; loss %.6f -> %.6f; inputs %s "
          "(uses %s); pool %.1f MB allocated, captured in %.1f ms; %s" % (
              STEPS, "bitwise equal to" if same_w else "DIFFERENT from",
              "bitwise equal to" if same_b else "DIFFERENT from", first, loss, b["mode"],
              b["arg_uses"], st["pool_bytes"] / 1e6, st["capture_s"] * 1e3,
              "ok" if ok else "FAILED"))
    s.close()
    return 0 if ok else 1


if __name__ == "__main__":
    tc.run(main)
