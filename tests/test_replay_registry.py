"""tapegrad.compile replays every op of the library: a table over the op registry.

Each grad_fn name the op table registers (tapegrad._core.op_names()) has here a function of
(x, w) whose graph contains it (checked), or an entry in NOT_REPLAYED saying why it cannot.  A
new op registered without either fails test_every_registered_op_has_a_case, so an op cannot join
the library without a replay check.  Each case is compiled and called with changing inputs, in
float32 and float64: the replayed values and gradients equal the eager ones bit for bit, and the
calls after the first are replays (not eager runs).
"""
import numpy as np
import pytest

import tapegrad as tg

F = tg.nn.functional

IDX = [2, 0, 1]


def other_float(w):
    return tg.float64 if w.dtype == tg.float32 else tg.float32


# grad_fn name -> functions of (x, w): x (3, 4) data in [0.2, 0.9), w (3, 4) a parameter in the
# same range (both change at every call); each graph contains the op named.
CASES = {
    "AddBackward0": [lambda x, w: w + x,
                     lambda x, w: F.linear(x.unsqueeze(0).expand(2, 3, 4) * 1.0, w, w[:, 0]),
                     lambda x, w: F.cross_entropy(w, tg.tensor(IDX), label_smoothing=0.1)],
    "SubBackward0": [lambda x, w: w - x],
    "RsubBackward1": [lambda x, w: 2.0 - w],
    "MulBackward0": [lambda x, w: w * x, lambda x, w: 2.0 / w, lambda x, w: tg.outer(w[0], x[1]),
                     lambda x, w: F.mse_loss(w, x, reduction="none") * 1.0],
    "DivBackward0": [lambda x, w: w / x],
    "DivBackward1": [lambda x, w: F.cross_entropy(w, tg.softmax(x, 1))],
    "PowBackward0": [lambda x, w: w ** 2.5, lambda x, w: w ** 2, lambda x, w: w.square()],
    "PowBackward1": [lambda x, w: w ** x],
    "PowBackward2": [lambda x, w: 2.0 ** w],
    "NegBackward0": [lambda x, w: -w],
    "ExpBackward0": [lambda x, w: w.exp()],
    "LogBackward0": [lambda x, w: w.log()],
    "TanhBackward0": [lambda x, w: w.tanh()],
    "ReluBackward0": [lambda x, w: (w - 0.5).relu()],
    "AbsBackward0": [lambda x, w: (w - 0.5).abs(), lambda x, w: F.l1_loss(w, x, reduction="none")],
    "SignBackward0": [lambda x, w: (w - 0.5).sign() + w],
    "Log1PBackward0": [lambda x, w: w.log1p()],
    "Expm1Backward0": [lambda x, w: w.expm1()],
    "SqrtBackward0": [lambda x, w: w.sqrt()],
    "RsqrtBackward0": [lambda x, w: w.rsqrt()],
    "SinBackward0": [lambda x, w: w.sin()],
    "CosBackward0": [lambda x, w: w.cos()],
    "SigmoidBackward0": [lambda x, w: w.sigmoid()],
    "ReciprocalBackward0": [lambda x, w: w.reciprocal()],
    "ErfBackward0": [lambda x, w: w.erf()],
    "LeakyReluBackward0": [lambda x, w: F.leaky_relu(w - 0.5, 0.1)],
    "EluBackward0": [lambda x, w: F.elu(w - 0.5)],
    "SoftplusBackward0": [lambda x, w: F.softplus(w)],
    "SiluBackward0": [lambda x, w: F.silu(w)],
    "GeluBackward0": [lambda x, w: F.gelu(w), lambda x, w: F.gelu(w, approximate="tanh")],
    "ClampBackward1": [lambda x, w: w.clamp(0.3, 0.7)],
    "ClampMinBackward0": [lambda x, w: w.clamp_min(0.4)],
    "ClampMaxBackward0": [lambda x, w: w.clamp_max(0.6)],
    "ClampBackward0": [lambda x, w: w.clamp(x - 0.1, x + 0.1)],
    "ClampMinBackward1": [lambda x, w: w.clamp_min(x)],
    "ClampMaxBackward1": [lambda x, w: w.clamp_max(x)],
    "MaximumBackward0": [lambda x, w: tg.maximum(w, x)],
    "MinimumBackward0": [lambda x, w: tg.minimum(w, x)],
    "WhereBackward0": [lambda x, w: tg.where(x > 0.5, w, w * 2.0)],
    "ToCopyBackward0": [lambda x, w: w.to(other_float(w))],
    "Log10Backward0": [lambda x, w: w.log10()],
    "Log2Backward0": [lambda x, w: w.log2()],
    "SinhBackward0": [lambda x, w: w.sinh()],
    # the compiled complex ops whose names no real op records (ops_complex.pxi)
    "TanBackward0": [lambda x, w: tg.complex(w, x).tan().abs()],
    "AsinhBackward0": [lambda x, w: tg.complex(w, x).asinh().abs()],
    "AcoshBackward0": [lambda x, w: tg.complex(w, x).acosh().abs()],
    "AtanhBackward0": [lambda x, w: tg.complex(w, x).atanh().abs()],
    "Exp2Backward0": [lambda x, w: tg.exp2(tg.complex(w, x)).abs()],
    "ConjBackward0": [lambda x, w: (tg.complex(w, x).conj() * tg.complex(x, w)).abs()],
    "ConjPhysicalBackward0": [lambda x, w: (tg.conj_physical(tg.complex(w, x))
                                            * tg.complex(x, w)).abs()],
    "CoshBackward0": [lambda x, w: w.cosh()],
    "AsinBackward0": [lambda x, w: w.asin()],
    "AcosBackward0": [lambda x, w: w.acos()],
    "AtanBackward0": [lambda x, w: w.atan()],
    "FloorBackward0": [lambda x, w: (w * 4).floor()],
    "CeilBackward0": [lambda x, w: (w * 4).ceil()],
    "RoundBackward0": [lambda x, w: (w * 4).round()],
    "RoundBackward1": [lambda x, w: w.round(decimals=1)],
    "TruncBackward0": [lambda x, w: (w * 4).trunc()],
    "FracBackward0": [lambda x, w: (w * 4).frac()],
    "Atan2Backward0": [lambda x, w: tg.atan2(w, x)],
    "FmodBackward0": [lambda x, w: tg.fmod(w, 0.3)],
    "FmodBackward1": [lambda x, w: tg.fmod(w, x)],
    "RemainderBackward0": [lambda x, w: tg.remainder(w, 0.3)],
    "RemainderBackward1": [lambda x, w: tg.remainder(w, x)],
    "SumBackward0": [lambda x, w: w.sum(), lambda x, w: F.l1_loss(w, x, reduction="sum")],
    "SumBackward1": [lambda x, w: w.sum(1)],
    "MeanBackward0": [lambda x, w: w.mean(), lambda x, w: F.l1_loss(w, x)],
    "MeanBackward1": [lambda x, w: w.mean(0)],
    "ProdBackward0": [lambda x, w: w.prod()],
    "ProdBackward1": [lambda x, w: w.prod(1)],
    "MaxBackward1": [lambda x, w: w.max()],
    "MinBackward1": [lambda x, w: w.min()],
    "MaxBackward0": [lambda x, w: w.max(1)[0]],
    "MinBackward0": [lambda x, w: w.min(1).values],
    "AmaxBackward0": [lambda x, w: w.amax(1)],
    "AminBackward0": [lambda x, w: w.amin(0)],
    "VarBackward0": [lambda x, w: w.var(1)],
    "StdBackward0": [lambda x, w: w.std()],
    "LogsumexpBackward0": [lambda x, w: w.logsumexp(1)],
    "LinalgVectorNormBackward0": [lambda x, w: w.norm()],
    "ViewBackward0": [lambda x, w: w.view(12), lambda x, w: w.reshape(4, 3)],
    "ReshapeAliasBackward0": [lambda x, w: w[::2].reshape(2, 2, 2)],
    "UnsafeViewBackward0": [lambda x, w: w.t().reshape(12),
                            lambda x, w: w.unsqueeze(0).expand(2, 3, 4) @ x.t()],
    "SqueezeBackward0": [lambda x, w: w.unsqueeze(0).squeeze()],
    "SqueezeBackward1": [lambda x, w: w[None].squeeze(0)],
    "SqueezeBackward2": [lambda x, w: w[None].squeeze((0,))],
    "UnsqueezeBackward0": [lambda x, w: w.unsqueeze(1), lambda x, w: w[:, None]],
    "TransposeBackward0": [lambda x, w: w.transpose(0, 1)],
    "TBackward0": [lambda x, w: w.t()],
    "PermuteBackward0": [lambda x, w: w.permute(1, 0)],
    "ExpandBackward0": [lambda x, w: w[:, :1].expand(3, 4)],
    "RepeatBackward0": [lambda x, w: w.repeat(2, 1)],
    "CatBackward0": [lambda x, w: tg.cat([w, x, w])],
    "StackBackward0": [lambda x, w: tg.stack([w, x])],
    "SplitBackward0": [lambda x, w: w.split(2, 1)[1]],
    "SplitWithSizesBackward0": [lambda x, w: w.split([1, 3], 1)[1]],
    "UnbindBackward0": [lambda x, w: w.unbind(0)[1]],
    "UnsafeSplitBackward0": [lambda x, w: tg.unsafe_chunk(w, 2, 1)[1]],
    "UnsafeSplitWithSizesBackward0": [lambda x, w: w.unsafe_split_with_sizes([1, 3], 1)[1]],
    "CloneBackward0": [lambda x, w: w.clone(), lambda x, w: w @ x.t().unsqueeze(0).expand(2, 4, 3)],
    "SelectBackward0": [lambda x, w: w[1]],
    "SliceBackward0": [lambda x, w: w[:, 1:3]],
    "IndexBackward0": [lambda x, w: w[[0, 2]], lambda x, w: w[x > 0.1]],
    "AliasBackward0": [lambda x, w: w[...]],
    "GatherBackward0": [lambda x, w: w.gather(1, tg.tensor([[0], [3], [1]]))],
    "IndexSelectBackward0": [lambda x, w: w.index_select(0, tg.tensor(IDX))],
    "MaskedFillBackward0": [lambda x, w: w.masked_fill(x > 0.5, 0.0)],
    "MaskedFillBackward1": [lambda x, w: w.masked_fill(x > 0.5, w[0, 0])],
    "MaskedSelectBackward0": [lambda x, w: w.masked_select(x > 0.1)],
    "DotBackward0": [lambda x, w: w[0].dot(x[0])],
    "MvBackward0": [lambda x, w: w.mv(x[0])],
    "MmBackward0": [lambda x, w: w.mm(x.t())],
    "BmmBackward0": [lambda x, w: w[None].bmm(x.t()[None])],
    "SqueezeBackward4": [lambda x, w: w[0] @ x.t()],
    "AddmmBackward0": [lambda x, w: F.linear(x, w, w[:, 0])],
    "TrilBackward0": [lambda x, w: w.tril()],
    "TriuBackward0": [lambda x, w: w.triu(1)],
    "SoftmaxBackward0": [lambda x, w: F.softmax(w, 1)],
    "LogSoftmaxBackward0": [lambda x, w: F.log_softmax(w, 1)],
    "NllLossBackward0": [lambda x, w: F.nll_loss(w, tg.tensor(IDX)),
                         lambda x, w: F.cross_entropy(w, tg.tensor(IDX))],
    "NllLoss2DBackward0": [lambda x, w: F.nll_loss(w.reshape(1, 3, 2, 2),
                                                   tg.tensor([[[0, 1], [2, 0]]]))],
    "MseLossBackward0": [lambda x, w: F.mse_loss(w, x)],
    "SmoothL1LossBackward0": [lambda x, w: F.smooth_l1_loss(w, x, beta=0.2)],
    "HuberLossBackward0": [lambda x, w: F.huber_loss(w, x, delta=0.2)],
    "BinaryCrossEntropyBackward0": [lambda x, w: F.binary_cross_entropy(w, x)],
    "BinaryCrossEntropyWithLogitsBackward0": [
        lambda x, w: F.binary_cross_entropy_with_logits(w, x)],
    "EmbeddingBackward0": [lambda x, w: F.embedding(tg.tensor([[0, 2], [1, 1]]), w)],
    "NativeLayerNormBackward0": [lambda x, w: F.layer_norm(w, (4,)),
                                 lambda x, w: F.layer_norm(x, (4,), w[0], w[1])],
    "ConstantPadNdBackward0": [lambda x, w: F.pad(w, (1, 2))],
    "NativeBatchNormBackward0": [lambda x, w: F.batch_norm(w, None, None, training=True),
                                 lambda x, w: F.batch_norm(x, None, None, w[0], w[1],
                                                           training=True)],
}

# The library's kernel Functions (tapegrad.autograd.function.KernelFunction: convolutions,
# pooling, recurrent layers), which replay as one OP_KERNEL step each ("KernelFunctionBackward"
# is no grad_fn of an eager graph): grad_fn name of the layer -> functions of (x, w) as above.
def _layers(cls, *args, **kwargs):
    """One module per dtype (the layer's weights fixed, x and w change at every call)."""
    tg.manual_seed(3)
    return {tg.float32: cls(*args, **kwargs), tg.float64: cls(*args, **kwargs).double()}


LSTMS = _layers(tg.nn.LSTM, 4, 3, num_layers=2)
GRUS = _layers(tg.nn.GRU, 4, 3, bidirectional=True)
RNNS = _layers(tg.nn.RNN, 4, 3, nonlinearity="relu")
MHAS = _layers(tg.nn.MultiheadAttention, 4, 2)


def self_attention(mha, q):
    return mha(q, q, q, need_weights=False)[0]

KERNEL_FUNCTIONS = {
    "ConvolutionBackward0": [
        lambda x, w: F.conv2d(x.reshape(1, 1, 3, 4), w.reshape(3, 1, 2, 2), w[0, :3], padding=1),
        lambda x, w: F.conv1d(x.unsqueeze(0), w.reshape(2, 3, 2), stride=2),
        lambda x, w: F.conv2d(w.reshape(1, 3, 2, 2), x.reshape(3, 1, 2, 2), groups=3)],
    "ConvolutionBackward0 (transposed)": [
        lambda x, w: F.conv_transpose2d(x.reshape(1, 3, 2, 2), w.reshape(3, 1, 2, 2), stride=2),
        lambda x, w: F.conv_transpose2d(x.reshape(1, 3, 2, 2), w.reshape(3, 1, 2, 2), w[0, :1]),
        lambda x, w: F.conv_transpose1d(w.reshape(1, 3, 4), x.reshape(3, 2, 2), w[1, :2],
                                        stride=2)],
    "MaxPool2DWithIndicesBackward0": [
        lambda x, w: F.max_pool2d((w * x).reshape(1, 1, 3, 4), 2, stride=1),
        lambda x, w: F.max_pool2d(w.reshape(1, 3, 4), 2, padding=1) * 1.0,
        lambda x, w: F.max_pool1d(w.unsqueeze(0), 2) * 1.0,
        lambda x, w: F.max_pool2d(w.reshape(1, 1, 3, 4), 2, return_indices=True)[0] * 1.0],
    "AvgPool2DBackward0": [
        lambda x, w: F.avg_pool2d((w * x).reshape(1, 1, 3, 4), 2, stride=1),
        lambda x, w: F.avg_pool2d(w.reshape(1, 3, 4), 2, padding=1, count_include_pad=False),
        lambda x, w: F.avg_pool2d(w.reshape(1, 1, 3, 4), 2, ceil_mode=True, divisor_override=3)],
    "MkldnnRnnLayerBackward0": [
        lambda x, w: LSTMS[w.dtype]((w * x).reshape(3, 1, 4))[0],
        lambda x, w: LSTMS[w.dtype](w.reshape(3, 1, 4))[1][1] * 1.0],
    "ScaledDotProductFlashAttentionForCpuBackward0": [
        lambda x, w: F.scaled_dot_product_attention(w.reshape(1, 1, 3, 4), x.reshape(1, 1, 3, 4),
                                                    w.reshape(1, 1, 3, 4) * x.reshape(1, 1, 3, 4))],
    "_PackedSelfAttentionBackward": [
        lambda x, w: self_attention(MHAS[w.dtype], w.reshape(3, 1, 4) * x.reshape(3, 1, 4))],
    "CumprodBackward0": [
        lambda x, w: (w * x).reshape(3, 4).cumprod(1),
        lambda x, w: w.reshape(3, 4).cumprod(0) * x.reshape(3, 4)],
    "NativeGroupNormBackward0": [
        lambda x, w: F.group_norm((w * x).reshape(1, 4, 3), 2, w[0], w[1]),
        lambda x, w: F.group_norm(w.reshape(3, 2, 2) - x.reshape(3, 2, 2), 1)],
    "StackBackward0": [
        lambda x, w: GRUS[w.dtype](w.reshape(3, 1, 4) - x.reshape(3, 1, 4))[0],
        lambda x, w: RNNS[w.dtype](w.reshape(1, 3, 4))[1] * 1.0],
    # interpolate's and grid_sample's fused tap sums (tapegrad/nn/_tap_sum.py)
    "FusedTapSumBackward": [
        lambda x, w: F.interpolate((w * x).reshape(1, 1, 3, 4), size=(5, 6), mode="bicubic")],
    "CornerSumBackward": [
        lambda x, w: F.interpolate((w * x).reshape(1, 1, 3, 4), size=(5, 6), mode="bilinear")],
    "GridTapSumBackward": [
        lambda x, w: F.grid_sample(w.reshape(1, 1, 3, 4), x.reshape(1, 2, 3, 2) * 0.5,
                                   align_corners=False)],
    # grid_sample's own C kernels (tapegrad/nn/_grid_sample.py, grid_kernels.c)
    "GridSampler2DBackward0": [
        lambda x, w: F.grid_sample(w.reshape(1, 1, 3, 4), (x * w).reshape(1, 2, 3, 2) * 0.5,
                                   mode="nearest", padding_mode="border", align_corners=True),
        lambda x, w: F.grid_sample((w * x).reshape(1, 1, 3, 4), w.reshape(1, 2, 3, 2) * 0.4,
                                   padding_mode="reflection", align_corners=False)],
    "GridSampler3DBackward0": [
        lambda x, w: F.grid_sample(w.reshape(1, 1, 2, 2, 3), x.reshape(1, 1, 2, 2, 3) * 0.5,
                                   align_corners=False),
        lambda x, w: F.grid_sample((w * x).reshape(1, 1, 2, 2, 3),
                                   w.reshape(1, 1, 2, 2, 3) * 0.3, mode="nearest",
                                   padding_mode="border", align_corners=True)],
}

# KernelFunctions whose node is named after the op it ends (per dtype; None: not used there).
TAKES_ITS_OPS_NAME = {
    "FusedTapSumBackward": {"float64": None, "float32": "UpsampleBicubic2DBackward0"},
    "CornerSumBackward": {"float64": None, "float32": "UpsampleBilinear2DBackward0"},
    "GridTapSumBackward": {"float64": None, "float32": "GridSampler2DBackward0"},
}

# Random draws: replayed with fresh values from the generator stream eager draws from
# (test_random_ops_replay_with_the_eager_stream below).
RANDOM = {
    "dropout": lambda x, w: F.dropout(w, 0.3, training=True),
    "rand": lambda x, w: w * tg.rand(3, 4, dtype=w.dtype),
    "randn_like": lambda x, w: w + tg.randn_like(w),
}

# grad_fn names that no replayable function produces, and why.
NOT_REPLAYED = {
    "AccumulateGrad": "the leaf record, no op",
    "FunctionBackward": "custom autograd.Function: its forward is user Python (runs eagerly)",
    "FunctionOutput": "custom autograd.Function's output records",
    "AsStridedBackward0": "the history of a view after an in-place write into it",
    "UnfoldBackward0": "Tensor.unfold's windows, an as_strided view (AsStridedBackward0 before)",
    "CopySlices": "x[key] = v, an in-place write (a replay cannot repeat writes into inputs)",
    "CopyBackwards": "copy_(), x[:] = v, an in-place write of a whole tensor",
    "IndexPutBackward0": "x[index] = v, an in-place write with an advanced index",
    "ZeroBackward0": "zero_(), an in-place write",
    "TransposeBackward1": "transpose_(), an in-place view op (the step runs eagerly)",
    "TBackward1": "t_(), an in-place view op",
    "SqueezeBackward3": "squeeze_(), an in-place view op",
    "SqueezeBackward5": "squeeze_(dims), an in-place view op",
    "UnsqueezeBackward1": "unsqueeze_(), an in-place view op",
    "FillBackward2": "fill_(), an in-place write",
    "FillBackward3": "fill_() with a tensor, an in-place write",
    "NormalBackward0": "normal_(), an in-place draw",
    "UniformBackward0": "uniform_(), an in-place draw",
    "NormalBackward1": "normal_(), an in-place draw",
    "NormalBackward2": "normal_(), an in-place draw",
    "NormalBackward3": "normal_(), an in-place draw",
    "BernoulliBackward0": "torch.bernoulli(probs), a draw",
    "BernoulliBackward1": "bernoulli_(p tensor), an in-place draw",
    "BernoulliBackward2": "bernoulli_(p), an in-place draw",
    "PoissonBackward0": "torch.poisson(rates), a draw",
    "ExponentialBackward0": "exponential_(), an in-place draw",
    "GeometricBackward0": "geometric_(), an in-place draw",
    "LogNormalBackward0": "log_normal_(), an in-place draw",
    "CauchyBackward0": "cauchy_(), an in-place draw",
    "RandomBackward0": "random_(from, to), an in-place draw",
    "RandomBackward1": "random_(to), an in-place draw",
    "RandomBackward2": "random_(), an in-place draw",
    "NotImplemented": "the record of an op whose derivative PyTorch does not implement",
    "IndexBackwardBackward0": "only in double-backward graphs (create_graph)",
    "ThresholdBackwardBackward0": "only in double-backward graphs (create_graph)",
    "LeakyReluBackwardBackward0": "only in double-backward graphs (create_graph)",
    "HardtanhBackwardBackward0": "only in double-backward graphs (create_graph)",
    "HardshrinkBackwardBackward0": "only in double-backward graphs (create_graph)",
    "SoftshrinkBackwardBackward0": "only in double-backward graphs (create_graph)",
    "NllLossBackwardBackward0": "only in double-backward graphs (create_graph)",
    "NllLoss2DBackwardBackward0": "only in double-backward graphs (create_graph)",
    "NativeLayerNormBackwardBackward0": "only in double-backward graphs (create_graph)",
    "NativeBatchNormBackwardBackward0": "only in double-backward graphs (create_graph)",
    "ReadsInputBackward0": "only in double-backward graphs (create_graph)",
    "TanhBackwardBackward0": "only in double-backward graphs (create_graph)",
    "SigmoidBackwardBackward0": "only in double-backward graphs (create_graph)",
}


def test_every_registered_op_has_a_case():
    names = set(tg._core.op_names())
    # (replay steps' records, no eager grad_fn: CrossEntropyReplayStep is tested by
    # tests/test_perfmlp40.py, compiled against eager)
    missing = sorted(names - set(CASES) - set(NOT_REPLAYED)
                     - {"KernelFunctionBackward", "CrossEntropyReplayStep"})
    assert not missing, f"ops without a replay case (add one to CASES): {missing}"
    assert not set(CASES) & set(NOT_REPLAYED)
    assert set(CASES) | set(NOT_REPLAYED) <= names, "cases for ops no longer registered"


def graph_names(t):
    seen, stack, names, held = set(), [t.grad_fn], set(), []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        held.append(fn)         # (grad_fn objects are made on demand: ids of dead ones recur)
        names.add(fn.name())
        stack.extend(f for f, _ in fn.next_functions)
    return names


def bits(t):
    return t.detach().numpy()


def run_case(fn, dtype, calls=3):
    """Calls of fn compiled and eager on new inputs each time (x data, w a parameter)."""
    rng = np.random.default_rng(1)
    compiled = tg.compile(fn)
    out_e = None
    for it in range(calls):
        x = tg.tensor(rng.uniform(0.2, 0.9, (3, 4)).astype(dtype))
        w = rng.uniform(0.2, 0.9, (3, 4)).astype(dtype)
        w_c, w_e = tg.tensor(w, requires_grad=True), tg.tensor(w.copy(), requires_grad=True)
        out_c, out_e = compiled(x, w_c), fn(x, w_e)
        assert out_c.dtype == out_e.dtype and out_c.shape == out_e.shape
        assert np.array_equal(bits(out_c), bits(out_e), equal_nan=True), (it, out_c, out_e)
        seed = tg.tensor(rng.uniform(-1, 1, tuple(out_e.shape)).astype(bits(out_e).dtype))
        out_c.backward(seed)
        out_e.backward(seed)
        assert np.array_equal(w_c.grad.numpy(), w_e.grad.numpy(), equal_nan=True), (
            it, w_c.grad, w_e.grad)
    return compiled, out_e


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,k", [(name, k) for name, cases in CASES.items()
                                    for k in range(len(cases))])
def test_op_replays_as_eager(name, k, dtype):
    fn = CASES[name][k]
    compiled, out = run_case(fn, dtype)
    if k == 0:                  # the first case of each name runs that op (the others: variants)
        assert name in graph_names(out), f"{name}'s first case does not run it: {graph_names(out)}"
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert compiled.explain().startswith("replayed"), compiled.explain()


def draws(fn, dtype):
    """Three calls of fn (x data, w a parameter): [(value, gradient)]."""
    rng = np.random.default_rng(2)
    w = tg.tensor(rng.uniform(0.2, 0.9, (3, 4)).astype(dtype), requires_grad=True)
    outs = []
    for _ in range(3):
        x = tg.tensor(rng.uniform(0.2, 0.9, (3, 4)).astype(dtype))
        out = fn(x, w)
        out.backward(tg.ones_like(out))
        outs.append((bits(out).copy(), w.grad.numpy().copy()))
        w.grad = None
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", RANDOM)
def test_random_ops_replay_with_the_eager_stream(name, dtype):
    fn = RANDOM[name]
    compiled = tg.compile(fn)
    tg.manual_seed(11)
    got = draws(compiled, dtype)
    tg.manual_seed(11)
    want = draws(fn, dtype)
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert not np.array_equal(got[1][0], got[2][0])         # fresh draws at each replay
    for (value_c, grad_c), (value_e, grad_e) in zip(got, want):
        assert np.array_equal(value_c, value_e) and np.array_equal(grad_c, grad_e)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,k", [(name, k) for name, cases in KERNEL_FUNCTIONS.items()
                                    for k in range(len(cases))])
def test_kernel_function_replays_as_eager(name, k, dtype):
    """Each layer of the library built on a KernelFunction replays as its kernel step (not a
    re-run of the layer's Python), with eager's values and gradients bit for bit."""
    compiled, out = run_case(KERNEL_FUNCTIONS[name][k], dtype)
    grad_fn = name.split(" ")[0]        # (a kind of layer sharing PyTorch's name: "(...)")
    # (the fused tap sums serve float32 and half only, and their nodes take the name of the
    # op they complete, as PyTorch's: UpsampleBilinear2DBackward0, GridSampler2DBackward0)
    grad_fn = TAKES_ITS_OPS_NAME.get(grad_fn, {}).get(np.dtype(dtype).name, grad_fn)
    if grad_fn is not None:
        assert grad_fn in graph_names(out), f"{name} is not in the case's graph: {graph_names(out)}"
    assert compiled.stats["replays"] == 2, compiled.explain()
    assert compiled.explain().startswith("replayed"), compiled.explain()
    program = next(iter(compiled._plans.values())).program
    rerun = {getattr(c[0], "__name__", "") for c in program.calls()}
    # (max_pool1d stays a re-run op: the views around its 2-d kernel are PyTorch's graph too)
    assert not rerun & {"conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
                        "apply"}, \
        compiled.explain()


def test_every_kernel_function_has_a_case():
    """A KernelFunction added to the library without a replay case here fails."""
    from tapegrad.autograd.function import KernelFunction
    import tapegrad.nn.modules.rnn  # noqa: F401  (the recurrent layers' Functions)
    found, stack = set(), list(KernelFunction.__subclasses__())
    while stack:
        cls = stack.pop()
        found.add(cls._backward_cls.__name__)
        stack.extend(cls.__subclasses__())
    only_double_backward = {"_ConvWeightGradBackward"}    # made by conv's create_graph backward
    assert found - only_double_backward == {name.split(" ")[0] for name in KERNEL_FUNCTIONS}, found
