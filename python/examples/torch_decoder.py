"""A GPT-style decoder (4 layers, width 512, 8 heads, a KV cache of 1024
positions, scaled_dot_product_attention; random weights) whose one-token
decode step is served through graphcore.torch at batch 1, 4, 16 and 64,
then a 64-token greedy decode, and the same decode as one launch (a WHILE
node: graphcore.torch.loop) that stops at an end token:

    g = graphcore.torch.graph(model, (tokens, positions), buckets=[1, 4, 16, 64])
    next_tokens = g(tokens, positions)     # writes the KV cache in place

The step's inputs (the batch's last tokens and their positions) are bound
at each call; the KV cache is the model's own buffer, updated in place by
every call (as the parameters of a training step are). The step returns
the greedy next tokens, over the pool: the loop feeds them straight back
as the next call's input, bound with no copy. The tokens are checked
against the same loop run eagerly (bitwise equal) and the step's time per
token printed beside the eager loop's.

    python3 python/examples/torch_decoder.py
(needs PyTorch >= 2.6 with CUDA; without PyTorch or a GPU it says so and
exits with status 2). ``Decoder`` runs on the CPU too (the tests check it
there).
"""
import copy
import os
import sys
import time

import _torch_common as tc

VOCAB, WIDTH, HEADS, LAYERS, POSITIONS, MAX_BATCH = 1000, 512, 8, 4, 1024, 64
BUCKETS = (1, 4, 16, 64)
TOKENS = 64


def make_decoder(torch, vocab=VOCAB, width=WIDTH, heads=HEADS, layers=LAYERS,
                 positions=POSITIONS, max_batch=MAX_BATCH):
    """The decoder module (built here so that importing this file needs no
    torch)."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                     nn.Linear(4 * width, width))

        def forward(self, h, kc, vc, where, mask):
            b = h.shape[0]
            q, k, v = self.qkv(self.ln1(h)).view(b, 3, heads, width // heads).unbind(1)
            kc.scatter_(2, where, k.unsqueeze(2))  # this step's key and value
            vc.scatter_(2, where, v.unsqueeze(2))  # at each row's position
            a = F.scaled_dot_product_attention(q.unsqueeze(2), kc, vc, attn_mask=mask)
            h = h + self.proj(a.reshape(b, width))
            return h + self.mlp(self.ln2(h))

    class Decoder(nn.Module):
        """forward(tokens, pos): tokens (B,) int64, the rows' last tokens;
        pos (B,) int64, their positions. Writes each layer's key and value
        at pos in the KV cache (rows 0..B-1) and returns the greedy next
        tokens (B,) int64."""

        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, width)
            self.pos = nn.Embedding(positions, width)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            shape = (layers, max_batch, heads, positions, width // heads)
            self.register_buffer("k_cache", torch.zeros(shape))
            self.register_buffer("v_cache", torch.zeros(shape))
            self.register_buffer("steps", torch.arange(positions))

        def forward(self, tokens, pos):
            b = tokens.shape[0]
            h = self.tok(tokens) + self.pos(pos)
            mask = (self.steps[None, :] <= pos[:, None])[:, None, None, :]  # (B, 1, 1, P)
            where = pos.view(b, 1, 1, 1).expand(b, heads, 1, width // heads)
            for i, blk in enumerate(self.blocks):
                h = blk(h, self.k_cache[i, :b], self.v_cache[i, :b], where, mask)
            return self.head(self.norm(h)).argmax(-1)

    return Decoder()


def decode(step, tokens, n):
    """n greedy tokens from `tokens` (B,) at positions 0..n-1: (B, n)."""
    torch = sys.modules["torch"]
    out = []
    pos = [torch.full_like(tokens, t) for t in range(n)]  # made before: no allocation per token
    for t in range(n):
        tokens = step(tokens, pos[t])
        out.append(tokens)
    return torch.stack(out, 1)


def loop_body(model, end):
    """The decode step as a loop body: its state is its inputs (the rows'
    last tokens, their positions, the tokens so far), updated in place;
    the flag: go on while some row has not produced ``end``."""
    def body(tokens, pos, out):
        nxt = model(tokens, pos)
        out.scatter_(1, pos.view(-1, 1), nxt.view(-1, 1))
        tokens.copy_(nxt)
        pos.add_(1)
        return (nxt != end).any().float()
    return body


def decode_until(step, tokens, n, end):
    """The eager reference of loop_body: at most n tokens, stopping once
    every row has produced ``end``. (B, n) int64, -1 after the stop."""
    torch = sys.modules["torch"]
    out = torch.full((tokens.shape[0], n), -1, dtype=torch.long, device=tokens.device)
    pos = torch.zeros_like(tokens)
    for t in range(n):
        tokens = step(tokens, pos)
        out[:, t] = tokens
        pos = pos + 1
        if not bool((tokens != end).any()):
            break
    return out


def profile(torch, model, start):
    """GC_PROFILE=1: the GPU time of one eager decode step at batch 1, by
    kernel (torch.profiler), to see where a step's time goes."""
    from torch.profiler import ProfilerActivity, profile as prof
    pos = torch.zeros_like(start)
    with torch.no_grad():
        model(start, pos)
        torch.cuda.synchronize()
        with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            model(start, pos)
            torch.cuda.synchronize()
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=15))


def issue_cpu_wall(torch, fn, reps=7):
    """Medians over ``reps`` runs of fn(), in microseconds: (the calling
    thread's wall time issuing fn(), its CPU time then (time.thread_time),
    the wall time until the GPU is done). Only the third synchronizes."""
    issue, cpu, wall = [], [], []
    for _ in range(reps):
        torch.cuda.synchronize()
        w0, c0 = time.perf_counter(), time.thread_time()
        fn()
        c1, w1 = time.thread_time(), time.perf_counter()
        torch.cuda.synchronize()
        w2 = time.perf_counter()
        issue.append((w1 - w0) * 1e6)
        cpu.append((c1 - c0) * 1e6)
        wall.append((w2 - w0) * 1e6)
    return tuple(sorted(v)[reps // 2] for v in (issue, cpu, wall))


def main():
    opened = tc.open_torch("torch_decoder.py")
    if opened is None:
        return 2
    torch, gct = opened
    model = make_decoder(torch).cuda().eval()
    eager = copy.deepcopy(model)
    example = (torch.randint(0, VOCAB, (MAX_BATCH,), device="cuda"),
               torch.zeros(MAX_BATCH, dtype=torch.long, device="cuda"))
    t = time.perf_counter()
    g = gct.graph(model, example, buckets=BUCKETS)
    print("captured buckets %s in %.0f ms" % (list(BUCKETS), (time.perf_counter() - t) * 1e3))
    failed = 0
    for b in BUCKETS:
        start = torch.randint(0, VOCAB, (b,), device="cuda")
        # The step's output is valid until the next call, which reads it:
        # keep a copy of each token for the comparison.
        got = decode(lambda x, p: g(x, p).clone(), start, TOKENS)
        with torch.no_grad():
            want = decode(eager, start, TOKENS)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        decode(g, start, TOKENS)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        with torch.no_grad():
            decode(eager, start, TOKENS)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        same = torch.equal(got, want)
        failed += not same
        print("batch %2d: %d greedy tokens %s the eager loop's; per token %.1f us (eager %.1f us)"
              % (b, TOKENS, "equal to" if same else "DIFFERENT from",
                 (t1 - t0) / TOKENS * 1e6, (t2 - t1) / TOKENS * 1e6))
    # The greedy decode loop in one launch (batch 1): a WHILE node runs the
    # step until the end token or 64 tokens.
    start = torch.randint(0, VOCAB, (1,), device="cuda")
    with torch.no_grad():
        free_run = decode(eager, start, TOKENS)
    end = int(free_run[0, TOKENS // 3])  # a token the run does produce
    with torch.no_grad():
        want = decode_until(eager, start, TOKENS, end)
    state = (start.clone(), torch.zeros(1, dtype=torch.long, device="cuda"),
             torch.full((1, TOKENS), -1, dtype=torch.long, device="cuda"))
    lp = gct.loop(loop_body(model, end), state, max_iters=TOKENS)
    got = lp(*state)[2].clone()
    n = lp.iterations()
    ok = torch.equal(got, want) and n == int((want[0] >= 0).sum())
    failed += not ok
    # CPU against wall time: one launch of the loop against a Python loop
    # of one step call per token (the same n tokens). The CPU side is what
    # the calling thread spends issuing the work, timed around the calls
    # alone: a torch.cuda.synchronize() inside the CPU timer would count
    # CUDA's spin-wait for the GPU as CPU time and make both ways equal.
    pos = [torch.full((1,), t, dtype=torch.long, device="cuda") for t in range(n)]

    def python_loop():
        tok = start
        for t in range(n):
            tok = g(tok, pos[t])

    with torch.no_grad():
        python_loop()  # warm
        lp_issue, lp_cpu, lp_wall = issue_cpu_wall(torch, lambda: lp(*state))
        py_issue, py_cpu, py_wall = issue_cpu_wall(torch, python_loop)
    ratio = lp_issue / py_issue
    wall_ok = lp_wall <= py_wall
    print("decode loop (batch 1, end token %d): %d tokens in one launch, %s the eager loop's" %
          (end, n, "equal to" if ok else "DIFFERENT from"))
    print("  per token: issuing %.2f us (thread CPU %.2f us) against a Python loop of steps' "
          "%.1f us (%.1f us): %.3fx (target <= 0.05: %s); wall %.1f us against %.1f us (%.3fx: %s)"
          % (lp_issue / n, lp_cpu / n, py_issue / n, py_cpu / n, ratio,
             "met" if ratio <= 0.05 else "MISSED", lp_wall / n, py_wall / n, lp_wall / py_wall,
             "no worse" if wall_ok else "slower"))
    if os.environ.get("GC_PROFILE"):
        profile(torch, eager, start)
    lp.close()
    st = g.stats()
    print("modes %s; pool %.1f MB; %s" % (
        {b: s["mode"] for b, s in st["buckets"].items()}, st["pool_bytes"] / 1e6,
        "all ok" if not failed else "%d FAILED" % failed))
    g.close()
    return 1 if failed else 0


if __name__ == "__main__":
    tc.run(main)
