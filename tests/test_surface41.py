"""PyTorch's refusals and names scripts still meet (issue surface41): mixed-dtype writes of a
source into self with bfloat16 on either side, float8 saving and autograd, the printed type
names, argument errors of the common overloaded functions; each checked against torch."""
import pytest

import tapegrad as tg

INDEX = [0, 2]
MASK = [True, False, True, False]

# each write as fn(module, self, source): the family of in-place (and out-of-place) writes of a
# source tensor, whose dtype rules differ per op in PyTorch
WRITES = {
    "index_put_": lambda m, t, s: t.index_put_((m.tensor(INDEX),), s[:2]),
    "index_put_acc": lambda m, t, s: t.index_put_((m.tensor([0, 0]),), s[:2], accumulate=True),
    "index_put": lambda m, t, s: t.index_put((m.tensor(INDEX),), s[:2]),
    "put_": lambda m, t, s: t.put_(m.tensor(INDEX), s[:2]),
    "put": lambda m, t, s: t.put(m.tensor(INDEX), s[:2]),
    "index_copy_": lambda m, t, s: t.index_copy_(0, m.tensor(INDEX), s[:2]),
    "index_add_": lambda m, t, s: t.index_add_(0, m.tensor(INDEX), s[:2], alpha=2),
    "index_add": lambda m, t, s: t.index_add(0, m.tensor(INDEX), s[:2]),
    "index_reduce_": lambda m, t, s: t.index_reduce_(0, m.tensor(INDEX), s[:2], "prod"),
    "masked_scatter_": lambda m, t, s: t.masked_scatter_(m.tensor(MASK), s),
    "masked_scatter": lambda m, t, s: t.masked_scatter(m.tensor(MASK), s),
    "masked_fill_": lambda m, t, s: t.masked_fill_(m.tensor(MASK), s[0]),
    "index_fill_": lambda m, t, s: t.index_fill_(0, m.tensor(INDEX), s[0]),
    "scatter_": lambda m, t, s: t.scatter_(0, m.tensor(INDEX), s[:2]),
    "scatter_add_": lambda m, t, s: t.scatter_add_(0, m.tensor(INDEX), s[:2]),
    "scatter_reduce_": lambda m, t, s: t.scatter_reduce_(0, m.tensor(INDEX), s[:2], "amax"),
    "scatter_reduce": lambda m, t, s: t.scatter_reduce(0, m.tensor(INDEX), s[:2], "sum"),
    "torch.scatter": lambda m, t, s: m.scatter(t, 0, m.tensor(INDEX), s[:2]),
    "lerp_end": lambda m, t, s: t.lerp_(s, 0.3),
    "lerp_weight": lambda m, t, s: t.lerp_(t.clone(), s),
    "lerp_0d_weight": lambda m, t, s: t.lerp_(t.clone(), s[0]),
    "lerp": lambda m, t, s: t.lerp(s, 0.3),
    "copy_": lambda m, t, s: t.copy_(s),
    "setitem_slice": lambda m, t, s: t.__setitem__(slice(0, 2), s[:2]),
    "setitem_index": lambda m, t, s: t.__setitem__(m.tensor(INDEX), s[:2]),
    "setitem_list": lambda m, t, s: t.__setitem__([0, 2], s[:2]),
    "setitem_mask": lambda m, t, s: t.__setitem__(m.tensor(MASK), s[:2]),
    "setitem_mask_one": lambda m, t, s: t.__setitem__(m.tensor(MASK), s[:1]),
    "diagonal_scatter": lambda m, t, s: m.diagonal_scatter(t.reshape(2, 2), s[:2]),
    "slice_scatter": lambda m, t, s: m.slice_scatter(t, s[:2], 0, 0, 2),
    "select_scatter": lambda m, t, s: m.select_scatter(t, s[0], 0, 0),
}
PAIRS = [("float32", "bfloat16"), ("bfloat16", "float32"), ("bfloat16", "float16"),
         ("float64", "bfloat16"), ("bfloat16", "float64"), ("float16", "float32"),
         ("float32", "float64")]


def _outcome(fn):
    """(result, None) or (None, (exception type name, first line of its message))."""
    try:
        return fn(), None
    except Exception as e:      # noqa: BLE001 (compared with torch's outcome)
        return None, (type(e).__name__, str(e).split("\n")[0])


def _write(m, name, target, source):
    t = (m.arange(1, 5).float() * 1.0039).to(getattr(m, target))
    s = (m.arange(1, 5).float() * 1.37).to(getattr(m, source))
    result, error = _outcome(lambda: WRITES[name](m, t, s))
    if error:
        return error
    result = t if result is None else result
    return str(result.dtype), str(t.dtype), result.double().reshape(-1).tolist()


@pytest.mark.parametrize("target,source", PAIRS)
def test_writes_from_a_source_of_another_dtype_match_torch(target, source):
    torch = pytest.importorskip("torch")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (index_reduce's beta warning)
        for name in WRITES:
            assert _write(tg, name, target, source) == _write(torch, name, target, source), name


def test_float32_self_refuses_a_bfloat16_source_it_used_to_take():
    # these computed, reading the bfloat16 source as float32
    t, s = tg.ones(4), tg.ones(4, dtype=tg.bfloat16)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        t[tg.tensor(INDEX)] = s[:2]
    with pytest.raises(RuntimeError, match="Float for the destination and BFloat16"):
        t.index_put_((tg.tensor(INDEX),), s[:2])
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        t.scatter_reduce_(0, tg.tensor(INDEX), s[:2], "sum")
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype "
                                           "c10::BFloat16"):
        t.lerp_(s, 0.5)


def test_scatter_copies_into_bfloat16_stay_bfloat16():
    # SILENT before: float32 results holding unrounded values
    t = tg.arange(4.0).to(tg.bfloat16)
    r = tg.slice_scatter(t, tg.tensor([1.0039, 2.0]), 0, 0, 2)
    assert r.dtype is tg.bfloat16 and r.tolist() == [1.0, 2.0, 2.0, 3.0]


def test_a_subclass_value_written_into_a_plain_tensor_dispatches():
    seen = []

    class Logged(tg.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((func.__name__, [type(a).__name__ for a in args], kwargs))
            return super().__torch_function__(func, types, args, kwargs or {})

    t, s = tg.zeros(4), tg.ones(2).as_subclass(Logged)
    t[tg.tensor(INDEX)] = s
    t[1:3] = s
    t.index_put_((tg.tensor(INDEX),), s)
    assert seen == [("__setitem__", ["Tensor", "Tensor", "Logged"], None),
                    ("__setitem__", ["Tensor", "slice", "Logged"], None),
                    ("index_put_", ["Tensor", "tuple", "Logged"], None)]
    assert t.tolist() == [1.0, 1.0, 1.0, 0.0]
