"""Tensor.grad_dtype as PyTorch 2.13's: the dtype a leaf's .grad must have (default: its own;
None: any), to which the engine casts the gradients it delivers, into .grad (both sweeps) and as
autograd.grad's results; its refusals in PyTorch's words."""
import copy
import warnings

import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _outcome(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = f()
    except Exception as e:          # noqa: BLE001 - the type and message are compared
        return (type(e).__name__, str(e))
    if isinstance(out, (torch.Tensor, tapegrad.Tensor)):
        return (str(out.dtype), out.detach().tolist())
    return str(out)


def _session(lib):
    out = []
    x = lib.ones(2, requires_grad=True)
    z = x * 2
    out.append(_outcome(lambda: x.grad_dtype))

    def assign(t, value):
        t.grad = value
    def set_dtype(t, value):
        t.grad_dtype = value
    out.append(_outcome(lambda: assign(x, lib.ones(2, dtype=lib.float64))))
    out.append(_outcome(lambda: set_dtype(z, lib.float64)))
    out.append(_outcome(lambda: z.grad_dtype))
    out.append(_outcome(lambda: set_dtype(x, "float")))
    x.grad_dtype = lib.float16
    out.append(_outcome(lambda: assign(x, lib.ones(2))))
    x.grad_dtype = lib.float64
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    out.append(_outcome(lambda: x.grad))
    out.append(_outcome(lambda: set_dtype(x, lib.float32)))
    y = lib.ones(2, requires_grad=True)
    y.grad_dtype = None
    out.append(_outcome(lambda: y.grad_dtype))
    y.grad = lib.ones(2, dtype=lib.int64)
    out.append(_outcome(lambda: y.grad))
    y.grad = lib.ones(2, dtype=lib.float64)
    (y * 2).sum().backward()
    out.append(_outcome(lambda: y.grad))
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    w.grad_dtype = lib.float64
    out.append(_outcome(lambda: lib.autograd.grad((w * w).sum(), w)[0]))
    out.append(_outcome(lambda: lib.autograd.grad((w * w).sum(), w, create_graph=True)[0]))
    with warnings.catch_warnings():      # (the create_graph reference-cycle warning)
        warnings.simplefilter("ignore")
        (w * w * w).sum().backward(create_graph=True)
    out.append(_outcome(lambda: w.grad))
    h = lib.ones(2, requires_grad=True)
    h.grad_dtype = lib.float16
    (h / 3).sum().backward()
    out.append(_outcome(lambda: h.grad))
    out.append(_outcome(lambda: lib.nn.Parameter(lib.ones(2)).grad_dtype))
    n = lib.ones(2)
    n.grad_dtype = lib.float64
    out.append(_outcome(lambda: n.grad_dtype))
    h.grad = None
    out.append(_outcome(lambda: (h.detach().grad_dtype, copy.deepcopy(h).grad_dtype)))
    m = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        m.weight.copy_(lib.arange(6.0).reshape(2, 3) / 7)
    for p in m.parameters():
        p.grad_dtype = lib.float32
    m(lib.ones(1, 3, dtype=lib.float64) / 3).sum().backward()
    out.append([_outcome(lambda: p.grad) for p in m.parameters()])
    return out


def test_grad_dtype_as_pytorch():
    assert _session(tapegrad) == _session(torch)


def test_mismatched_assignment_message_names_grad_dtype():
    x = tapegrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="You can set the tensor's grad_dtype attribute"):
        x.grad = tapegrad.ones(2, dtype=tapegrad.float64)
