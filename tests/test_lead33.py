"""Session 33 (lead): lazy modules' placeholders refuse ops as PyTorch's do; nn.init's
initialisers dispatch to a tensor subclass's __torch_function__; nn.Parameter of a user's
subclass; create_graph gradients' node names; prod's and float32 atan2's rounding; zero-stride
as_strided views refuse elementwise writes.  Each case is checked against torch."""
import warnings

import numpy as np
import pytest

import tapegrad
from tapegrad import nn

torch = pytest.importorskip("torch")

USE = "Attempted to use an uninitialized parameter in"


@pytest.mark.parametrize("use", [lambda lib, p: p + 1, lambda lib, p: p.sum(),
                                 lambda lib, p: p * p, lambda lib, p: lib.mm(p, p),
                                 lambda lib, p: p.detach(), lambda lib, p: p.clone(),
                                 lambda lib, p: lib.nn.init.zeros_(p),
                                 lambda lib, p: lib.nn.init.kaiming_uniform_(p)])
@pytest.mark.parametrize("kind", ["UninitializedParameter", "UninitializedBuffer"])
def test_a_placeholder_refuses_ops(use, kind):
    # Before: an op on the shape-(0,) placeholder computed on no elements (p + 1 -> tensor([])).
    for lib in (tapegrad, torch):
        placeholder = getattr(lib.nn.parameter, kind)()
        with pytest.raises(ValueError, match=USE + ".*" + f"torch.nn.parameter.{kind}"):
            use(lib, placeholder)


def test_a_placeholder_allows_what_modules_need():
    p = nn.parameter.UninitializedParameter()
    assert p.size() == torch.nn.parameter.UninitializedParameter().size()
    assert p.dtype == tapegrad.float32 and p.requires_grad and p.is_floating_point()
    assert isinstance(hash(p), int)
    with pytest.raises(ValueError, match=r"<method 'add' of 'torch._C.TensorBase' objects>"):
        p.add(1)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and (p + 1).shape == (2, 3)


def test_lazy_modules_convert_save_and_initialise():
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyBatchNorm1d())
    model.to(tapegrad.float64)
    model.half().float()
    saved = model.state_dict()
    assert {type(v).__name__ for v in saved.values()} >= {"UninitializedParameter",
                                                          "UninitializedBuffer"}
    assert len(tapegrad.optim.SGD(model.parameters(), lr=0.1).param_groups[0]["params"]) == 4
    assert model(tapegrad.ones(4, 5)).shape == (4, 3)
    assert type(model[0].weight) is nn.Parameter and model[2].running_mean.shape == (3,)


def test_init_functions_dispatch_to_a_subclass():
    def calls(lib, init):
        seen = []

        class Logged(lib.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                seen.append(func.__name__)
                return super().__torch_function__(func, types, args, kwargs or {})

        out = init(lib, lib.ones(2, 3).as_subclass(Logged))
        return type(out).__name__, seen

    for init in (lambda lib, t: lib.nn.init.uniform_(t), lambda lib, t: lib.nn.init.normal_(t),
                 lambda lib, t: lib.nn.init.constant_(t, 0.5),
                 lambda lib, t: lib.nn.init.kaiming_uniform_(t),
                 lambda lib, t: lib.nn.init.zeros_(t), lambda lib, t: lib.nn.init.ones_(t)):
        assert calls(tapegrad, init) == calls(torch, init)


@pytest.mark.parametrize("with_torch_function", [False, True])
def test_a_parameter_of_a_user_subclass_keeps_its_class(with_torch_function):
    # Before: nn.Parameter(x) turned a user's subclass instance into a plain Parameter (its
    # class, and with it the subclass's behaviour, lost), where PyTorch keeps the class and flags it.
    def run(lib):
        body = {}
        if with_torch_function:
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return super(Custom, cls).__torch_function__(func, types, args, kwargs or {})
            body["__torch_function__"] = classmethod(__torch_function__)
        Custom = type("Custom", (lib.Tensor,), body)
        p = lib.nn.Parameter(lib.ones(2).as_subclass(Custom))
        module = lib.nn.Module()
        module.w = p
        (module.w * 2).sum().backward()
        frozen = lib.nn.Parameter(lib.ones(2).as_subclass(Custom), requires_grad=False)
        return (type(p).__name__, isinstance(p, lib.nn.Parameter), p.requires_grad, p.is_leaf,
                list(dict(module.named_parameters())), repr(p), p.grad.tolist(),
                type(frozen).__name__, frozen.requires_grad,
                isinstance(lib.ones(1), lib.nn.Parameter),
                isinstance(lib.nn.Parameter(lib.ones(1)), lib.nn.parameter.Buffer))
    assert run(tapegrad) == run(torch)


# -- create_graph gradients carry the node PyTorch records for the adjoint -----------------------
# Before: every view or selection's gradient printed IndexBackwardBackward0 (the recorded
# scatter), softmax's AddBackward0, gather's ViewBackward0, where PyTorch prints the backward's
# own op.  Values and higher derivatives are unchanged (compared too).

_ADJOINTS = {
    "x[1:]": lambda L, x: x[1:], "x[0]": lambda L, x: x[0], "x[:, 1]": lambda L, x: x[:, 1],
    "x[0, 1:]": lambda L, x: x[0, 1:], "x[1:, 0]": lambda L, x: x[1:, 0],
    "x[..., 2]": lambda L, x: x[..., 2], "x[None, 0]": lambda L, x: x[None, 0],
    "x[:, None, 1:]": lambda L, x: x[:, None, 1:], "x[:]": lambda L, x: x[:],
    "x[:, :]": lambda L, x: x[:, :], "x[...]": lambda L, x: x[...],
    "x[[0, 1], [2, 0]]": lambda L, x: x[[0, 1], [2, 0]], "x[x > 0]": lambda L, x: x[x > 0],
    "x[[0, 1], 1:]": lambda L, x: x[[0, 1], 1:], "x[0, [0, 2]]": lambda L, x: x[0, [0, 2]],
    "x[True]": lambda L, x: x[True], "narrow": lambda L, x: x.narrow(1, 1, 2),
    "select": lambda L, x: x.select(1, 2), "unbind": lambda L, x: x.unbind(1)[0],
    "split": lambda L, x: x.split([1, 3], 1)[1], "chunk": lambda L, x: x.chunk(2, 1)[1],
    "diagonal": lambda L, x: x.diagonal(), "unfold": lambda L, x: x.unfold(1, 2, 1),
    "flip": lambda L, x: x.flip(0), "softmax": lambda L, x: L.softmax(x, -1)[:, 0],
    "log_softmax": lambda L, x: L.log_softmax(x, 0)[1],
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(x, L.tensor([0, 3])),
    "gather": lambda L, x: x.gather(1, L.tensor([[0], [2]])),
    "index_select": lambda L, x: x.index_select(1, L.tensor([0, 2])),
    "masked_select": lambda L, x: x.masked_select(x > 0),
    "masked_fill": lambda L, x: x.masked_fill(x > 1, 0.0),
    "pad": lambda L, x: L.nn.functional.pad(x, (1, 2)), "repeat": lambda L, x: x.repeat(2, 1),
}


def _second_order(L, name):
    x = L.tensor([[0.5, -1.0, 2.0, 4.0], [1.5, 0.3, -0.7, 2.0]], dtype=L.float64,
                 requires_grad=True)
    y = _ADJOINTS[name](L, x)
    g, = L.autograd.grad((y * y.detach().cos()).sum() + y.pow(3).sum(), x, create_graph=True)
    hvp, = L.autograd.grad((g * g.detach().sin()).sum(), x)
    return type(g.grad_fn).__name__, g.detach().numpy(), hvp.numpy()


@pytest.mark.parametrize("name", sorted(_ADJOINTS))
def test_create_graph_gradient_node_names(name):
    got_name, got, got_hvp = _second_order(tapegrad, name)
    want_name, want, want_hvp = _second_order(torch, name)
    assert got_name == want_name
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_hvp, want_hvp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dim", [None, 0, 1])
@pytest.mark.parametrize("create_graph", [False, True])
def test_prod_gradient_rounds_as_pytorch(dim, create_graph):
    # PyTorch's prod gradient without zeros is grad * (result / input); tapegrad computed
    # (grad * result) / input: the same value but for the last bit in ~80% of cases.
    a = np.array([[0.37, -1.91, 2.23], [1.13, 0.71, -3.07]])
    got = want = None
    for L in (tapegrad, torch):
        x = L.tensor(a, requires_grad=True)
        y = x.prod() if dim is None else x.prod(dim)
        g, = L.autograd.grad((y * 0.731).sum(), x, create_graph=create_graph)
        if L is tapegrad:
            got = g.detach().numpy()
            if create_graph:
                assert type(g.grad_fn).__name__ == "MulBackward0"
        else:
            want = g.detach().numpy()
    assert np.array_equal(got, want)


def test_float32_atan2_rounds_as_pytorchs_kernels():
    # numpy's float32 arctan2 gave PyTorch's bits in ~61% of inputs (atan2(1, 1) was
    # 0.78539812, PyTorch's 0.78539819); computed in float64 and rounded once, ~98%.
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    got = tapegrad.atan2(tapegrad.from_numpy(a), tapegrad.from_numpy(b)).numpy()
    want = torch.atan2(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.dtype == np.float32 and np.mean(got == want) > 0.95
    assert tapegrad.atan2(tapegrad.tensor(1.0), tapegrad.tensor(1.0)).item() == \
        torch.atan2(torch.tensor(1.0), torch.tensor(1.0)).item()


@pytest.mark.parametrize("write", ["add_", "mul_", "relu_", "out", "take_out", "exp_out",
                                   "fill_", "setitem", "zero_", "masked_fill_"])
def test_zero_stride_as_strided_refuses_elementwise_writes(write):
    # Before: a view whose elements are one memory location (as_strided with a zero stride)
    # took in-place ops, the last aliased write winning (add_ left 1.0 where PyTorch raises);
    # now it is read-only as expand()'s, with PyTorch's refusals and its single-value writes.
    def run(L):
        base = L.zeros(1)
        view = base.as_strided((3,), (0,))
        ops = {"add_": lambda: view.add_(1), "mul_": lambda: view.mul_(2),
               "relu_": lambda: view.relu_(), "out": lambda: L.add(L.ones(3), 1, out=view),
               "take_out": lambda: L.take(L.arange(6.0), L.tensor([0, 2, 1]), out=view),
               "exp_out": lambda: L.exp(L.ones(3), out=view), "fill_": lambda: view.fill_(2.0),
               "setitem": lambda: view.__setitem__(0, 5.0), "zero_": lambda: view.zero_(),
               "masked_fill_": lambda: view.masked_fill_(L.tensor([True, False, True]), 3.0)}
        try:
            with warnings.catch_warnings():     # (masked_fill_ warns of the expanded self in both)
                warnings.simplefilter("ignore")
                ops[write]()
        except RuntimeError as e:
            return "more than one element of the written-to tensor" in str(e)
        return base.tolist()
    assert run(tapegrad) == run(torch)
