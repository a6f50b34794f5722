"""Gaps found by running held-out tutorial scripts (DefuLi/Pytorch-Tutorial, Dxhuang-CASIA,
anak1st/Learn-PyTorch) under tapegrad and PyTorch: each test replays the script's idiom in both."""
import pytest

import tapegrad as tg


def _raised(fn):
    try:
        fn()
    except Exception as e:       # the exception type and message are what the scripts print
        return type(e), str(e)
    return None


def test_module_vars_in_pytorch_order(torch):
    # A tutorial prints vars(layer): the attribute order is part of what it shows.
    assert list(vars(tg.nn.BatchNorm2d(4))) == list(vars(torch.nn.BatchNorm2d(4)))
    assert list(vars(tg.nn.Linear(2, 3))) == list(vars(torch.nn.Linear(2, 3)))
    assert list(tg.nn.Sequential(tg.nn.ReLU()).__dict__) == \
        list(torch.nn.Sequential(torch.nn.ReLU()).__dict__)


def test_optimizer_refusing_a_tensor_names_its_tensor_type(torch):
    # SGD(torch.randn(1, 20)) (a tensor, not an iterable of them) names the legacy type name
    for lib in (tg, torch):
        assert _raised(lambda: lib.optim.SGD(lib.ones(1, 20), lr=1e-3)) == (
            TypeError, "params argument given to the optimizer should be an iterable of Tensors "
                       "or dicts, but got torch.FloatTensor")
    assert _raised(lambda: tg.optim.SGD(tg.ones(2, dtype=tg.float64), lr=1))[1].endswith(
        "torch.DoubleTensor")


@pytest.mark.parametrize("case", ["requires_grad_", "attribute", "Parameter", "full", "tensor"])
def test_integer_tensor_requiring_grad_message(torch, case):
    # PyTorch words this refusal three ways, by the path that asks; scripts print the message.
    def run(lib):
        if case == "requires_grad_":
            return _raised(lambda: lib.full([1], 2).requires_grad_())
        if case == "attribute":
            return _raised(lambda: setattr(lib.tensor([1]), "requires_grad", True))
        if case == "Parameter":
            return _raised(lambda: lib.nn.Parameter(lib.tensor([1])))
        if case == "full":
            return _raised(lambda: lib.full([1], 2, requires_grad=True))
        return _raised(lambda: lib.tensor([1], requires_grad=True))
    assert run(tg) == run(torch)


def test_integer_parameter_without_grad_is_allowed(torch):
    p, q = tg.nn.Parameter(tg.tensor([1]), requires_grad=False), \
        torch.nn.Parameter(torch.tensor([1]), requires_grad=False)
    assert (p.requires_grad, str(p.dtype)) == (q.requires_grad, str(q.dtype))


_ODD_DATA = {
    "None": None, "object": object(), "dict": {"a": 1}, "list_with_None": [None, 1.0],
    "nested_None": [[1, 2], [None, 3]], "number_then_string": [1, "a"], "Decimal": "Decimal",
    "Decimal_list": "Decimal_list", "Fraction": "Fraction", "ragged_with_None": [[1, 2], [None]],
    "string": "abc",
}


@pytest.mark.parametrize("dtype", ["float32", "complex64", "int64", "bool"])
@pytest.mark.parametrize("case", list(_ODD_DATA))
def test_tensor_with_dtype_reads_items_by_that_dtype(torch, case, dtype):
    # torch.tensor(data, dtype=...) converts each item as Python converts it to the dtype: a
    # float dtype takes Decimal/Fraction; None or an object raises TypeError (the inference
    # RuntimeError is only for data without a dtype).  A CSV column with a gap hits this.
    import decimal
    import fractions

    def data():
        v = _ODD_DATA[case]
        return {"Decimal": decimal.Decimal("1.5"), "Decimal_list": [decimal.Decimal("1.5"), 2],
                "Fraction": fractions.Fraction(1, 2)}.get(v, v) if isinstance(v, str) \
            and case != "string" else v

    def run(lib):
        try:
            t = lib.tensor(data(), dtype=getattr(lib, dtype))
        except Exception as e:
            return type(e).__name__, str(e)
        return str(t.dtype), t.tolist()
    assert run(tg) == run(torch)
    # (without a dtype the inference error stands)
    if case in ("None", "list_with_None", "nested_None"):
        assert _raised(lambda: tg.tensor(data()))[0] is RuntimeError
