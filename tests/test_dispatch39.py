"""dispatch39: FlopCounterMode against PyTorch's on whole models (module names at any depth,
attention as PyTorch's CPU kernel choice counts it, the printed table), and the kernel choice
itself (which scaled_dot_product_attention calls PyTorch refuses, its grad_fn's name)."""
import math
from importlib import import_module

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _counts(lib, build):
    """build(lib) run under lib's FlopCounterMode(display=False): (total, {module: {op: flops}})
    with the ops as their printed names."""
    mode = import_module(lib.__name__ + ".utils.flop_counter").FlopCounterMode
    lib.manual_seed(0)
    with mode(display=False) as counter:
        build(lib)
    return counter.get_total_flops(), {m: {str(k): v for k, v in d.items()}
                                       for m, d in counter.get_flop_counts().items()}


def _same_as_torch(build):
    ours, theirs = _counts(tapegrad, build), _counts(torch, build)
    assert ours == theirs


# -- models, built the same way under either library -----------------------------------------

def _attention_block(t, sdpa):
    nn, F = t.nn, t.nn.functional

    class Attention(nn.Module):
        def __init__(self, width=16, heads=4):
            super().__init__()
            self.qkv, self.proj, self.heads = nn.Linear(width, 3 * width), nn.Linear(width, width), heads

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (u.view(B, T, self.heads, C // self.heads).transpose(1, 2) for u in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                mask = t.tril(t.ones(T, T, dtype=t.bool))
                y = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(16), Attention(), nn.LayerNorm(16)
            self.mlp = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(30, 16)
            self.blocks = nn.ModuleList([Block() for _ in range(2)])    # (never runs itself)
            self.head = nn.Linear(16, 30, bias=False)

        def forward(self, idx):
            x = self.wte(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    return GPT()


@pytest.mark.parametrize("sdpa", [True, False], ids=["sdpa", "matmuls"])
@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_transformer_counts_by_module_as_torch(sdpa, backward):
    # SILENT before: the blocks inside the ModuleList were counted under their class name
    # ("Block.attn") instead of their path ("GPT.blocks.0.attn"), both blocks merged in one
    # entry; and the causal SDPA counted two bmm where PyTorch's CPU flash kernel counts none
    def build(t):
        model = _attention_block(t, sdpa)
        out = model(t.randint(0, 30, (2, 5)))
        if backward:
            out.sum().backward()
    _same_as_torch(build)


def test_nested_sequential_names_at_any_depth():
    def build(t):
        nn = t.nn
        inner = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Sequential(nn.Linear(6, 6)))
        model = nn.Sequential(nn.ModuleList([inner]), nn.Linear(6, 2))

        x = t.randn(3, 4, requires_grad=True)
        for layer in model[0]:
            x = layer(x)
        model[1](x).sum().backward()
    _same_as_torch(build)


SDPA_CASES = {
    "flash": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {}),
    "flash_causal": ((2, 4, 6, 8), (2, 4, 7, 8), (2, 4, 7, 8), {"is_causal": True}),
    "flash_bool_mask": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"mask": (6, 6)}),
    "flash_4d_mask": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"mask": (2, 1, 6, 6)}),
    "flash_column_mask": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"mask": (6, 1)}),
    "flash_gqa": ((2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8), {"enable_gqa": True}),
    "flash_float64": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"dtype": "float64"}),
    "math_value_width": ((2, 4, 6, 8), (2, 4, 7, 8), (2, 4, 7, 5), {}),
    "math_3d_mask": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"mask": (4, 6, 6)}),
    "math_mask_grad": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"mask": (6, 6), "mask_grad": True}),
    "math_dropout": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"dropout_p": 0.25}),
    "math_3d": ((4, 6, 8), (4, 6, 8), (4, 6, 8), {}),
    "math_2d": ((6, 8), (6, 8), (6, 8), {}),
    "math_3d_query_2d_key": ((3, 6, 8), (5, 8), (5, 8), {}),
    "math_5d": ((1, 2, 4, 6, 8), (1, 2, 4, 6, 8), (1, 2, 4, 6, 8), {}),
    "math_broadcast_batch": ((2, 4, 6, 8), (1, 4, 6, 8), (1, 4, 6, 8), {}),
    "math_broadcast_heads": ((2, 4, 6, 8), (2, 1, 6, 8), (2, 1, 6, 8), {}),
    "math_strided_head_dim": ((2, 4, 6, 8), (2, 4, 6, 8), (2, 4, 6, 8), {"strided": True}),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("case", sorted(SDPA_CASES))
def test_sdpa_counts_as_torch_cpu_kernel(case, grad):
    # SILENT before: every call counted the math kernel's two bmm (and their backward), also
    # where PyTorch runs its CPU flash kernel, which its registry does not count; 2-d operands
    # counted as bmm where PyTorch's matmul runs mm
    q_shape, k_shape, v_shape, options = SDPA_CASES[case]
    options = dict(options)

    def build(t):
        dtype = getattr(t, options.get("dtype", "float32"))

        def make(shape):
            if options.get("strided"):       # (the head size not the innermost dim)
                x = t.randn(*shape[:-2], shape[-1], shape[-2], dtype=dtype).transpose(-1, -2)
            else:
                x = t.randn(*shape, dtype=dtype)
            return x.requires_grad_(grad)
        q, k, v = make(q_shape), make(k_shape), make(v_shape)
        kwargs = {name: options[name] for name in ("is_causal", "enable_gqa", "dropout_p")
                  if name in options}
        if "mask" in options:
            kwargs["attn_mask"] = t.randn(*options["mask"]).requires_grad_(
                options.get("mask_grad", False))
        out = t.nn.functional.scaled_dot_product_attention(q, k, v, **kwargs)
        if grad:
            out.sum().backward()
    _same_as_torch(build)


def test_sdpa_under_math_only_backend_counts_its_products():
    def build(t):
        from importlib import import_module
        attention = import_module(t.__name__ + ".nn.attention")
        q = t.randn(2, 4, 6, 8, requires_grad=True)
        with attention.sdpa_kernel(attention.SDPBackend.MATH):
            t.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    _same_as_torch(build)


def _sdpa_outcome(t, **kwargs):
    """(grad_fn name, None) of an attention call, or (None, error type and message)."""
    from importlib import import_module
    attention = import_module(t.__name__ + ".nn.attention")
    backends = kwargs.pop("backends", None)
    mask = kwargs.pop("mask", None)
    q = t.randn(2, 4, 6, 8, requires_grad=True)
    if mask is not None:
        kwargs["attn_mask"] = t.ones(*mask, dtype=t.bool)
    try:
        if backends is None:
            out = t.nn.functional.scaled_dot_product_attention(q, q, q, **kwargs)
        else:
            with attention.sdpa_kernel([getattr(attention.SDPBackend, b) for b in backends]):
                out = t.nn.functional.scaled_dot_product_attention(q, q, q, **kwargs)
    except RuntimeError as error:
        return None, str(error)
    return type(out.grad_fn).__name__, None


@pytest.mark.parametrize("kwargs", [
    {"mask": (4, 6, 6), "is_causal": True},         # (a 3-d mask: math kernel, which refuses)
    {"mask": (4, 6, 6)},
    {"mask": (6, 6), "is_causal": True},             # (flash kernel takes the pair)
    {"backends": ["FLASH_ATTENTION"], "dropout_p": 0.5},
    {"backends": ["FLASH_ATTENTION"]},
    {"backends": ["MATH"]},
], ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_sdpa_kernel_choice_as_torch(kwargs):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # (PyTorch warns why no flash kernel ran)
        theirs = _sdpa_outcome(torch, **dict(kwargs))
    ours = _sdpa_outcome(tapegrad, **dict(kwargs))
    assert ours == theirs


# -- a node's hooks in PyTorch's order: tensor hooks, the retained .grad, then pre-hooks ------

@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_fn_prehook_sees_tensor_hooks_gradient(create_graph):
    # SILENT before: hooks ran in registration order across both kinds, so a grad_fn pre-hook
    # registered before a tensor hook ran first: the weight's gradient was (g * 2) + 1, not
    # PyTorch's (g + 1) * 2, and the retained .grad took the pre-hook's change
    def run(t):
        w = t.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=t.float64, requires_grad=True)
        y = t.tensor([[1.0, -1.0]], dtype=t.float64) @ w
        seen = []
        y.grad_fn.register_prehook(lambda g: seen.append(g[0].tolist()) or (g[0] * 2,))
        y.register_hook(lambda g: g + 1)
        y.grad_fn.register_prehook(lambda g: (g[0] * 3,))
        y.register_hook(lambda g: g * 10)
        y.retain_grad()
        if create_graph:
            (w_grad,) = t.autograd.grad(y.sum(), w, create_graph=True)
            return w_grad.tolist(), seen
        y.sum().backward()
        return w.grad.tolist(), y.grad.tolist(), seen
    assert run(tapegrad) == run(torch)


# -- ModuleTracker: backward modules as PyTorch's multi-grad hooks see them ------------------

def _two_branch(t):
    nn = t.nn

    class TwoBranch(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.head = nn.Linear(8, 16), nn.Linear(4, 16), nn.Linear(16, 1)

        def forward(self, x, y):
            return self.head(self.a(x) + self.b(y))
    TwoBranch()(t.randn(3, 8), t.randn(3, 4)).sum().backward()


def _reused_layer(t):
    nn = t.nn

    class Reuse(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.out = nn.Linear(8, 8), nn.Linear(8, 2)

        def forward(self, x):
            return self.out(self.fc(t.relu(self.fc(x))))
    Reuse()(t.randn(3, 8, requires_grad=True)).sum().backward()


def _mlp_with_activation_module(t):
    nn = t.nn
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
    model(t.randn(4, 16)).sum().backward()


def _cnn(t):
    nn, F = t.nn, t.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=4)
            self.c3 = nn.Conv2d(8, 16, 1, bias=False)
            self.bn = nn.BatchNorm2d(16)
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            x = F.relu(self.c2(F.relu(self.c1(x))))
            return self.head(self.bn(self.c3(x)).mean((2, 3)))
    CNN()(t.randn(2, 3, 12, 12)).sum().backward()


@pytest.mark.parametrize("build", [_two_branch, _reused_layer, _mlp_with_activation_module, _cnn],
                         ids=lambda f: f.__name__.strip("_"))
def test_backward_counted_under_modules_as_torch(build):
    # before: a backward was counted under the modules its forward ran in; PyTorch's tracker
    # follows the backward (a module whose inputs need no gradient stays entered until the
    # backward ends: TwoBranch.a's weight gradient is counted under TwoBranch.b too)
    _same_as_torch(build)


def test_module_tracker_parents_as_torch():
    def trace(t):
        from importlib import import_module
        tracker_module = import_module(t.__name__ + ".utils.module_tracker")
        nn = t.nn
        seen = []
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        with tracker_module.ModuleTracker() as tracker:
            def note(where):
                return lambda *args: seen.append((where, tracker.is_bw, sorted(tracker.parents)))
            model[1].register_forward_hook(note("tanh forward"))
            x = t.randn(2, 3, requires_grad=True)
            out = model(x)
            out.register_hook(note("output grad"))
            model[0].weight.register_hook(note("first weight grad"))
            out.sum().backward()
        seen.append(("after", tracker.is_bw, sorted(tracker.parents)))
        return seen
    assert trace(tapegrad) == trace(torch)


# -- which product PyTorch runs: linear's addmm or matmul, matmul's fold or bmm -------------

MATMUL_CASES = {
    "linear_transposed_3d": lambda t, g: t.nn.functional.linear(
        t.randn(4, 2, 3, requires_grad=g).transpose(0, 2), t.randn(5, 4, requires_grad=g),
        t.randn(5, requires_grad=g)),
    "linear_transposed_2d": lambda t, g: t.nn.functional.linear(
        t.randn(4, 3, requires_grad=g).t(), t.randn(5, 4, requires_grad=g), t.randn(5)),
    "linear_frozen_transposed": lambda t, g: t.nn.functional.linear(
        t.randn(4, 2, 3, requires_grad=g).transpose(0, 2), t.randn(5, 4), t.randn(5)),
    "linear_contiguous_3d": lambda t, g: t.nn.functional.linear(
        t.randn(2, 3, 4, requires_grad=g), t.randn(5, 4, requires_grad=g), t.randn(5)),
    "matmul_1d_3d": lambda t, g: t.randn(4, requires_grad=g) @ t.randn(2, 4, 5, requires_grad=g),
    "matmul_3d_1d": lambda t, g: t.randn(2, 3, 4, requires_grad=g) @ t.randn(4, requires_grad=g),
    "matmul_2d_3d": lambda t, g: t.randn(3, 4, requires_grad=g) @ t.randn(2, 4, 5),
    "matmul_3d_2d_strided": lambda t, g: (t.randn(3, 2, 4, requires_grad=g).transpose(0, 1)
                                          @ t.randn(4, 5)),
    "matmul_3d_2d_grad_right": lambda t, g: (t.randn(3, 2, 4).transpose(0, 1)
                                             @ t.randn(4, 5, requires_grad=g)),
}


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("case", sorted(MATMUL_CASES))
def test_product_kernel_as_torch(case, grad):
    # before: linear with a bias always counted addmm (PyTorch: mm for a non-contiguous input
    # of rank > 2, as nn.MultiheadAttention(batch_first=True) passes it), and matmul's fold
    # was read from the shapes alone (PyTorch's also reads strides and requires_grad:
    # 1-d @ 3-d with grad is an mv, counted 0)
    def build(t):
        out = MATMUL_CASES[case](t, grad)
        if grad:
            out.sum().backward()
    _same_as_torch(build)


def test_multihead_attention_batch_first_as_torch():
    def build(t):
        attention = t.nn.MultiheadAttention(16, 4, batch_first=True)
        x = t.randn(2, 5, 16)
        attention(x, x, x)[0].sum().backward()
    _same_as_torch(build)


def test_fused_kernels_count_nothing_as_torch():
    # PyTorch's inference fast paths (fused encoder layer, fused attention) and F.bilinear
    # (_trilinear) are kernels its registry has no formula for: before, tapegrad counted the
    # products its compositions of them run
    def build(t):
        layer = t.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
        attention = t.nn.MultiheadAttention(16, 4, batch_first=True).eval()
        x = t.randn(2, 5, 16)
        with t.no_grad():
            layer(x)
            attention(x, x, x)
        t.nn.functional.bilinear(t.randn(2, 3, requires_grad=True), t.randn(2, 4),
                                 t.randn(5, 3, 4, requires_grad=True)).sum().backward()
    _same_as_torch(build)


def test_encoder_layer_training_by_module_as_torch():
    def build(t):
        layer = t.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        layer(t.randn(2, 5, 16)).sum().backward()
    _same_as_torch(build)


def test_model_returning_its_loss_not_entered_by_backward_as_torch():
    # PyTorch's multi-grad hook over the tensor a backward starts from alone never fires: a
    # model whose forward returns the loss is not entered by loss.backward() (its backward is
    # filed under its submodules and Global only)
    def build(t):
        nn, F = t.nn, t.nn.functional

        class WithLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.body, self.head = nn.Linear(6, 8), nn.Linear(8, 3)

            def forward(self, x, target):
                return F.cross_entropy(self.head(t.tanh(self.body(x))), target)
        WithLoss()(t.randn(4, 6), t.tensor([0, 2, 1, 0])).backward()
    _same_as_torch(build)


def test_multi_grad_hook_over_the_backward_root_never_fires():
    def fired(t):
        calls = []
        x = t.randn(3, requires_grad=True)
        y = x * 2
        root = y.sum()
        t.autograd.graph.register_multi_grad_hook([root], lambda grads: calls.append("root"))
        t.autograd.graph.register_multi_grad_hook([y], lambda grads: calls.append("y"))
        root.backward()
        z = (x * 3).sum()
        t.autograd.graph.register_multi_grad_hook([z], lambda grads: calls.append("z"))
        t.autograd.backward([z, (x * 4).sum()])       # (two roots: PyTorch's hook fires)
        return calls
    assert fired(tapegrad) == fired(torch)


# -- the printed table: PyTorch's text (recorded with PyTorch 2.13 and tabulate 0.10) --------

TABLES = {
    1: ("Module           FLOP    % Total\n------------  -------  ---------\n"
        "Sequential    12.160K    100.00%\n- aten.addmm   4.480K     36.84%\n"
        "- aten.mm      7.680K     63.16%"),
    3: ("Module             FLOP    % Total\n--------------  -------  ---------\n"
        "Sequential      12.160K    100.00%\n- aten.addmm     4.480K     36.84%\n"
        "- aten.mm        7.680K     63.16%\nSequential.0     2.560K     21.05%\n"
        "- aten.addmm     1.280K     10.53%\n- aten.mm        1.280K     10.53%\n"
        "Sequential.2     9.600K     78.95%\n- aten.addmm     3.200K     26.32%\n"
        "- aten.mm        6.400K     52.63%\nSequential.2.0   7.680K     63.16%\n"
        "- aten.addmm     2.560K     21.05%\n- aten.mm        5.120K     42.11%\n"
        "Sequential.2.1   1.920K     15.79%\n- aten.addmm     0.640K      5.26%\n"
        "- aten.mm        1.280K     10.53%"),
    None: ("Module           FLOP    % Total\n------------  -------  ---------\n"
           "Sequential    12.160K    100.00%\n- aten.addmm   4.480K     36.84%\n"
           "- aten.mm      7.680K     63.16%\nSequential.0   2.560K     21.05%\n"
           "- aten.addmm   1.280K     10.53%\n- aten.mm      1.280K     10.53%\n"
           "Sequential.2   9.600K     78.95%\n- aten.addmm   3.200K     26.32%\n"
           "- aten.mm      6.400K     52.63%"),
}


def _nested_tables(t):
    from importlib import import_module
    mode = import_module(t.__name__ + ".utils.flop_counter").FlopCounterMode
    nn = t.nn
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(),
                          nn.Sequential(nn.Linear(16, 16), nn.Sequential(nn.Linear(16, 4))))
    with mode(display=False) as counter:
        model(t.randn(5, 8)).sum().backward()
    return {depth: counter.get_table(depth) for depth in TABLES}


def test_table_text_as_torch():
    assert _nested_tables(tapegrad) == TABLES
    try:
        import tabulate  # noqa: F401  (PyTorch's get_table needs it)
    except ImportError:
        return
    assert _nested_tables(torch) == TABLES


def test_counting_leaves_no_records_alive():
    # the tracker's tensor hooks must hold neither the tensors nor their handles: a cycle
    # through a tensor's record is one the garbage collector cannot see
    import gc
    from tapegrad.utils.flop_counter import FlopCounterMode

    def run():
        nn = tapegrad.nn
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
        with FlopCounterMode(display=False):
            model(tapegrad.randn(3, 4, requires_grad=True)).sum().backward()
        with FlopCounterMode(display=False):
            model(tapegrad.randn(3, 4)).sum().backward()        # (the model returns the root)
    gc.collect()
    before = tapegrad._core.tape().live_records
    for _ in range(3):
        run()
    gc.collect()
    assert tapegrad._core.tape().live_records <= before
