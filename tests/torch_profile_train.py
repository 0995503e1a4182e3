#!/usr/bin/env python3
"""A small PyTorch training loop for redline profile's check against torch.profiler (scripts/compare-profile
--against torch): the same loop is profiled by redline in one process and by torch.profiler in another (the two
would fight over CUPTI in one), and both breakdowns are classified by redline's own rules.

  torch_profile_train.py [--steps 20] [--warmup 5] [--layers 4] [--hidden 2048] [--heads 16] [--seq 2048]
                         [--batch 4] [--vocab 32000] [--torch-profile OUT.json]

The model: a token embedding, --layers pre-norm blocks (LayerNorm -> one nn.Linear for Q, K and V ->
F.scaled_dot_product_attention(is_causal=True) -> output nn.Linear -> + x; LayerNorm -> nn.Linear to 4 x hidden ->
GELU -> nn.Linear back -> + x), a final LayerNorm and untied logits; the mean cross-entropy. Trained with AdamW
(fused where this torch has it) under torch.autocast("cuda", dtype=torch.bfloat16) on one fixed batch of random
tokens, --warmup steps and then --steps steps.

Each step is one NVTX range "step" (torch.cuda.nvtx.range_push / range_pop), which redline profile finds its steps
by. The step ends in torch.cuda.synchronize() inside that range, so the GPU work a step launched lies inside the
step's range on the timeline (otherwise it would run on into the next step's range while the host launches ahead).

--torch-profile OUT.json runs the same loop under torch.profiler.profile (CPU and CUDA activities) with
schedule(wait=warmup - 1, warmup=1, active=steps, repeat=1), calling prof.step() after each step, and exports a
Chrome trace to OUT.json when the active steps end: torch.profiler's ProfilerStep#N spans then cover exactly the
--steps steps after the --warmup ones, as redline profile --skip WARMUP keeps them.

Exit status: 0 when it trained, 2 for a bad flag, 77 without PyTorch or a GPU (the reason on stderr), 1 if the
trace was not written.
"""
import argparse
import os
import statistics
import sys
import time

SEED = 0


def positive(text):
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return value


def parse_flags(argv):
    parser = argparse.ArgumentParser(prog="torch_profile_train.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=positive, default=20, help="steps after the warm-up (default 20)")
    parser.add_argument("--warmup", type=positive, default=5, help="warm-up steps first (default 5, at least 1)")
    parser.add_argument("--layers", type=positive, default=4, help="transformer blocks (default 4)")
    parser.add_argument("--hidden", type=positive, default=2048, help="model width (default 2048)")
    parser.add_argument("--heads", type=positive, default=16, help="attention heads (default 16)")
    parser.add_argument("--seq", type=positive, default=2048, help="sequence length (default 2048)")
    parser.add_argument("--batch", type=positive, default=4, help="sequences per step (default 4)")
    parser.add_argument("--vocab", type=positive, default=32000, help="vocabulary (default 32000)")
    parser.add_argument("--torch-profile", metavar="OUT.json",
                        help="run the loop under torch.profiler and export its Chrome trace here")
    args = parser.parse_args(argv)
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if args.torch_profile is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.torch_profile))):
        parser.error(f"--torch-profile '{args.torch_profile}': its folder does not exist")
    return args


def cannot_run(reason):
    print(f"torch_profile_train.py: skipped: {reason}", file=sys.stderr)
    sys.exit(77)


def build_model(torch, args):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            h = args.hidden
            self.norm1, self.norm2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv = nn.Linear(h, 3 * h, bias=False)
            self.out = nn.Linear(h, h, bias=False)
            self.up = nn.Linear(h, 4 * h, bias=False)
            self.down = nn.Linear(4 * h, h, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, args.heads, h // args.heads).permute(2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(attended.transpose(1, 2).reshape(b, s, h))
            return x + self.down(F.gelu(self.up(self.norm2(x))))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(args.vocab, args.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.norm = nn.LayerNorm(args.hidden)
            self.logits = nn.Linear(args.hidden, args.vocab, bias=False)

        def forward(self, tokens, targets):
            x = self.embedding(tokens)
            for block in self.blocks:
                x = block(x)
            logits = self.logits(self.norm(x))
            return F.cross_entropy(logits.reshape(-1, args.vocab).float(), targets.reshape(-1))

    return Model().cuda()


def make_optimizer(torch, model):
    try:
        return torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    except (TypeError, RuntimeError, ValueError):
        return torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=True)


def train(torch, args, prof=None):
    """Runs warm-up + steps steps; (step times in ms after the warm-up, first loss, last loss)."""
    torch.manual_seed(SEED)
    model = build_model(torch, args)
    optimizer = make_optimizer(torch, model)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
    targets = torch.roll(tokens, -1, dims=1)
    losses, times = [], []
    for i in range(args.warmup + args.steps):
        began = time.perf_counter()
        torch.cuda.nvtx.range_push("step")
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()  # the step's GPU work ends inside its range
        torch.cuda.nvtx.range_pop()
        if i >= args.warmup:
            times.append(1e3 * (time.perf_counter() - began))
        losses.append(loss.detach())
        if prof is not None:
            prof.step()
    return times, float(losses[0].item()), float(losses[-1].item())


def main(argv=None):
    args = parse_flags(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        cannot_run("PyTorch is not installed here")
    if not torch.cuda.is_available():
        cannot_run("PyTorch sees no GPU")
    if args.torch_profile is None:
        times, first, last = train(torch, args)
    else:
        from torch.profiler import ProfilerActivity, profile, schedule

        out = os.path.abspath(args.torch_profile)
        if os.path.exists(out):
            os.remove(out)  # a run that exports none must not be read as the last one's
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=args.warmup - 1, warmup=1, active=args.steps, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
            times, first, last = train(torch, args, prof)
        if not os.path.exists(out):
            print(f"torch_profile_train.py: torch.profiler exported no trace to {out}", file=sys.stderr)
            return 1
    print(f"torch_profile_train.py: {args.steps} steps after {args.warmup} warm-up, median step "
          f"{statistics.median(times):.2f} ms (host clock), loss {first:.4f} -> {last:.4f}"
          + ("" if args.torch_profile is None else f"; torch.profiler trace: {args.torch_profile}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
