"""Differential fuzzer of random small TRAINING LOOPS, against PyTorch.

    python tools/fuzz_train.py --seeds 0:300          # one line per failing seed, then a summary
    python tools/fuzz_train.py --repro 17             # the program as a script, and its findings

tools/fuzz.py draws programs of single ops; this draws what users run: a model built from
nn modules, a loss, an optimizer (param groups now and then), a scheduler, gradient clipping or
accumulation, a few steps, an evaluation pass.  The program is Python source over `torch`, `nn`
and `F`, run once with PyTorch and once with tapegrad.  Both start from the same parameter values
(`init(model)` fills every parameter from a seeded numpy stream by name) and the same data; after
every step the loss, every parameter, every gradient and every buffer must agree (float64: rtol
1e-7; float32: rtol 2e-4), and a program that raises must raise the same builtin exception type
in both.  No dropout with p > 0 and no random draws inside the loop: the two random streams differ.

A finding prints as a runnable script (`--repro`): the same source with `import torch`, the
initial values drawn the same way.

    python tools/fuzz_train.py --compile --seeds 0:100   # compiled vs eager tapegrad

--compile runs each program twice under tapegrad, the second time with every
`loss_fn(model(X), Y)` as one function under tapegrad.compile (compiled_source): the records
must be equal bit for bit (np.array_equal, every dtype), and the same exception type raised.
From seed 20450 (WHOLE_STEP_FROM) a loop of the plain form - zero_grad, loss, backward, an
optional clipping, the optimizers' steps - runs as one whole-step function instead, compiled in
the second run (whole_step_lines): backward() and the optimizer's step are replayed too.

Seeds: the generator draws the original families, losses, optimizers and schedulers from the
seed's first stream exactly as before; a second stream (generate's `e`) adds the extensions
(Conv1d/ConvTranspose1d/pool stacks, PixelShuffle, Embedding(max_norm) and EmbeddingBag,
weight_norm / spectral_norm parametrizations, a custom autograd.Function, GRU/LSTM over packed
sequences, weight tying, SparseAdam, Adafactor, CyclicLR / PolynomialLR / SequentialLR /
ChainedScheduler, BatchNorm put in eval mode mid-training).  Seeds that draw none of them are
the programs of the first version; the others changed meaning with this extension.

A third stream ("s33-<seed>", session 33) draws whole new loops and loop modifiers: a GAN
(gen_gan: two models and optimizers, detach, requires_grad_ toggling, a gradient penalty through
autograd.grad(create_graph=True), WGAN weight clipping), torch.func-style training (gen_func:
functional_call with a parameter dict, func.grad_and_value, per-example gradients by
vmap(grad)), a tiny GPT decoder (gen_gpt: learned positions, causal attention by hand, by
scaled_dot_product_attention(is_causal=True) or by TransformerDecoderLayer, weight tying,
cross_entropy with label_smoothing and ignore_index), a module of raw Parameters with nn.init
calls (gen_custom), and, in the usual loop, add_param_group mid-training, the lr changed by hand
in param_groups, the optimizer's state_dict loaded into a fresh optimizer, in-place weight edits
under no_grad and clip_grad_value_.  About 40% of seeds draw one of the new models and about a
third of the rest a modifier: seeds 0-2999 changed meaning with this extension (the old
programs are no longer drawn exactly); new runs start at 3000.

Seeds from OPTIM_FROM (30,000; session 48) draw a family of their own (gen_optim_loop), the
lower seeds keeping their programs: a small MLP trained over a torch.utils.data.DataLoader
(TensorDataset / Subset / ConcatDataset / StackDataset, batch_size and drop_last, a sampler, a
batch_sampler or a collate_fn given; no shuffling) by one optimizer of every torch.optim kind
with its options drawn one by one (amsgrad, nesterov, maximize, foreach, differentiable,
capturable, weight_decay, decoupled_weight_decay, centered, ...), often two parameter groups
with options of their own, under a scheduler drawn from a wide table (MultiStepLR, OneCycleLR's
forms, CyclicLR's modes, CosineAnnealingWarmRestarts, SequentialLR, ChainedScheduler,
ReduceLROnPlateau's modes, ...) stepped per batch or per epoch; the loader's lengths, the
groups' lr and momentum and get_last_lr() are recorded with note(), and the optimizer's and
scheduler's state_dicts may be loaded into fresh ones between epochs.
"""
from __future__ import annotations

import argparse
import io
import os
import random
import re
import sys
import traceback
import warnings
import zlib

import numpy as np

# Run as `python tools/fuzz_train.py`, sys.path[0] is tools/: the tree's own tapegrad first, not
# the one the venv's editable install points at (another worktree's).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# -- the program generator ----------------------------------------------------------------------

ACTIVATIONS = ["nn.ReLU()", "nn.GELU()", "nn.GELU(approximate='tanh')", "nn.Tanh()", "nn.SiLU()",
               "nn.LeakyReLU(0.1)", "nn.ELU()", "nn.Softplus()", "nn.Mish()", "nn.Hardswish()",
               "nn.Sigmoid()", "nn.PReLU()", "nn.SELU()", "nn.CELU(0.5)", "nn.Hardtanh()",
               "nn.ReLU6()", "nn.LogSigmoid()", "nn.Softsign()", "nn.Tanhshrink()"]


class Program:
    """The source lines of one program and what its data needs: `x` (shape, kind: 'float' or
    'tokens' with a vocabulary size) and `y` (shape, kind: 'class' with a class count, 'float',
    'binary')."""

    def __init__(self, seed):
        self.seed = seed
        self.lines: list[str] = []
        self.x = self.y = None
        self.preamble: list[str] = []   # classes the model needs (a custom autograd.Function)
        self.classes = None             # a family that fixes the class count (weight tying)
        self.spectral = self.sparse = self.no_split = False
        self.loss = None                # a family's own loss (gpt: next-token cross_entropy)
        self.after_init: list[str] = [] # deterministic nn.init calls after init(model)

    def add(self, line):
        self.lines.append(line)

    def source(self):
        return "\n".join(self.lines)


def gen_mlp(r, p, n):
    feats = r.randint(1, 6)
    p.x = ((n, feats), "float")
    layers, width = [], feats
    for _ in range(r.randint(1, 3)):
        out = r.randint(2, 7)
        kind = r.random()
        # A bias right before a batch norm gets an exactly-zero gradient (rounding noise instead):
        # models leave it out, and so does this.
        layers.append(f"nn.Linear({width}, {out}, bias={kind >= 0.25 and r.random() < 0.8})")
        width = out
        if kind < 0.25:
            layers.append(f"nn.BatchNorm1d({width}, momentum={r.choice([0.1, 0.5, None])}, "
                          f"affine={r.random() < 0.8})")
        elif kind < 0.45:
            layers.append(f"nn.LayerNorm({width}, elementwise_affine={r.random() < 0.8})")
        elif kind < 0.5:
            layers.append("nn.Dropout(0.0)")
        layers.append(r.choice(ACTIVATIONS))
    return layers, width


def gen_cnn(r, p, n):
    cin, size = r.randint(1, 3), r.randint(5, 9)
    p.x = ((n, cin, size, size), "float")
    layers, c = [], cin
    for _ in range(r.randint(1, 2)):
        out = r.choice([2, 4, 6])
        groups = r.choice([g for g in (1, 2) if c % g == 0 and out % g == 0])
        k = r.choice([1, 2, 3])
        pad = r.choice([0, 1, "'same'"]) if k > 1 else 0
        stride = 1 if pad == "'same'" else r.choice([1, 1, 2])
        mode = r.choice(["'zeros'", "'zeros'", "'reflect'", "'circular'", "'replicate'"])
        if pad in (0, "'same'") or size <= 1:
            mode = "'zeros'"
        norm = r.random()
        layers.append(f"nn.Conv2d({c}, {out}, {k}, stride={stride}, padding={pad}, "
                      f"groups={groups}, padding_mode={mode}, bias={norm >= 0.55})")
        if pad == "'same'":
            pad = 0
            new = size
        else:
            new = (size + 2 * pad - k) // stride + 1
        size, c = new, out
        if norm < 0.3:
            layers.append(f"nn.BatchNorm2d({c})")
        elif norm < 0.45:
            layers.append(f"nn.GroupNorm({r.choice([g for g in (1, 2) if c % g == 0])}, {c})")
        elif norm < 0.55:
            layers.append(f"nn.InstanceNorm2d({c}, affine=True)")
        layers.append(r.choice(ACTIVATIONS[:8]))
        if size >= 4 and r.random() < 0.5:
            pool = r.choice(["nn.MaxPool2d(2)", "nn.AvgPool2d(2)", "nn.MaxPool2d(3, 1, 1)",
                             "nn.AvgPool2d(3, 2, 1, count_include_pad=False)", "nn.LPPool2d(2, 2)"])
            layers.append(pool)
            size = {"nn.MaxPool2d(2)": size // 2, "nn.AvgPool2d(2)": size // 2,
                    "nn.MaxPool2d(3, 1, 1)": size, "nn.LPPool2d(2, 2)": size // 2}.get(
                        pool, (size + 2 - 3) // 2 + 1)
    if r.random() < 0.5:
        out = r.choice([1, 2])
        layers.append(f"nn.AdaptiveAvgPool2d({out})" if r.random() < 0.6
                      else f"nn.AdaptiveMaxPool2d({out})")
        size = out
    layers.append("nn.Flatten()")
    return layers, c * size * size


def gen_conv1d(r, p, n):
    cin, length = r.randint(1, 3), r.randint(6, 12)
    p.x = ((n, cin, length), "float")
    out, k, dil = r.choice([2, 3, 4]), r.choice([2, 3]), r.choice([1, 2])
    layers = [f"nn.Conv1d({cin}, {out}, {k}, dilation={dil})", r.choice(ACTIVATIONS[:6])]
    length = length - dil * (k - 1)
    if r.random() < 0.5:
        layers.append(f"nn.MaxPool1d(2)")
        length //= 2
    layers.append("nn.Flatten()")
    return layers, out * length


def gen_autoencoder(r, p, n):
    """A convolutional autoencoder: Conv2d down, ConvTranspose2d or Upsample + Conv2d up."""
    c, size = r.randint(1, 2), r.choice([4, 6, 8])
    p.x = ((n, c, size, size), "float")
    hidden = r.choice([2, 3, 4])
    up = r.choice([f"nn.ConvTranspose2d({hidden}, {c}, 2, stride=2)",
                   f"nn.ConvTranspose2d({hidden}, {c}, 3, stride=2, padding=1, output_padding=1)",
                   f"nn.Upsample(scale_factor=2, mode={r.choice(['nearest', 'bilinear'])!r}), "
                   f"nn.Conv2d({hidden}, {c}, 3, padding=1)"])
    return [f"nn.Conv2d({c}, {hidden}, 3, stride=2, padding=1)", r.choice(ACTIVATIONS[:6]), up]


def gen_cell_loop(r, p, n):
    """A recurrent cell stepped by hand over time, as char-RNN scripts write it."""
    feats, length, hidden = r.randint(1, 4), r.randint(2, 5), r.choice([3, 4])
    p.x = ((n, length, feats), "float")
    cell = r.choice(["RNNCell", "GRUCell", "LSTMCell"])
    state = "(h, c)" if cell == "LSTMCell" else "h"
    init = ("h = torch.zeros(x.shape[0], {H}); c = torch.zeros_like(h)" if cell == "LSTMCell"
            else "h = torch.zeros(x.shape[0], {H})").format(H=hidden)
    step = "h, c = self.cell(x[:, t], (h, c))" if cell == "LSTMCell" else "h = self.cell(x[:, t], h)"
    return ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
            f"        self.cell = nn.{cell}({feats}, {hidden})",
            "        self.head = nn.Linear({H}, {{OUT}})".format(H=hidden),
            "    def forward(self, x):", f"        {init}",
            "        for t in range(x.shape[1]):", f"            {step}",
            "        return self.head(h)"]


def gen_attention(r, p, n):
    """nn.MultiheadAttention over embedded tokens with a key padding mask (or a causal mask)."""
    vocab, length, emb = r.randint(4, 9), r.randint(2, 5), r.choice([4, 6, 8])
    p.x = ((n, length), ("tokens", vocab))
    heads = r.choice([h for h in (1, 2) if emb % h == 0])
    mask = r.choice(["key_padding_mask=(x == 0)", "attn_mask=torch.triu(torch.ones(x.shape[1], "
                     "x.shape[1], dtype=torch.bool), 1)", "need_weights=False"])
    if "key_padding" in mask:
        # (a row of padding only would make the softmax all -inf: keep one real token per row)
        mask += " & (torch.arange(x.shape[1]) > 0)"
    return ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
            f"        self.emb = nn.Embedding({vocab}, {emb})",
            f"        self.attn = nn.MultiheadAttention({emb}, {heads}, batch_first=True, "
            f"bias={r.random() < 0.8})",
            f"        self.head = nn.Linear({emb}, {{OUT}})",
            "    def forward(self, x):", "        h = self.emb(x)",
            f"        h, _ = self.attn(h, h, h, {mask})",
            "        return self.head(h.mean(1))"]


def gen_sequence(r, p, n, module):
    """A model class over token ids: Embedding, then an RNN, a GRU, an LSTM or a transformer
    encoder layer, then a pooled Linear head.  Returns the class source and the head width."""
    vocab, length, emb = r.randint(4, 9), r.randint(2, 6), r.choice([4, 6, 8])
    p.x = ((n, length), ("tokens", vocab))
    pad = r.choice([None, 0])
    lines = ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
             f"        self.emb = nn.Embedding({vocab}, {emb}, padding_idx={pad})"]
    if module == "transformer":
        heads = r.choice([h for h in (1, 2, 4) if emb % h == 0])
        lines.append(f"        self.body = nn.TransformerEncoderLayer({emb}, {heads}, "
                     f"dim_feedforward={r.choice([8, 12])}, dropout=0.0, batch_first=True, "
                     f"norm_first={r.random() < 0.5}, activation={r.choice(['relu', 'gelu'])!r})")
        width = emb
        body = "h = self.body(h)"
    else:
        cls = {"rnn": "nn.RNN", "gru": "nn.GRU", "lstm": "nn.LSTM"}[module]
        hidden, layers, bi = r.choice([3, 5]), r.choice([1, 2]), r.random() < 0.4
        extra = f", nonlinearity='relu'" if module == "rnn" and r.random() < 0.3 else ""
        proj = ""
        if module == "lstm" and r.random() < 0.2:
            proj = f", proj_size={hidden - 1}"
            out_hidden = hidden - 1
        else:
            out_hidden = hidden
        lines.append(f"        self.body = {cls}({emb}, {hidden}, num_layers={layers}, "
                     f"batch_first=True, bidirectional={bi}{extra}{proj})")
        width = out_hidden * (2 if bi else 1)
        body = "h, _ = self.body(h)"
    pool = r.choice(["h.mean(1)", "h[:, -1]", "h.amax(1)", "h.sum(1)"])
    lines += ["        self.head = nn.Linear({w}, {{OUT}})".format(w=width),
              "    def forward(self, x):", "        h = self.emb(x)", f"        {body}",
              f"        return self.head({pool})"]
    return lines



# -- extended families (drawn from the seed's second stream, see generate) ------------------------

STE_SRC = ["class STE(torch.autograd.Function):",
           "    # a straight-through estimator: rounds forward, passes the gradient where |x| <= 1.5",
           "    @staticmethod",
           "    def forward(ctx, x):",
           "        ctx.save_for_backward(x)",
           "        return torch.round(x * 4) / 4",
           "    @staticmethod",
           "    def backward(ctx, g):",
           "        x, = ctx.saved_tensors",
           "        return g * (x.abs() <= 1.5).to(g.dtype)",
           "class Quant(nn.Module):",
           "    def forward(self, x):",
           "        return STE.apply(x)"]


def gen_conv1d_stack(r, p, n):
    """Conv1d / ConvTranspose1d / MaxPool1d / AvgPool1d (and BatchNorm1d over channels)."""
    c, length = r.randint(1, 3), r.randint(8, 14)
    p.x = ((n, c, length), "float")
    layers = []
    for _ in range(r.randint(1, 3)):
        kind = r.choice(["conv", "conv", "convT", "maxpool", "avgpool"])
        if kind in ("maxpool", "avgpool") and length < 3:
            kind = "conv"
        norm = r.random() < 0.25
        if kind == "conv":
            out, k, s = r.choice([2, 3, 4]), r.choice([1, 2, 3]), r.choice([1, 1, 2])
            pad = r.choice([0, 1]) if k > 1 else 0
            if (length + 2 * pad - k) // s + 1 < 1:
                s, pad = 1, 1
            # (no bias right before a batch norm: its gradient is rounding noise, see gen_mlp)
            layers.append(f"nn.Conv1d({c}, {out}, {k}, stride={s}, padding={pad}, "
                          f"bias={r.random() < 0.7 and not norm})")
            length, c = (length + 2 * pad - k) // s + 1, out
        elif kind == "convT":
            out, k, s = r.choice([2, 3]), r.choice([2, 3]), r.choice([1, 2])
            pad = r.choice([0, 1])
            op = 1 if s == 2 and r.random() < 0.5 else 0
            layers.append(f"nn.ConvTranspose1d({c}, {out}, {k}, stride={s}, padding={pad}, "
                          f"output_padding={op})")
            length, c = (length - 1) * s - 2 * pad + k + op, out
        elif kind == "maxpool":
            pool = r.choice(["nn.MaxPool1d(2)", "nn.MaxPool1d(3, 2, 1)", "nn.MaxPool1d(2, 1)"])
            layers.append(pool)
            length = {"nn.MaxPool1d(2)": length // 2, "nn.MaxPool1d(3, 2, 1)": (length - 1) // 2 + 1,
                      "nn.MaxPool1d(2, 1)": length - 1}[pool]
        else:
            pool = r.choice(["nn.AvgPool1d(2)", "nn.AvgPool1d(3, 1, 1, count_include_pad=False)",
                             "nn.AvgPool1d(3, 2, 1)"])
            layers.append(pool)
            length = {"nn.AvgPool1d(2)": length // 2,
                      "nn.AvgPool1d(3, 1, 1, count_include_pad=False)": length,
                      "nn.AvgPool1d(3, 2, 1)": (length - 1) // 2 + 1}[pool]
        if kind.startswith("conv"):
            if norm and kind == "conv":
                layers.append(f"nn.BatchNorm1d({c})")
            layers.append(r.choice(ACTIVATIONS[:8]))
    layers.append("nn.Flatten()")
    return layers, c * length


def gen_pixel_shuffle(r, p, n):
    c, size, h = r.randint(1, 2), r.randint(3, 5), r.choice([1, 2])
    p.x = ((n, c, size, size), "float")
    layers = [f"nn.Conv2d({c}, {4 * h}, 3, padding=1)", "nn.PixelShuffle(2)",
              r.choice(ACTIVATIONS[:6])]
    if r.random() < 0.5:
        layers += ["nn.PixelUnshuffle(2)", f"nn.Conv2d({4 * h}, 2, 1)"]
        width = 2 * size * size
    else:
        layers += ["nn.AvgPool2d(2)"]
        width = h * size * size
    layers.append("nn.Flatten()")
    return layers, width


def gen_param_mlp(r, p, n):
    """An MLP whose Linears are parametrized (weight_norm, spectral_norm) and which quantizes
    through a custom autograd.Function (straight-through estimator)."""
    feats = r.randint(2, 5)
    p.x = ((n, feats), "float")
    layers, width = [], feats
    for _ in range(r.randint(1, 3)):
        out = r.randint(2, 6)
        lin = f"nn.Linear({width}, {out})"
        wrap = r.random()
        if wrap < 0.35:
            lin = f"nn.utils.parametrizations.weight_norm({lin}, dim={r.choice([0, 1, None])})"
        elif wrap < 0.6:
            lin = f"nn.utils.parametrizations.spectral_norm({lin})"
            p.spectral = True
        layers.append(lin)
        width = out
        layers.append("Quant()" if r.random() < 0.35 else r.choice(ACTIVATIONS))
    if any(l == "Quant()" for l in layers):
        p.preamble += STE_SRC
    return layers, width


def gen_embedding(r, p, n):
    """Embedding(max_norm=...) or EmbeddingBag (2-D input, or 1-D with offsets; per-sample
    weights in sum mode)."""
    vocab, length, emb = r.randint(4, 9), r.randint(2, 5), r.choice([3, 4, 6])
    p.x = ((n, length), ("tokens", vocab))
    norm = r.choice(["None", "0.5", "0.8"])
    ntype = r.choice([2.0, 2.0, 1.0])
    if r.random() < 0.5:
        layer = (f"nn.Embedding({vocab}, {emb}, max_norm={norm}, norm_type={ntype}, "
                 f"padding_idx={r.choice([None, 0])})")
        body = "h = torch.tanh(self.emb(x)).mean(1)"
    else:
        mode = r.choice(["'sum'", "'mean'", "'max'"])
        pad = r.choice([None, 0]) if mode != "'max'" else None
        layer = (f"nn.EmbeddingBag({vocab}, {emb}, mode={mode}, max_norm={norm}, "
                 f"norm_type={ntype}, padding_idx={pad})")
        psw = ", per_sample_weights=torch.linspace(0.5, 1.5, x.numel()).reshape(x.shape)" \
            if mode == "'sum'" and r.random() < 0.5 else ""
        if r.random() < 0.5:
            body = f"h = self.emb(x{psw})"
        else:
            body = (f"h = self.emb(x.flatten(), torch.arange(0, x.numel(), x.shape[1])"
                    f"{psw.replace('.reshape(x.shape)', '')})")
    return ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
            f"        self.emb = {layer}", f"        self.head = nn.Linear({emb}, {{OUT}})",
            "    def forward(self, x):", f"        {body}", "        return self.head(h)"]


def gen_packed(r, p, n):
    """A GRU / LSTM over pack_padded_sequence of embedded tokens."""
    vocab, length, emb, hidden = r.randint(4, 9), r.randint(2, 5), r.choice([3, 4]), r.choice([3, 4])
    p.x = ((n, length), ("tokens", vocab))
    p.no_split = True     # the lengths are the whole batch's
    lens = [r.randint(1, length) for _ in range(n)]
    sort = r.random() < 0.5
    if sort:
        lens.sort(reverse=True)
    cls = r.choice(["GRU", "LSTM"])
    layers, bi = r.choice([1, 2]), r.random() < 0.4
    width = hidden * (2 if bi else 1)
    lines = ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
             f"        self.emb = nn.Embedding({vocab}, {emb})",
             f"        self.body = nn.{cls}({emb}, {hidden}, num_layers={layers}, "
             f"batch_first=True, bidirectional={bi})",
             f"        self.head = nn.Linear({width}, {{OUT}})",
             "    def forward(self, x):", "        h = self.emb(x)",
             f"        packed = nn.utils.rnn.pack_padded_sequence(h, {lens}, batch_first=True, "
             f"enforce_sorted={sort})",
             "        out, hn = self.body(packed)"]
    if r.random() < 0.5:
        lines += ["        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)",
                  f"        h = out.sum(1) / torch.tensor({lens}, dtype=out.dtype)[:, None]"]
    else:
        if cls == "LSTM":
            lines.append("        hn = hn[0]")
        lines.append("        h = torch.cat([hn[-2], hn[-1]], 1)" if bi else "        h = hn[-1]")
    lines.append("        return self.head(h)")
    return lines


def gen_tied(r, p, n):
    """A tiny language model whose output layer shares the embedding's weight."""
    vocab, length, emb = r.randint(3, 6), r.randint(2, 5), r.choice([3, 4, 6])
    p.x = ((n, length), ("tokens", vocab))
    p.classes = vocab
    return ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
            f"        self.emb = nn.Embedding({vocab}, {emb})",
            f"        self.mix = nn.Linear({emb}, {emb})",
            f"        self.head = nn.Linear({emb}, {vocab}, bias={r.random() < 0.5})",
            "        self.head.weight = self.emb.weight",
            "    def forward(self, x):",
            "        return self.head(torch.tanh(self.mix(self.emb(x).mean(1))))"]


def gen_sparse(r, p, n):
    """A sparse-gradient Embedding trained by SparseAdam, the rest by a dense optimizer."""
    vocab, length, emb = r.randint(4, 9), r.randint(2, 5), r.choice([3, 4])
    p.x = ((n, length), ("tokens", vocab))
    p.sparse = True
    return ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
            f"        self.emb = nn.Embedding({vocab}, {emb}, sparse=True)",
            f"        self.head = nn.Linear({emb}, {{OUT}})",
            "    def forward(self, x):", "        return self.head(torch.tanh(self.emb(x)).sum(1))"]


EXT_OPTIMIZERS = [
    "torch.optim.Adafactor({P}, lr=0.01)",
    "torch.optim.Adafactor({P}, lr=0.02, beta2_decay=-0.6, weight_decay=0.01)",
    "torch.optim.Adafactor({P}, lr=0.01, maximize=True, eps=(None, 1e-3))",
]

EXT_SCHEDULERS = [
    "torch.optim.lr_scheduler.CyclicLR(opt, base_lr=0.001, max_lr=0.02, step_size_up=2, "
    "mode={MODE}, cycle_momentum={CM})",
    "torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=3, power=2.0)",
    "torch.optim.lr_scheduler.SequentialLR(opt, [torch.optim.lr_scheduler.LinearLR(opt, "
    "start_factor=0.5, total_iters=2), torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)], "
    "milestones=[2])",
    "torch.optim.lr_scheduler.ChainedScheduler([torch.optim.lr_scheduler.ConstantLR(opt, "
    "factor=0.5, total_iters=2), torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])",
]

EXT_FAMILIES = {"conv1d_stack": gen_conv1d_stack, "pixel_shuffle": gen_pixel_shuffle,
                "param_mlp": gen_param_mlp, "embedding": gen_embedding, "packed": gen_packed,
                "tied": gen_tied, "sparse": gen_sparse}


LOSSES = {
    "ce": ("nn.CrossEntropyLoss(label_smoothing={ls})", "class"),
    "ce_w": ("nn.CrossEntropyLoss(weight=torch.linspace(0.5, 1.5, {C}))", "class"),
    "nll": ("lambda z, y: F.nll_loss(F.log_softmax(z, 1), y)", "class"),
    "mse": ("nn.MSELoss()", "float"),
    "l1": ("nn.L1Loss(reduction='sum')", "float"),
    "smoothl1": ("nn.SmoothL1Loss(beta=0.5)", "float"),
    "huber": ("nn.HuberLoss(delta=0.7)", "float"),
    "bce": ("nn.BCEWithLogitsLoss(pos_weight=torch.full(({C},), 1.5))", "binary"),
    "bce_sig": ("lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y)", "binary"),
    "kl": ("lambda z, y: F.kl_div(F.log_softmax(z, -1), F.softmax(y, -1), reduction='batchmean')",
           "float"),
    "mm": ("nn.MultiMarginLoss()", "class"),
    "gauss": ("lambda z, y: F.gaussian_nll_loss(z, y, torch.ones_like(z) * 0.5)", "float"),
}

OPTIMIZERS = [
    "torch.optim.SGD({P}, lr=0.05)",
    "torch.optim.SGD({P}, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)",
    "torch.optim.SGD({P}, lr=0.05, momentum=0.5, dampening=0.1)",
    "torch.optim.Adam({P}, lr=0.01)",
    "torch.optim.Adam({P}, lr=0.01, amsgrad=True, weight_decay=1e-2)",
    "torch.optim.AdamW({P}, lr=0.01, weight_decay=0.1)",
    "torch.optim.AdamW({P}, lr=0.01, betas=(0.8, 0.9), amsgrad=True)",
    "torch.optim.RMSprop({P}, lr=0.01)",
    "torch.optim.RMSprop({P}, lr=0.01, momentum=0.9, centered=True)",
    "torch.optim.Adagrad({P}, lr=0.1, lr_decay=0.01)",
    "torch.optim.Adadelta({P}, lr=1.0)",
    "torch.optim.Adamax({P}, lr=0.02)",
    "torch.optim.NAdam({P}, lr=0.01)",
    "torch.optim.NAdam({P}, lr=0.01, decoupled_weight_decay=True, weight_decay=0.01)",
    "torch.optim.RAdam({P}, lr=0.01)",
    "torch.optim.RAdam({P}, lr=0.01, decoupled_weight_decay=True, weight_decay=0.01)",
    "torch.optim.ASGD({P}, lr=0.01)",
    "torch.optim.Rprop({P}, lr=0.01)",
    "torch.optim.Adam({P}, lr=0.01, maximize=True)",
]

SCHEDULERS = [
    None, None,
    "torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)",
    "torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3)",
    "torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps={STEPS})",
    "torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)",
    "torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1 / (1 + e))",
    "torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)",
    "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)",
]



# -- session-33 extensions (drawn from the seed's third stream "s33-<seed>", see generate) -------

def gen_gpt(r, p, n):
    """A tiny GPT-style decoder over tokens: token + learned positional embeddings, one block of
    causal self-attention (written by hand with masked_fill(-inf) + softmax, or
    F.scaled_dot_product_attention(is_causal=True), or nn.TransformerDecoderLayer with a causal
    tgt_mask), an MLP, a final LayerNorm and a head (tied to the token embedding or not).
    Next-token targets: cross_entropy over every position with label smoothing and an
    ignore_index."""
    vocab, length, emb = r.randint(4, 8), r.randint(2, 5), r.choice([4, 6, 8])
    heads = r.choice([h for h in (1, 2) if emb % h == 0])
    p.x = ((n, length), ("tokens", vocab))
    p.y = ((n, length), ("class", vocab))
    tied, bias = r.random() < 0.5, r.random() < 0.6
    attn = r.choice(["hand", "sdpa", "decoder"])
    pos = r.choice(["param", "embedding"])
    lines = ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
             f"        self.tok = nn.Embedding({vocab}, {emb})",
             (f"        self.pos = nn.Parameter(torch.zeros({length}, {emb}))" if pos == "param"
              else f"        self.pos = nn.Embedding({length}, {emb})")]
    if attn == "decoder":
        lines.append(f"        self.block = nn.TransformerDecoderLayer({emb}, {heads}, "
                     f"dim_feedforward={r.choice([8, 12])}, dropout=0.0, batch_first=True, "
                     f"norm_first={r.random() < 0.5}, activation={r.choice(['relu', 'gelu'])!r})")
    else:
        lines += [f"        self.ln1 = nn.LayerNorm({emb})",
                  f"        self.qkv = nn.Linear({emb}, {3 * emb}, bias={bias})",
                  f"        self.proj = nn.Linear({emb}, {emb}, bias={bias})",
                  f"        self.ln2 = nn.LayerNorm({emb})",
                  f"        self.fc1 = nn.Linear({emb}, {2 * emb})",
                  f"        self.fc2 = nn.Linear({2 * emb}, {emb})"]
        if attn == "hand":
            lines.append(f"        self.register_buffer('mask', torch.tril(torch.ones({length}, "
                         f"{length})).view(1, 1, {length}, {length}))")
    lines += [f"        self.ln_f = nn.LayerNorm({emb})",
              f"        self.head = nn.Linear({emb}, {vocab}, bias=False)"]
    if tied:
        lines.append("        self.head.weight = self.tok.weight")
    lines += ["    def forward(self, x):", "        B, T = x.shape",
              ("        h = self.tok(x) + self.pos[:T]" if pos == "param"
               else "        h = self.tok(x) + self.pos(torch.arange(T))")]
    if attn == "decoder":
        lines.append("        mask = nn.Transformer.generate_square_subsequent_mask(T)")
        lines.append("        h = self.block(h, h, tgt_mask=mask, tgt_is_causal=True)")
    else:
        hd = emb // heads
        lines += ["        q, k, v = self.qkv(self.ln1(h)).split(%d, dim=2)" % emb,
                  f"        q = q.view(B, T, {heads}, {hd}).transpose(1, 2)",
                  f"        k = k.view(B, T, {heads}, {hd}).transpose(1, 2)",
                  f"        v = v.view(B, T, {heads}, {hd}).transpose(1, 2)"]
        if attn == "hand":
            lines += [f"        att = (q @ k.transpose(-2, -1)) * {hd ** -0.5!r}",
                      "        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float('-inf'))",
                      "        y = F.softmax(att, dim=-1) @ v"]
        else:
            lines.append("        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)")
        lines += [f"        y = y.transpose(1, 2).contiguous().view(B, T, {emb})",
                  "        h = h + self.proj(y)",
                  f"        h = h + self.fc2(F.{r.choice(['gelu', 'relu', 'silu'])}"
                  "(self.fc1(self.ln2(h))))"]
    lines.append("        return self.head(self.ln_f(h))")
    p.loss = (f"lambda z, y: F.cross_entropy(z.reshape(-1, {vocab}), y.reshape(-1), "
              f"label_smoothing={r.choice([0.0, 0.1, 0.2])}, "
              f"ignore_index={r.choice([-100, 0, vocab - 1])})")
    return lines


INIT_RANDOM = ["nn.init.kaiming_uniform_({W}, a=5 ** 0.5, generator=gen)",
               "nn.init.xavier_normal_({W}, generator=gen)",
               "nn.init.orthogonal_({W}, generator=gen)",
               "nn.init.trunc_normal_({W}, std=0.02, generator=gen)",
               "nn.init.normal_({W}, 0.0, 0.1, generator=gen)"]


def gen_custom(r, p, n):
    """A module of raw nn.Parameters filled by nn.init under a seeded generator (their random
    values differ between the libraries, so `init(model)` overwrites them; after it, the
    deterministic inits run: zeros_, ones_, constant_, eye_)."""
    feats, hidden = r.randint(2, 5), r.randint(2, 6)
    p.x = ((n, feats), "float")
    act = r.choice(["torch.tanh", "F.gelu", "F.softplus", "torch.sigmoid"])
    lines = ["class Net(nn.Module):", "    def __init__(self):", "        super().__init__()",
             f"        gen = torch.Generator().manual_seed({p.seed})",
             f"        self.w1 = nn.Parameter(torch.empty({feats}, {hidden}))",
             "        " + r.choice(INIT_RANDOM).format(W="self.w1"),
             f"        self.b1 = nn.Parameter(torch.empty({hidden}))",
             "        nn.init.uniform_(self.b1, -0.1, 0.1, generator=gen)",
             "        self.scale = nn.Parameter(torch.ones(()))",
             f"        self.mix = nn.Parameter(torch.empty({hidden}, {hidden}))",
             f"        self.w2 = nn.Parameter(torch.empty({hidden}, {{OUT}}))",
             "        " + r.choice(INIT_RANDOM).format(W="self.w2"),
             "    def forward(self, x):",
             f"        h = {act}(x @ self.w1 + self.b1) * self.scale",
             "        h = h + h @ self.mix",
             "        return h @ self.w2"]
    p.after_init = [r.choice(["nn.init.zeros_(model.b1)", "nn.init.constant_(model.b1, 0.05)"]),
                    r.choice(["nn.init.ones_(model.scale)", "nn.init.constant_(model.scale, 0.7)"]),
                    r.choice(["nn.init.eye_(model.mix)", "nn.init.zeros_(model.mix)"])]
    return lines


GAN_OPTS = ["torch.optim.Adam({P}, lr=0.01, betas=(0.5, 0.999))",
            "torch.optim.RMSprop({P}, lr=0.005)",
            "torch.optim.SGD({P}, lr=0.05, momentum=0.5)",
            "torch.optim.AdamW({P}, lr=0.01, betas=(0.0, 0.9), weight_decay=0.01)"]


def gen_gan(p, r, n, dtype):
    """A GAN loop: generator G and discriminator D, two optimizers, fake.detach() in D's step,
    D's requires_grad_ toggled off for G's step, a gradient penalty through
    autograd.grad(create_graph=True) (WGAN-GP) or weight clipping under no_grad (WGAN), or the
    non-saturating BCE loss.  A third of the critics score sequences by causal self-attention
    (scaled_dot_product_attention on one tensor: the penalty differentiates it twice)."""
    zdim, feats, hidden = r.randint(1, 4), r.randint(1, 4), r.randint(3, 6)
    p.x = ((n, zdim), "float")          # the (fixed) noise
    p.y = ((n, feats), "float")         # the real samples
    steps, style = r.randint(2, 4), r.choice(["bce", "wgan_gp", "wgan_clip", "bce_gp"])
    dact = r.choice(["nn.LeakyReLU(0.2)", "nn.Tanh()", "nn.Softplus()", "nn.SiLU()"])
    seq = r.choice([None, None, r.randint(2, 4)])     # a sequence critic's length
    p.add(f"torch.set_default_dtype({dtype})")
    if seq:
        p.y = ((n, seq, feats), "float")
        p.add("class Critic(nn.Module):")
        p.add("    def __init__(self):")
        p.add("        super().__init__()")
        p.add(f"        self.proj = nn.Linear({feats}, {hidden})")
        p.add(f"        self.out = nn.Linear({hidden}, 1)")
        p.add("    def forward(self, s):")
        p.add(f"        h = {dact}(self.proj(s))")
        p.add(f"        h = F.scaled_dot_product_attention(h, h, h, is_causal={r.random() < 0.5})")
        p.add("        return self.out(h.mean(1))")
        p.add(f"G = nn.Sequential(nn.Linear({zdim}, {hidden}), {r.choice(ACTIVATIONS[:8])}, "
              f"nn.Linear({hidden}, {seq * feats}), nn.Unflatten(1, ({seq}, {feats})))")
        p.add("D = Critic()")
    else:
        p.add(f"G = nn.Sequential(nn.Linear({zdim}, {hidden}), {r.choice(ACTIVATIONS[:8])}, "
              f"nn.Linear({hidden}, {feats}))")
        p.add(f"D = nn.Sequential(nn.Linear({feats}, {hidden}), {dact}, nn.Linear({hidden}, 1))")
    p.add("model = nn.ModuleDict({'G': G, 'D': D})")
    p.add("Gc, Dc = G, D")     # (the calls' names: --compile makes them torch.compile(G), (D))
    p.add("init(model)")
    p.add("loss_fn = lambda z, y: z.mean()")
    p.add("optG = " + r.choice(GAN_OPTS).format(P="G.parameters()"))
    p.add("optD = " + r.choice(GAN_OPTS).format(P="D.parameters()"))
    set_to_none = r.random() < 0.6
    p.add(f"for step in range({steps}):")
    p.add("    for q in D.parameters():")
    p.add("        q.requires_grad_(True)")
    p.add(f"    optD.zero_grad(set_to_none={set_to_none})")
    p.add("    fake = Gc(X)")
    p.add("    d_real, d_fake = Dc(Y), Dc(fake.detach())")
    if style.startswith("bce"):
        p.add("    lossD = F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real)) + "
              "F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))")
    else:
        p.add("    lossD = d_fake.mean() - d_real.mean()")
    if style.endswith("gp"):
        p.add(f"    alpha = torch.linspace(0.2, 0.8, {n}).reshape(-1, {'1, 1' if seq else '1'})")
        p.add("    xi = (alpha * Y + (1 - alpha) * fake.detach()).requires_grad_(True)")
        p.add("    gi, = torch.autograd.grad(Dc(xi).sum(), xi, create_graph=True)")
        p.add(f"    lossD = lossD + {r.choice([1.0, 10.0])} * ((gi.flatten(1).norm(2, dim=1) - 1) ** 2).mean()")
    p.add("    lossD.backward()")
    p.add("    record('gradsD', model, lossD)")
    p.add("    optD.step()")
    if style == "wgan_clip":
        p.add("    with torch.no_grad():")
        p.add("        for q in D.parameters():")
        p.add(f"            q.clamp_({-r.choice([0.1, 0.3])}, {r.choice([0.1, 0.3])})")
    p.add("    for q in D.parameters():")
    p.add("        q.requires_grad_(False)")
    p.add(f"    optG.zero_grad(set_to_none={set_to_none})")
    p.add("    d_gen = Dc(Gc(X))")
    p.add("    lossG = " + ("F.binary_cross_entropy_with_logits(d_gen, torch.ones_like(d_gen))"
                           if style.startswith("bce") else "-d_gen.mean()"))
    p.add("    lossG.backward()")
    p.add("    record('grads', model, lossG)")
    p.add("    optG.step()")
    p.add("    record('step', model, lossG)")
    p.add("model.eval()")
    p.add("with torch.no_grad():")
    p.add("    record('eval', model, Dc(Gc(X)).mean())")
    return p


def gen_func(p, r, n, dtype):
    """torch.func-style training of an MLP: functional_call with a parameter dict and
    autograd.grad (a hand-written SGD step), torch.func.grad of a functional loss, or per-example
    gradients by vmap(grad(...)) clipped and averaged (DP-SGD style), the last two stepped by an
    optimizer through .grad."""
    feats, hidden, classes = r.randint(1, 5), r.randint(2, 6), r.randint(2, 4)
    p.x = ((n, feats), "float")
    loss, target = r.choice([("F.mse_loss(z, y)", "float"), ("F.cross_entropy(z, y)", "class"),
                             ("F.huber_loss(z, y, delta=0.5)", "float"),
                             ("F.cross_entropy(z, y, label_smoothing=0.1)", "class")])
    p.y = ((n,), ("class", classes)) if target == "class" else ((n, classes), "float")
    steps, style = r.randint(2, 4), r.choice(["call", "grad", "vmap"])
    norm = r.choice(["", f"nn.LayerNorm({hidden}), "])
    p.add(f"torch.set_default_dtype({dtype})")
    p.add(f"model = nn.Sequential(nn.Linear({feats}, {hidden}), {norm}{r.choice(ACTIVATIONS[:8])}, "
          f"nn.Linear({hidden}, {classes}))")
    p.add("init(model)")
    p.add(f"loss_fn = lambda z, y: {loss}")
    if style == "call":
        lr = r.choice([0.05, 0.1])
        p.add("params = dict(model.named_parameters())")
        p.add(f"for step in range({steps}):")
        p.add("    loss = loss_fn(torch.func.functional_call(model, params, (X,)), Y)")
        p.add("    grads = torch.autograd.grad(loss, list(params.values()))")
        p.add("    for q, g in zip(params.values(), grads):")
        p.add("        q.grad = g")
        p.add("    record('grads', model, loss)")
        p.add("    with torch.no_grad():")
        p.add("        for q, g in zip(params.values(), grads):")
        p.add(f"            q.sub_({lr} * g)")
        p.add("    record('step', model, loss)")
    else:
        p.add("def compute_loss(ps, x, y):")
        if style == "grad":
            p.add("    return loss_fn(torch.func.functional_call(model, ps, (x,)), y)")
        else:
            p.add("    return loss_fn(torch.func.functional_call(model, ps, (x[None],)), y[None])")
        p.add("opt = " + r.choice(OPTIMIZERS[:8]).format(P="model.parameters()"))
        p.add(f"for step in range({steps}):")
        p.add("    params = {k: q.detach() for k, q in model.named_parameters()}")
        if style == "grad":
            p.add("    grads, loss = torch.func.grad_and_value(compute_loss)(params, X, Y)")
        else:
            p.add("    pe = torch.func.vmap(torch.func.grad(compute_loss), in_dims=(None, 0, 0))"
                  "(params, X, Y)")
            p.add(f"    norms = torch.stack([g.reshape({n}, -1).pow(2).sum(1) for g in pe.values()])"
                  ".sum(0).sqrt()")
            p.add(f"    factor = (1.0 / (norms + 1e-6)).clamp(max={r.choice([1.0, 2.0])})")
            p.add("    grads = {k: (g * factor.reshape(-1, *[1] * (g.ndim - 1))).mean(0) "
                  "for k, g in pe.items()}")
            p.add("    loss = loss_fn(model(X), Y)")
        p.add("    for k, q in model.named_parameters():")
        p.add("        q.grad = grads[k]")
        p.add("    record('grads', model, loss)")
        p.add("    opt.step()")
        p.add("    record('step', model, loss)")
    p.add("model.eval()")
    p.add("with torch.no_grad():")
    p.add("    record('eval', model, loss_fn(model(X), Y))")
    return p


# -- session-48 extension: optimizers, schedulers and data loading (seeds >= OPTIM_FROM) ----------
#
# A seed from OPTIM_FROM on draws a program of its own (the seeds below keep theirs): a small
# MLP trained over a DataLoader (TensorDataset, Subset, ConcatDataset, batch_size / drop_last,
# a sampler or a batch_sampler given, a collate_fn; no shuffling, whose order is the random
# stream's) by one optimizer whose options are drawn one by one (amsgrad, nesterov, maximize,
# foreach, differentiable, capturable, weight_decay, decoupled_weight_decay, centered, ...) and
# often two parameter groups with options of their own, under a scheduler drawn from a wide
# table (or two chained), stepped per batch or per epoch; get_last_lr() and the groups' lr and
# momentum are recorded after every step (note), and the optimizer's and scheduler's
# state_dicts may be loaded into fresh ones mid-run.  (Seeds 30,000-30,499 ran under a first
# draft that drew capturable=True, refused on the CPU, as often as the other options, and no
# fused=.)

OPTIM_FROM = 30_000

OPTIM_OPTIONS = {
    # name: {option: choices}; the first choice of each is the default-like one
    "SGD": {"lr": [0.05, 0.1], "momentum": [0.0, 0.9, 0.5], "dampening": [0.0, 0.1],
            "nesterov": [False, True], "weight_decay": [0.0, 0.01],
            "maximize": [False, True], "fused": [None, True], "foreach": [None, False, True],
            "differentiable": [False, True]},
    "Adam": {"lr": [0.01, 0.03], "betas": [(0.9, 0.999), (0.8, 0.9)], "eps": [1e-8, 1e-3],
             "amsgrad": [False, True], "weight_decay": [0.0, 0.05],
             "decoupled_weight_decay": [False, True], "maximize": [False, True],
             "fused": [None, True], "foreach": [None, False, True], "differentiable": [False, True],
             "capturable": [False, True]},
    "AdamW": {"lr": [0.01, 0.03], "betas": [(0.9, 0.999), (0.5, 0.99)],
              "weight_decay": [0.01, 0.0, 0.2], "amsgrad": [False, True],
              "maximize": [False, True], "fused": [None, True], "foreach": [None, False, True],
              "capturable": [False, True]},
    "Adamax": {"lr": [0.02], "betas": [(0.9, 0.999), (0.7, 0.8)], "weight_decay": [0.0, 0.1],
               "maximize": [False, True], "foreach": [None, False, True],
               "capturable": [False, True]},
    "NAdam": {"lr": [0.01], "momentum_decay": [0.004, 0.02], "weight_decay": [0.0, 0.05],
              "decoupled_weight_decay": [False, True], "maximize": [False, True],
              "foreach": [None, False, True], "capturable": [False, True]},
    "RAdam": {"lr": [0.01], "weight_decay": [0.0, 0.05], "decoupled_weight_decay": [False, True],
              "maximize": [False, True], "foreach": [None, False, True],
              "capturable": [False, True]},
    "Adagrad": {"lr": [0.1, 0.05], "lr_decay": [0.0, 0.05], "weight_decay": [0.0, 0.02],
                "initial_accumulator_value": [0.0, 0.3], "eps": [1e-10, 1e-4],
                "maximize": [False, True], "fused": [None, True], "foreach": [None, False, True]},
    "Adadelta": {"lr": [1.0, 0.5], "rho": [0.9, 0.6], "weight_decay": [0.0, 0.02],
                 "maximize": [False, True], "foreach": [None, False, True],
                 "capturable": [False, True]},
    "RMSprop": {"lr": [0.01], "alpha": [0.99, 0.8], "momentum": [0.0, 0.5],
                "centered": [False, True], "weight_decay": [0.0, 0.02],
                "maximize": [False, True], "foreach": [None, False, True],
                "capturable": [False, True]},
    "Rprop": {"lr": [0.01, 0.05], "etas": [(0.5, 1.2), (0.3, 1.5)],
              "step_sizes": [(1e-6, 50), (1e-3, 0.02)], "maximize": [False, True],
              "foreach": [None, False, True], "capturable": [False, True]},
    "ASGD": {"lr": [0.01, 0.05], "lambd": [1e-4, 0.05], "alpha": [0.75, 0.5],
             "t0": [1e6, 1.0], "weight_decay": [0.0, 0.02], "maximize": [False, True],
             "foreach": [None, False, True], "capturable": [False, True]},
    "Adafactor": {"lr": [0.01, 0.02], "beta2_decay": [-0.8, -0.5], "weight_decay": [0.0, 0.01],
                  "maximize": [False, True], "foreach": [None, False, True]},
}

# schedulers: (source with {opt}, {E} epochs, {B} batches per epoch, stepped per 'batch' or
# 'epoch', needs momentum in the optimizer's groups)
OPTIM_SCHEDULERS = [
    ("StepLR({opt}, step_size={k}, gamma=0.5)", "epoch"),
    ("MultiStepLR({opt}, milestones=[1, {k}, {k}], gamma=0.3)", "batch"),
    ("ExponentialLR({opt}, gamma=0.8)", "batch"),
    ("MultiplicativeLR({opt}, lambda e: 0.9)", "batch"),
    ("LambdaLR({opt}, lambda e: 1.0 / (1 + e))", "batch"),
    ("ConstantLR({opt}, factor=0.4, total_iters={k})", "batch"),
    ("LinearLR({opt}, start_factor=0.25, end_factor=0.9, total_iters={k})", "batch"),
    ("PolynomialLR({opt}, total_iters={k}, power=0.5)", "batch"),
    ("CosineAnnealingLR({opt}, T_max={k}, eta_min=0.001)", "batch"),
    ("CosineAnnealingWarmRestarts({opt}, T_0=2, T_mult={m}, eta_min=0.0005)", "batch"),
    ("OneCycleLR({opt}, max_lr=0.05, total_steps={T}, pct_start=0.4, "
     "anneal_strategy={anneal!r}, three_phase={three}, cycle_momentum={cm})", "batch"),
    ("OneCycleLR({opt}, max_lr=0.05, epochs={E}, steps_per_epoch={B}, div_factor=5.0, "
     "final_div_factor=50.0, cycle_momentum={cm})", "batch"),
    ("CyclicLR({opt}, base_lr=0.001, max_lr=0.03, step_size_up=2, step_size_down={k}, "
     "mode={mode!r}, gamma=0.9, cycle_momentum={cm})", "batch"),
    ("SequentialLR({opt}, [lr_scheduler.ConstantLR({opt}, factor=0.5, total_iters=2), "
     "lr_scheduler.ExponentialLR({opt}, gamma=0.85)], milestones=[{k}])", "batch"),
    ("ChainedScheduler([lr_scheduler.StepLR({opt}, step_size=2, gamma=0.5), "
     "lr_scheduler.LinearLR({opt}, start_factor=0.5, total_iters={k})])", "batch"),
    ("ReduceLROnPlateau({opt}, mode={pmode!r}, factor=0.5, patience={pat}, "
     "threshold={thr}, threshold_mode={tmode!r}, cooldown={cool}, min_lr={minlr})", "plateau"),
]


def gen_optim_loop(seed, r, p):
    """Program `seed` of OPTIM_FROM's family (see above), drawn from r into p."""
    dtype = "torch.float64" if r.random() < 0.75 else "torch.float32"
    p.add(f"torch.set_default_dtype({dtype})")
    feats, hidden, classes = r.randint(1, 4), r.randint(2, 5), r.randint(2, 3)
    n = r.randint(4, 9)
    p.x = ((n, feats), "float")
    p.y = ((n,), ("class", classes))
    p.add(f"model = nn.Sequential(nn.Linear({feats}, {hidden}), {r.choice(ACTIVATIONS[:6])}, "
          f"nn.Linear({hidden}, {classes}))")
    p.add("init(model)")
    p.add(f"loss_fn = {r.choice(['nn.CrossEntropyLoss()', 'nn.MultiMarginLoss()'])}")
    # the data: a dataset built from X, Y, loaded in a fixed order
    p.add("D = torch.utils.data")
    ds = r.choice(["tensor", "tensor", "subset", "concat", "stack"])
    if ds == "subset":
        keep = sorted(r.sample(range(n), r.randint(2, n)), key=lambda _: r.random())
        p.add(f"ds = D.Subset(D.TensorDataset(X, Y), {keep})")
    elif ds == "concat":
        cut = r.randint(1, n - 1)
        p.add(f"ds = D.ConcatDataset([D.TensorDataset(X[:{cut}], Y[:{cut}]), "
              f"D.TensorDataset(X[{cut}:], Y[{cut}:])])")
    elif ds == "stack":
        p.add("ds = D.StackDataset(X, Y)")
    else:
        p.add("ds = D.TensorDataset(X, Y)")
    bs, drop = r.randint(1, 4), r.random() < 0.4
    how = r.choice(["plain", "plain", "sampler", "batch_sampler", "collate"])
    if how == "sampler":
        p.add(f"loader = D.DataLoader(ds, batch_size={bs}, drop_last={drop}, "
              f"sampler=D.SequentialSampler(ds))")
    elif how == "batch_sampler":
        p.add(f"loader = D.DataLoader(ds, batch_sampler=D.BatchSampler(range(len(ds)), {bs}, "
              f"{drop}))")
    elif how == "collate":
        p.add(f"loader = D.DataLoader(ds, batch_size={bs}, drop_last={drop}, collate_fn=lambda "
              f"b: (torch.stack([x for x, _ in b]), torch.stack([y for _, y in b])))")
    else:
        p.add(f"loader = D.DataLoader(ds, batch_size={bs}, drop_last={drop})")
    p.add("note('loader', [len(ds), len(loader)] + [len(b[0]) for b in loader])")
    # the optimizer: its options drawn one by one, the second group's own lr / weight decay
    name = r.choice(sorted(OPTIM_OPTIONS))
    opts = {}
    for key, choices in OPTIM_OPTIONS[name].items():
        # (capturable=True is refused on the CPU at the first step: seldom drawn)
        if key == "lr" or r.random() < (0.08 if key == "capturable" else 0.45):
            opts[key] = r.choice(choices)
    if name == "SGD" and opts.get("nesterov") and r.random() < 0.8:
        opts["momentum"], opts["dampening"] = 0.9, 0.0    # (mostly the valid form)
    if opts.get("differentiable") and opts.get("foreach") and r.random() < 0.8:
        opts["foreach"] = False
    kwargs = ", ".join(f"{k}={v!r}" for k, v in opts.items())
    if r.random() < 0.5:
        second = {}
        for key in r.sample(sorted(k for k in OPTIM_OPTIONS[name]
                                   if k in ("lr", "weight_decay", "momentum", "betas",
                                            "maximize", "amsgrad", "nesterov", "eps",
                                            "dampening", "rho", "alpha", "etas")),
                            r.randint(1, 2)):
            second[key] = r.choice(OPTIM_OPTIONS[name][key])
        if name == "SGD" and second.get("nesterov"):
            second["momentum"], second["dampening"] = 0.9, 0.0
        params = ("[{'params': model[0].parameters()}, {'params': model[2].parameters(), "
                  + ", ".join(f"{k!r}: {v!r}" for k, v in second.items()) + "}]")
    else:
        params = "model.parameters()"
    ctor = f"torch.optim.{name}({params}, {kwargs})"
    p.add(f"opt = {ctor}")
    epochs = r.randint(2, 3)
    batches = n // bs if drop else -(-n // bs)
    if ds == "subset":
        kept = len(keep)
        batches = kept // bs if drop else -(-kept // bs)
    has_momentum = "momentum" in opts or name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam")
    sched_src, per = r.choice(OPTIM_SCHEDULERS)
    if "cycle_momentum" in sched_src and not has_momentum:
        sched_src = sched_src.replace("cycle_momentum={cm}", "cycle_momentum=False")
    if name == "Adafactor" and ("Cyclic" in sched_src or "OneCycle" in sched_src):
        sched_src = sched_src.replace("cycle_momentum={cm}", "cycle_momentum=False")
    total = max(epochs * max(batches, 1), 1)
    fmt = dict(opt="opt", k=r.randint(1, 4), m=r.choice([1, 2]), T=total + r.choice([0, 0, 2]),
               anneal=r.choice(["cos", "linear"]), three=r.random() < 0.4,
               cm=r.random() < 0.6, mode=r.choice(["triangular", "triangular2", "exp_range"]),
               E=epochs, B=max(batches, 1), pmode=r.choice(["min", "max"]), pat=r.randint(0, 2),
               thr=r.choice([1e-4, 0.1]), tmode=r.choice(["rel", "abs"]),
               cool=r.randint(0, 1), minlr=r.choice(["0.0", "1e-3", "[1e-3, 2e-3]"]))
    if "[" in fmt["minlr"] and params == "model.parameters()":
        fmt["minlr"] = "1e-3"
    sched = "lr_scheduler." + sched_src.format(**fmt)
    p.add("lr_scheduler = torch.optim.lr_scheduler")
    p.add(f"sched = {sched}")
    p.add("note('lr0', sched.get_last_lr() if hasattr(sched, 'get_last_lr') else "
          "[g['lr'] for g in opt.param_groups])")
    roundtrip = r.random() < 0.4
    p.add(f"for epoch in range({epochs}):")
    if roundtrip:
        # the optimizer's and the scheduler's states into fresh ones (a resumed run)
        p.add(f"    if epoch == {r.randint(1, epochs - 1)}:")
        p.add("        osd, ssd = opt.state_dict(), sched.state_dict()")
        p.add(f"        opt = {ctor}")
        p.add("        opt.load_state_dict(osd)")
        p.add(f"        sched = {sched}")
        p.add("        sched.load_state_dict(ssd)")
        p.add("        note('resumed', [g['lr'] for g in opt.param_groups])")
    p.add("    for xb, yb in loader:")
    p.add("        opt.zero_grad()")
    p.add("        loss = loss_fn(model(xb), yb)")
    p.add("        loss.backward()")
    p.add("        opt.step()")
    if per == "batch":
        p.add("        sched.step()")
    p.add("        record('step', model, loss)")
    p.add("        note('lr', [g['lr'] for g in opt.param_groups] + "
          "[g.get('momentum', g.get('betas', (0.0,))[0]) for g in opt.param_groups])")
    if per == "epoch":
        p.add("    sched.step()")
    elif per == "plateau":
        p.add("    sched.step(loss.item())")
    p.add("    note('last_lr', sched.get_last_lr())")
    p.add("model.eval()")
    p.add("with torch.no_grad():")
    p.add("    record('eval', model, loss_fn(model(X), Y))")
    return p


def generate(seed) -> Program:
    """Program `seed`.  Its draws come from two streams: `r` (the seed) draws what the first
    version of this generator drew, in the same order; `e` (the string "ext-<seed>") draws the
    extensions: about half the seeds swap the model for an extended family, and independently a
    seed may swap its optimizer (Adafactor) or scheduler (CyclicLR, PolynomialLR, SequentialLR,
    ChainedScheduler), or put its BatchNorms in eval mode mid-training.  A seed with none of
    these is the program the first version drew."""
    r = random.Random(seed)
    if seed >= OPTIM_FROM:
        return gen_optim_loop(seed, r, Program(seed))
    e = random.Random(f"ext-{seed}")
    s = random.Random(f"s33-{seed}")
    kind = s.random()
    mods = [s.random() for _ in range(5)]   # the loop's session-33 modifiers, drawn below
    p = Program(seed)
    n = r.choice([1, 2, 3, 4, 6])
    dtype = "torch.float64" if r.random() < 0.8 else "torch.float32"
    if kind < 0.1:
        return gen_gan(p, s, n, dtype)
    if kind < 0.2:
        return gen_func(p, s, n, dtype)
    p.add(f"torch.set_default_dtype({dtype})")
    family = r.choice(["mlp", "mlp", "cnn", "conv1d", "rnn", "gru", "lstm", "transformer",
                       "autoencoder", "cell", "attention"])
    if e.random() < 0.5:
        family = e.choice(sorted(EXT_FAMILIES))
    if kind < 0.32:
        family = "gpt"
    elif kind < 0.4:
        family = "custom"
    loss_name = r.choice(sorted(LOSSES))
    loss_src, target = LOSSES[loss_name]
    classes = r.randint(2, 4)
    if family in ("gpt", "custom"):
        for line in {"gpt": gen_gpt, "custom": gen_custom}[family](s, p, n):
            p.add(line.replace("{OUT}", str(classes)))
        p.add("model = Net()")
    elif family in EXT_FAMILIES:
        made = EXT_FAMILIES[family](e, p, n)
        classes = p.classes or classes
        lines = made if isinstance(made, list) else None   # a Net class, or (layers, width)
        if p.preamble:
            for line in p.preamble:
                p.add(line)
        if lines is None:
            layers, width = made
            layers.append(f"nn.Linear({width}, {classes})")
            p.add("model = nn.Sequential(\n    " + ",\n    ".join(layers) + ")")
        else:
            for line in lines:
                p.add(line.replace("{OUT}", str(classes)))
            p.add("model = Net()")
    elif family == "autoencoder":
        p.add("model = nn.Sequential(\n    " + ",\n    ".join(gen_autoencoder(r, p, n)) + ")")
        loss_src, target = r.choice([("nn.MSELoss()", "input"), ("nn.L1Loss()", "input")])
    elif family in ("cell", "attention"):
        for line in {"cell": gen_cell_loop, "attention": gen_attention}[family](r, p, n):
            p.add(line.replace("{OUT}", str(classes)))
        p.add("model = Net()")
    elif family in ("mlp", "cnn", "conv1d"):
        layers, width = {"mlp": gen_mlp, "cnn": gen_cnn, "conv1d": gen_conv1d}[family](r, p, n)
        layers.append(f"nn.Linear({width}, {classes})")
        p.add("model = nn.Sequential(\n    " + ",\n    ".join(layers) + ")")
    else:
        for line in gen_sequence(r, p, n, family):
            p.add(line.replace("{OUT}", str(classes)))
        p.add("model = Net()")
    p.y = p.y or (((n,), ("class", classes)) if target == "class" else
           (p.x[0], "float") if target == "input" else ((n, classes), target))
    p.add("init(model)")
    for line in p.after_init:
        p.add(line)
    if p.spectral:
        # spectral_norm starts its power iteration from a random u, v: both the same here
        p.add("for m in model.modules():")
        p.add("    if isinstance(m, nn.Linear) and hasattr(m, 'parametrizations'):")
        p.add("        for pz in m.parametrizations.weight:")
        p.add("            if hasattr(pz, '_u'):")
        p.add("                fill(pz._u, 'u'); fill(pz._v, 'v')")
    p.add("loss_fn = " + (p.loss or loss_src.format(ls=r.choice([0.0, 0.1]), C=classes)))
    params = "model.parameters()"
    if r.random() < 0.25:
        p.add("decay = [q for n_, q in model.named_parameters() if q.ndim > 1]")
        p.add("no_decay = [q for n_, q in model.named_parameters() if q.ndim <= 1]")
        params = "[{'params': decay}, {'params': no_decay, 'weight_decay': 0.0, 'lr': 0.003}]"
    if r.random() < 0.15:
        p.add("next(iter(model.parameters())).requires_grad_(False)")
    lbfgs = r.random() < 0.08 and not p.sparse
    ext_opt = e.random() < 0.15
    add_group = False
    if p.sparse:
        p.add("opt = torch.optim.SparseAdam(model.emb.parameters(), lr=0.01)")
        p.add("opt2 = " + (e.choice(EXT_OPTIMIZERS) if ext_opt else r.choice(OPTIMIZERS)).format(
            P="model.head.parameters()"))
    elif lbfgs:
        p.add("opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=3"
              + r.choice([")", ", line_search_fn='strong_wolfe')"]))
    else:
        choice = r.choice(OPTIMIZERS)
        # session 33: the last parameter joins the optimizer mid-training (add_param_group)
        add_group = mods[0] < 0.15 and params == "model.parameters()"
        if add_group:
            p.add("params_all = list(model.parameters())")
            p.add("first, late = ((params_all[:-1], params_all[-1:]) if len(params_all) > 1 "
                  "else (params_all, []))")
            params = "first"
        ctor = (e.choice(EXT_OPTIMIZERS) if ext_opt else choice).format(P=params)
        p.add("opt = " + ctor)
    steps = r.randint(2, 4)
    sched = None if lbfgs else r.choice(SCHEDULERS + [
        "torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)"])
    if not lbfgs and e.random() < 0.25:
        sched = e.choice(EXT_SCHEDULERS).replace("{MODE}", repr(e.choice(
            ["triangular", "triangular2", "exp_range"]))).replace(
            "{CM}", str(e.random() < 0.5 and ("momentum=" in p.lines[-1] or "Adam" in p.lines[-1])))
    freeze_bn = "BatchNorm" in p.source() and e.random() < 0.4 and not lbfgs
    if add_group:
        sched = None    # (a scheduler's per-group lists do not follow an added group)
    if sched:
        p.add("sched = " + sched.format(STEPS=steps))
    ema = r.random() < 0.15
    if ema:
        p.add("ema = torch.optim.swa_utils.AveragedModel(model, multi_avg_fn="
              "torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))")
    if lbfgs:
        p.add("def closure():")
        p.add("    opt.zero_grad()")
        p.add("    loss = loss_fn(model(X), Y)")
        p.add("    loss.backward()")
        p.add("    return loss")
        p.add(f"for step in range({steps}):")
        p.add("    loss = opt.step(closure)")
        p.add("    record('step', model, loss)")
        p.add("model.eval()")
        p.add("with torch.no_grad():")
        p.add("    record('eval', model, loss_fn(model(X), Y))")
        return p
    checkpoint = r.random() < 0.15
    clip = r.choice([None, None, "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)",
                     "torch.nn.utils.clip_grad_value_(model.parameters(), 0.05)",
                     "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type=1.0)"])
    accumulate = r.random() < 0.2 and n >= 2 and not p.no_split
    set_to_none = r.random() < 0.8
    if mods[4] < 0.1:
        clip = f"torch.nn.utils.clip_grad_value_(model.parameters(), clip_value={s.choice([0.01, 0.2])}, foreach={s.choice([None, False, True])})"
    if p.sparse:
        clip = None   # (clip_grad_norm_ of sparse gradients is not what this draws)
    p.add(f"for step in range({steps}):")
    p.add("    model.train()")
    if freeze_bn:
        # fine-tuning style: the batch norms use (and stop updating) their running statistics
        p.add(f"    if step >= {e.randint(1, 2)}:")
        p.add("        for m in model.modules():")
        p.add("            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):")
        p.add("                m.eval()")
    p.add(f"    opt.zero_grad(set_to_none={set_to_none})")
    if p.sparse:
        p.add(f"    opt2.zero_grad(set_to_none={set_to_none})")
    if accumulate:
        p.add("    for part in (slice(0, 1), slice(1, None)):")
        p.add("        loss = loss_fn(model(X[part]), Y[part])")
        p.add("        loss.backward()")
    else:
        p.add("    loss = loss_fn(model(X), Y)")
        p.add("    loss.backward()")
    if clip:
        p.add(f"    total = {clip}")
    p.add("    record('grads', model, loss)")
    p.add("    opt.step()")
    if p.sparse:
        p.add("    opt2.step()")
    if sched:
        p.add("    sched.step(loss.item())" if "Plateau" in sched else "    sched.step()")
    if ema:
        p.add("    ema.update_parameters(model)")
        p.add("    record('ema', ema.module, loss)")
    # session 33's modifiers: weights edited in place under no_grad (WGAN-style clipping, a
    # max-norm renorm of every matrix), the learning rate changed by hand, a parameter group
    # added, the optimizer's state loaded into a fresh one
    if mods[3] < 0.12:
        edit = s.choice(["q.clamp_(-0.25, 0.25)", "q.renorm_(2, 0, 0.4) if q.ndim > 1 else q",
                         "q.mul_(0.98)", "q.data.clamp_(-0.3, 0.3)",
                         "q.copy_(torch.where(q.abs() < 0.01, torch.zeros_like(q), q))"])
        p.add("    with torch.no_grad():")
        p.add("        for q in model.parameters():")
        p.add(f"            {edit}")
        p.add("    record('edit', model, loss)")
    if mods[1] < 0.15:
        p.add("    if step == 1:")
        p.add("        for g in opt.param_groups:")
        p.add(f"            g['lr'] = g['lr'] * {s.choice([0.5, 2.0])}")
    if add_group:
        p.add("    if step == 0 and late:")
        p.add(f"        opt.add_param_group({{'params': late, 'lr': {s.choice([0.003, 0.02])}}})")
    elif mods[2] < 0.12 and not p.sparse and not sched:
        p.add("    if step == 0:")
        p.add(f"        fresh = {ctor}")
        p.add("        fresh.load_state_dict(opt.state_dict())")
        p.add("        opt = fresh")
    if checkpoint:
        # a save and load of model and optimizer (and scheduler) state in the middle of training
        p.add("    if step == 0:")
        p.add("        buf = io.BytesIO()")
        p.add("        torch.save({'model': model.state_dict(), 'opt': opt.state_dict()"
              + (", 'sched': sched.state_dict()" if sched else "") + "}, buf)")
        p.add("        buf.seek(0)")
        p.add("        ck = torch.load(buf)")
        p.add("        model.load_state_dict(ck['model'])")
        p.add("        opt.load_state_dict(ck['opt'])")
        if sched:
            p.add("        sched.load_state_dict(ck['sched'])")
    p.add("model.eval()")
    p.add("with torch.no_grad():")
    p.add("    record('eval', model, loss_fn(model(X), Y))")
    return p


# -- running and comparing ----------------------------------------------------------------------

def data(p: Program):
    """The numpy inputs and targets of program `p` (seeded by its seed)."""
    rng = np.random.default_rng(p.seed)
    (xs, xk), (ys, yk) = p.x, p.y
    x = (rng.integers(0, xk[1], size=xs) if isinstance(xk, tuple)
         else rng.standard_normal(xs))
    if isinstance(yk, tuple):
        y = rng.integers(0, yk[1], size=ys)
    elif yk == "binary":
        y = (rng.random(ys) < 0.5).astype(np.float64)
    else:
        y = rng.standard_normal(ys)
    return x, y


def init_values(name, shape, seed):
    """The starting value of parameter `name`: the same in both libraries."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0] if shape else 1, 1)
    return rng.uniform(-1, 1, size=shape) / np.sqrt(fan_in)


LOSS_CALL = re.compile(r"loss_fn\(model\((X(?:\[part\])?)\), (Y(?:\[part\])?)\)")


def compiled_source(p: Program) -> str:
    """`p` with its model's forward and loss as one function under torch.compile (every third
    seed: the model compiled as a module, the loss eager): every `loss_fn(model(X), Y)` becomes
    `fwd(X, Y)` (training, accumulation parts, the LBFGS closure, the no_grad evaluation: each
    signature its own capture)."""
    out = []
    for line in p.lines:
        if line == "Gc, Dc = G, D":   # a GAN's two models, each compiled as a module
            out.append("Gc, Dc = torch.compile(G), torch.compile(D)")
            continue
        out.append(LOSS_CALL.sub(r"fwd(\1, \2)", line))
        if line.startswith("loss_fn = "):
            if p.seed % 3 == 2:     # the module compiled (an OptimizedModule), the loss eager
                out.append("cmodel = torch.compile(model)")
                out.append("fwd = lambda a, b: loss_fn(cmodel(a), b)")
            else:
                out.append("fwd = torch.compile(lambda a, b: loss_fn(model(a), b))")
    return "\n".join(out)


# --compile seeds from here on run the whole training step under torch.compile where the loop
# has its plain form (whole_step_lines); smaller seeds keep the forward-and-loss form above.
WHOLE_STEP_FROM = 20450


def whole_step_lines(p: Program, compiled: bool):
    """`p`'s lines with its training step - `opt.zero_grad(...)`, `loss = loss_fn(model(X), Y)`,
    `loss.backward()`, an optional gradient clipping, `record('grads', ...)` and the optimizers'
    `step()`s - as one function `wstep` (under torch.compile when `compiled`; the eager run uses
    the same function uncompiled, so both record after the step), or None without that form."""
    lines, out, start = p.lines, [], None
    for i, line in enumerate(lines):
        body = line.strip()
        if (body.endswith(".zero_grad(set_to_none=True)") or body.endswith(
                ".zero_grad(set_to_none=False)") or body.endswith(".zero_grad()")) and \
                i + 2 < len(lines) and lines[i + 1].strip() == "loss = loss_fn(model(X), Y)" \
                and lines[i + 2].strip() == "loss.backward()":
            start = i
            break
    if start is None:
        return None
    indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
    j = start + 3
    clip = []
    if lines[j].strip().startswith("total = torch.nn.utils.clip_grad"):
        clip, j = [lines[j].strip()], j + 1
    if lines[j].strip() != "record('grads', model, loss)":
        return None
    j += 1
    steps = []
    while j < len(lines) and re.fullmatch(r"opt2?\.step\(\)", lines[j].strip()):
        steps.append(lines[j].strip())
        j += 1
    if not steps:
        return None
    loop = max(k for k in range(start) if lines[k].startswith("for "))
    body = [lines[start].strip(), "loss = loss_fn(model(a), b)", "loss.backward()", *clip,
            *steps, "return loss"]
    define = ["def wstep(a, b):"] + ["    " + b for b in body]
    if compiled:
        define.append("wstep = torch.compile(wstep)")
    return (lines[:loop] + define + lines[loop:start]
            + [indent + "loss = wstep(X, Y)", indent + "record('grads', model, loss)"]
            + lines[j:])


def run(lib, p: Program, compiled=False, whole_step=False):
    """Run `p` under `lib` (torch or tapegrad): its records [(label, {name: array})] and the
    exception it raised (None).  `compiled`: the forward and loss under lib.compile;
    `whole_step`: the training step as one function (whole_step_lines), compiled or not."""
    records = []
    x, y = data(p)

    def init(model):
        with lib.no_grad():
            for name, q in model.named_parameters():
                q.copy_(lib.tensor(init_values(name, tuple(q.shape), p.seed)))

    def fill(t, name):
        with lib.no_grad():
            t.copy_(lib.tensor(init_values(name, tuple(t.shape), p.seed)))

    def record(label, model, loss):
        snap = {"loss": np.array(loss.detach().numpy(), dtype=np.float64)}
        for name, q in model.named_parameters():
            snap[name] = q.detach().numpy().copy()
            if label == "grads":
                g = q.grad
                if g is not None and g.is_sparse:
                    g = g.to_dense()
                snap[name + ".grad"] = None if g is None else g.numpy().copy()
        for name, b in model.named_buffers():
            snap[name] = b.numpy().copy()
        records.append((label, snap))

    def note(label, values):
        """A record of plain numbers (learning rates, lengths) for the comparison."""
        records.append((label, {"values": np.array([float(v) for v in values])}))

    default = lib.get_default_dtype()
    try:
        dtype = lib.float64 if "float64" in p.lines[0] else lib.float32
        X = lib.tensor(x) if x.dtype.kind == "i" else lib.tensor(x, dtype=dtype)
        Y = (lib.tensor(y) if y.dtype.kind == "i" else lib.tensor(y, dtype=dtype))
        ns = {"torch": lib, "nn": lib.nn, "F": lib.nn.functional, "X": X, "Y": Y, "io": io,
              "init": init, "record": record, "fill": fill, "note": note}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            src = compiled_source(p) if compiled else p.source()
            if whole_step:
                src = "\n".join(whole_step_lines(p, compiled))
            exec(compile(src, f"<train {p.seed}>", "exec"), ns)
        return records, None
    except Exception as e:   # noqa: BLE001 - compared across libraries
        return records, e
    finally:
        lib.set_default_dtype(default)


def compare(p: Program, t, g, exact=False) -> list[str]:
    """Findings of tapegrad's run `g` against the reference run `t` (torch's; or, `exact`,
    eager tapegrad's, which compiled tapegrad must equal bit for bit)."""
    (t_rec, t_err), (g_rec, g_err) = t, g
    out = []
    if exact:
        return compare_exact(t, g)
    if (t_err is None) != (g_err is None):
        which = "torch" if t_err else "tapegrad"
        err = t_err or g_err
        out.append(f"only {which} raised {type(err).__name__}: {str(err)[:200]}")
    elif t_err is not None and type(t_err).__name__ != type(g_err).__name__:
        out.append(f"raised {type(g_err).__name__} where torch raised {type(t_err).__name__}: "
                   f"{str(g_err)[:150]} / {str(t_err)[:150]}")
    f64 = "float64" in p.lines[0]
    rtol, atol = (1e-7, 1e-9) if f64 else (2e-4, 1e-5)
    # Elements whose gradient is rounding noise around an exact zero (a bias before a norm layer,
    # attention's key bias): adaptive optimizers scale the noise up to a full step whose sign is
    # the noise's, so after such a gradient that element's later values are not compared.
    noise: dict[str, np.ndarray] = {}
    # Adafactor steps every element of a parameter by its RMS and its row and column second
    # moments: noise in one element (a 1e-18 gradient clamped to eps1**2 = 5e-32 is a step of
    # 1e-18 / 2.2e-16) moves them all, so noise masks the whole parameter.
    coupled = "Adafactor" in p.source()
    for i, ((label, ts), (_, gs)) in enumerate(zip(t_rec, g_rec)):
        for name in ts:
            tv, gv = ts[name], gs.get(name, "missing")
            if name.endswith(".grad") and tv is not None:
                base = name[:-5]
                tiny = np.abs(tv) <= (1e-10 if f64 else 1e-5) * (1 + np.abs(tv).max(initial=0))
                if coupled and tiny.any():
                    tiny = np.ones(tv.shape, bool)
                noise[base] = noise.get(base, np.zeros(tv.shape, bool)) | tiny
                if not isinstance(gv, str) and gv is not None and tv.shape == gv.shape:
                    gv = np.where(tiny, tv, gv)
            elif name in noise and not isinstance(gv, str) and gv is not None \
                    and tv.shape == gv.shape:
                gv = np.where(noise[name], tv, gv)
            if isinstance(gv, str):
                out.append(f"record {i} ({label}): {name} missing in tapegrad")
            elif (tv is None) != (gv is None):
                out.append(f"record {i} ({label}): {name} is None in "
                           f"{'torch' if tv is None else 'tapegrad'} only")
            elif tv is not None:
                if tv.shape != gv.shape or tv.dtype != gv.dtype:
                    out.append(f"record {i} ({label}): {name} {gv.dtype}{gv.shape} vs torch "
                               f"{tv.dtype}{tv.shape}")
                elif not np.allclose(gv, tv, rtol=rtol, atol=atol, equal_nan=True):
                    err = np.max(np.abs(gv.astype(np.float64) - tv))
                    out.append(f"record {i} ({label}): {name} differs (max abs {err:.3g})")
        if out:
            break   # later records inherit the first difference
    if len(t_rec) != len(g_rec) and not out:
        out.append(f"{len(g_rec)} records vs torch's {len(t_rec)}")
    return out


def compare_exact(e, c) -> list[str]:
    """Compiled run `c` against eager run `e` (both tapegrad): the same exception type, the
    same records, every array equal bit for bit (NaNs where NaNs are)."""
    (e_rec, e_err), (c_rec, c_err) = e, c
    out = []
    if (e_err is None) != (c_err is None) or (
            e_err is not None and type(e_err) is not type(c_err)):
        out.append(f"eager raised {type(e_err).__name__}: {str(e_err)[:150]}, compiled raised "
                   f"{type(c_err).__name__}: {str(c_err)[:150]}")
    for i, ((label, es), (_, cs)) in enumerate(zip(e_rec, c_rec)):
        for name, ev in es.items():
            cv = cs.get(name, "missing")
            if isinstance(cv, str):
                out.append(f"record {i} ({label}): {name} missing when compiled")
            elif (ev is None) != (cv is None):
                out.append(f"record {i} ({label}): {name} is None "
                           f"{'eager' if ev is None else 'compiled'} only")
            elif ev is not None and (ev.shape != cv.shape or ev.dtype != cv.dtype or
                                     not np.array_equal(ev, cv, equal_nan=ev.dtype.kind in "fc")):
                how = (f"{cv.dtype}{cv.shape} vs eager {ev.dtype}{ev.shape}"
                       if ev.shape != cv.shape or ev.dtype != cv.dtype else
                       f"max abs {np.max(np.abs(cv.astype(np.float64) - ev)):.3g}")
                out.append(f"record {i} ({label}): {name} differs ({how})")
        if out:
            break
    if len(e_rec) != len(c_rec) and not out:
        out.append(f"{len(c_rec)} records compiled vs eager's {len(e_rec)}")
    return out


def check(seed, compiled=False):
    """Program `seed` and its findings: tapegrad against torch, or (`compiled`) tapegrad's
    compiled forward against tapegrad eager."""
    import tapegrad
    p = generate(seed)
    if compiled:
        whole = seed >= WHOLE_STEP_FROM and whole_step_lines(p, False) is not None
        return p, compare(p, run(tapegrad, p, whole_step=whole),
                          run(tapegrad, p, compiled=True, whole_step=whole), exact=True)
    import torch
    return p, compare(p, run(torch, p), run(tapegrad, p))


def script(p: Program, compiled=False) -> str:
    """`p` as a standalone PyTorch script (swap the import for tapegrad); `compiled`: with the
    forward and loss under torch.compile."""
    x, y = p.x, p.y
    return "\n".join([
        "import io, numpy as np, zlib", "import torch", "import torch.nn as nn",
        "import torch.nn.functional as F",
        f"SEED = {p.seed}",
        "def init(model):",
        "    with torch.no_grad():",
        "        for name, q in model.named_parameters():",
        "            rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])",
        "            fan_in = int(np.prod(q.shape[1:])) if q.ndim > 1 else max(q.shape[0] if q.ndim else 1, 1)",
        "            q.copy_(torch.tensor(rng.uniform(-1, 1, size=tuple(q.shape)) / np.sqrt(fan_in)))",
        "def fill(t, name):",
        "    with torch.no_grad():",
        "        rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])",
        "        fan_in = int(np.prod(t.shape[1:])) if t.ndim > 1 else max(t.shape[0] if t.ndim else 1, 1)",
        "        t.copy_(torch.tensor(rng.uniform(-1, 1, size=tuple(t.shape)) / np.sqrt(fan_in)))",
        "def record(label, model, loss):",
        "    print(label, float(loss), [float(q.detach().double().abs().sum()) for q in model.parameters()])",
        "def note(label, values):",
        "    print(label, [float(v) for v in values])",
        f"# data: x {x}, y {y}, drawn by tools/fuzz_train.py data()",
        "import sys; sys.path.insert(0, 'tools'); import fuzz_train",
        f"_x, _y = fuzz_train.data(fuzz_train.generate(SEED))",
        "_dt = torch.float64 if " + repr("float64" in p.lines[0]) + " else torch.float32",
        "X = torch.tensor(_x) if _x.dtype.kind == 'i' else torch.tensor(_x, dtype=_dt)",
        "Y = torch.tensor(_y) if _y.dtype.kind == 'i' else torch.tensor(_y, dtype=_dt)",
        ("\n".join(whole_step_lines(p, True)) if compiled and p.seed >= WHOLE_STEP_FROM
         and whole_step_lines(p, True) is not None
         else compiled_source(p) if compiled else p.source())])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", help="A:B, run seeds A..B-1 in process")
    ap.add_argument("--repro", type=int, help="print one program and its findings")
    ap.add_argument("--compile", action="store_true",
                    help="compare the loop with forward + loss under tapegrad.compile against "
                         "tapegrad eager, bit for bit (no torch run)")
    args = ap.parse_args(argv)
    if args.repro is not None:
        p, findings = check(args.repro, args.compile)
        print(script(p, args.compile))
        print("\n# findings:")
        for f in findings or ["none"]:
            print("#", f)
        return 0
    a, b = (int(v) for v in (args.seeds or "0:100").split(":"))
    failing = 0
    for seed in range(a, b):
        try:
            p, findings = check(seed, args.compile)
        except Exception:   # noqa: BLE001 - a harness failure is a finding too
            findings = ["harness: " + traceback.format_exc(limit=2).replace("\n", " | ")[-300:]]
        if findings:
            failing += 1
            dtype = "float64" if "float64" in generate(seed).lines[0] else "float32"
            more = f" (+{len(findings) - 1})" if len(findings) > 1 else ""
            print(f"{seed} [{dtype}]: {findings[0]}{more}", flush=True)
    print(f"{failing} of {b - a} seeds differ")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
