"""A character-level GPT (nanoGPT's model and training loop, made small) trained with ferrograd.

Data: examples/data/tiny_text.txt, public-domain English poems (1609-1923): Poe (The Raven, Annabel Lee),
Tennyson, Coleridge, Shelley, Keats, Blake, Wordsworth, Byron, Carroll, Whitman, Longfellow, Dickinson,
Kipling, Frost and twelve of Shakespeare's sonnets, typed from memory (small slips are possible).

    python3 examples/char_gpt.py [--steps 800] [--seed 1337] [--device cpu] [--compile] [--quick]
    FERROGRAD_EXAMPLE_BACKEND=torch python3 examples/char_gpt.py    # the same script on PyTorch

The model is nanoGPT's: token and position embeddings, pre-LayerNorm transformer blocks with
causal self-attention (F.scaled_dot_product_attention) and a GELU MLP, dropout, and an lm_head
tied to the token embedding. Training is AdamW with nanoGPT's weight-decay groups, a cosine
learning rate with warmup and gradient clipping; train/val losses are estimated every
100 steps (10 with --quick), and the model then writes text with temperature and top-k sampling.
"""

import argparse
import inspect
import math
import os
import time
from dataclasses import dataclass

if os.environ.get("FERROGRAD_EXAMPLE_BACKEND") == "torch":
    import torch
    import torch.nn as nn
    from torch.nn import functional as F
else:
    import ferrograd as torch
    import ferrograd.nn as nn
    from ferrograd.nn import functional as F

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tiny_text.txt")


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 66
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.2
    bias: bool = False  # no biases in Linears and LayerNorms: a little better and faster


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, in one batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0, is_causal=True
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: the token embedding and the output projection share one Parameter
        self.transformer.wte.weight = self.lm_head.weight

        self.apply(self._init_weights)
        # scaled init of the residual projections, per the GPT-2 paper
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of length {t} > block size {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)  # shape (t)

        tok_emb = self.transformer.wte(idx)  # (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)

        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            # inference: only the last position's logits are needed
            logits = self.lm_head(x[:, [-1], :])  # the list [-1] keeps the time dim
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        # 2-D parameters (matmul weights, embeddings) are decayed; biases and LayerNorm weights not
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """Extend idx (b, t) by max_new_tokens sampled tokens, feeding each prediction back in."""
        for _ in range(max_new_tokens):
            # crop the context to the last block_size tokens
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size :]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def get_lr(it, learning_rate, min_lr, warmup_iters, lr_decay_iters):
    """Linear warmup, then cosine decay down to min_lr."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it >= lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # from 1 down to 0
    return min_lr + coeff * (learning_rate - min_lr)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 800, 30 with --quick)")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument("--device", default="cpu", choices=["cpu"], help="only the CPU is supported")
    parser.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    parser.add_argument("--quick", action="store_true", help="a tiny model and a few steps (for tests)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="characters to generate")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    device = args.device
    if args.quick:
        config = GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=32, dropout=0.0)
        batch_size, steps, eval_interval, eval_iters = 8, 30, 10, 4
        learning_rate, min_lr, warmup_iters, max_new_tokens = 1e-2, 1e-3, 3, 100
    else:
        config = GPTConfig()
        batch_size, steps, eval_interval, eval_iters = 32, 800, 100, 20
        learning_rate, min_lr, warmup_iters, max_new_tokens = 3e-3, 3e-4, 50, 500
    steps = args.steps if args.steps is not None else steps
    max_new_tokens = args.max_new_tokens if args.max_new_tokens is not None else max_new_tokens
    warmup_iters = min(warmup_iters, steps // 10)
    weight_decay, beta1, beta2, grad_clip = 0.1, 0.9, 0.99, 1.0

    torch.manual_seed(args.seed)

    # the data: characters to integers, the first 90% for training, the rest for validation
    with open(DATA, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}

    def encode(s):
        return [stoi[c] for c in s]

    def decode(ids):
        return "".join(itos[i] for i in ids)

    data = torch.tensor(encode(text), dtype=torch.long, device=device)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    config.vocab_size = len(chars)
    print(f"{len(text):,} characters, vocabulary of {len(chars)}; {n:,} for training, {len(data) - n:,} for validation")

    def get_batch(split):
        source = train_data if split == "train" else val_data
        ix = torch.randint(len(source) - config.block_size - 1, (batch_size,), device=device)
        x = torch.stack([source[i : i + config.block_size] for i in ix.tolist()])
        y = torch.stack([source[i + 1 : i + 1 + config.block_size] for i in ix.tolist()])
        return x.to(device), y.to(device)

    model = GPT(config)
    model.to(device)
    print(f"number of parameters: {model.get_num_params() / 1e6:.2f}M")
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type="cpu")
    raw_model = model
    if args.compile:
        print("compiling the model...")
        model = torch.compile(model)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(eval_iters, device=device)
            for k in range(eval_iters):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    history = []  # (step, train loss, val loss)
    start = time.perf_counter()
    X, Y = get_batch("train")
    for it in range(steps + 1):
        lr = get_lr(it, learning_rate, min_lr, warmup_iters, lr_decay_iters=steps)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr

        if it % eval_interval == 0 or it == steps:
            losses = estimate_loss()
            history.append((it, losses["train"], losses["val"]))
            elapsed = time.perf_counter() - start
            print(f"step {it}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}, "
                  f"lr {lr:.2e}, {elapsed:.1f} s")
        if it == steps:
            break

        _, loss = model(X, Y)
        X, Y = get_batch("train")  # the next batch
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
    train_time = time.perf_counter() - start
    print(f"trained {steps} steps in {train_time:.1f} s ({1000 * train_time / max(steps, 1):.0f} ms/step with evals)")

    # generation: start from a newline and sample with temperature and top-k
    raw_model.eval()
    context = torch.tensor([encode("\n")], dtype=torch.long, device=device)
    out = raw_model.generate(context, max_new_tokens, temperature=0.8, top_k=20)
    sample = decode(out[0].tolist()[1:])
    print("---------- sample ----------")
    print(sample)
    print("----------------------------")
    print(f"total time {time.perf_counter() - start:.1f} s")
    return {"history": history, "sample": sample, "vocab": chars, "train_time": train_time}


if __name__ == "__main__":
    main()
