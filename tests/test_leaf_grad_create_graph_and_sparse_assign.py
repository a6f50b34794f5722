"""Leaf gradients as PyTorch lays them out and accepts them (found running jettify/pytorch-optimizer's
optimizers under tapegrad):

- backward(create_graph=True) gave nn.Linear's weight a transposed (non-contiguous) .grad, so
  AdamP's grad.view(n, -1) raised where PyTorch's works (its gradient layout contract: a
  contiguous leaf's first .grad is contiguous);
- its reference-cycle warning came from each calling line (shown once per line, so a training
  loop printed it several times): PyTorch warns from one line of its own, shown once;
- assigning a sparse gradient to a sparse leaf raised (PyTorch accepts one of the same size and
  dtype, and backward adds to it).
"""
import copy
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _linear_weight_grad(lib, create_graph, times=1):
    lin = lib.nn.Linear(3, 4)
    rng = np.random.RandomState(0)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(rng.randn(4, 3)))
        lin.bias.copy_(lib.tensor(rng.randn(4)))
    x = lib.tensor(rng.randn(5, 3), dtype=lib.float32, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(times):
            (lin(x) ** 2).sum().backward(create_graph=create_graph)
    return lin.weight, x


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("times", [1, 2])
def test_linear_weight_grad_layout_and_values(create_graph, times):
    w_t, x_t = _linear_weight_grad(torch, create_graph, times)
    w_g, x_g = _linear_weight_grad(tg, create_graph, times)
    assert w_g.grad.stride() == w_t.grad.stride() == (3, 1)
    assert w_g.grad.is_contiguous()
    np.testing.assert_allclose(w_g.grad.detach().numpy(), w_t.grad.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(x_g.grad.detach().numpy(), x_t.grad.detach().numpy(), rtol=1e-5)
    # the optimizer's reshaping that raised before
    assert w_g.grad.view(w_g.grad.size(0), -1).shape == (4, 3)
    assert w_g.grad.requires_grad == w_t.grad.requires_grad == create_graph


def test_create_graph_grad_stays_differentiable():
    """The contiguous copy is a recorded op: the second-order gradient flows through it."""
    def second_order(lib):
        w = lib.tensor(np.arange(6.).reshape(2, 3) / 5, requires_grad=True)
        x = lib.tensor(np.arange(12.).reshape(4, 3) / 7)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x @ w.t()).pow(3).sum().backward(create_graph=True)
        g = w.grad
        (h,) = lib.autograd.grad((g * g).sum(), w)
        return g.stride(), g.detach().numpy(), h.numpy()

    (st, gt, ht), (sg, gg, hg) = second_order(torch), second_order(tg)
    assert sg == st
    np.testing.assert_allclose(gg, gt, rtol=1e-12)
    np.testing.assert_allclose(hg, ht, rtol=1e-12)


def test_create_graph_grad_second_order_finite_differences():
    x0 = np.random.RandomState(1).randn(2, 3)
    a = tg.tensor(np.random.RandomState(2).randn(4, 3))

    def grad_norm(w):
        w = w.detach().requires_grad_()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (a @ w.t()).tanh().sum().backward(create_graph=True)
        return (w.grad * w.grad).sum(), w

    value, w = grad_norm(tg.tensor(x0))
    (analytic,) = tg.autograd.grad(value, w)
    eps, numeric = 1e-6, np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (grad_norm(tg.tensor(up))[0].item() - grad_norm(tg.tensor(down))[0].item()) / (2 * eps)
    np.testing.assert_allclose(analytic.numpy(), numeric, rtol=1e-6, atol=1e-8)


SCRIPT = """
import warnings, {lib} as torch
warnings.simplefilter("default")
w = torch.ones(2, requires_grad=True)
for i in range(3):
    (w * w).sum().backward(create_graph=True)
(w * 3).sum().backward(create_graph=True)
print(float(w.grad.sum()))
"""


def test_create_graph_warning_shown_once_per_process():
    def run(lib):
        r = subprocess.run([sys.executable, "-c", SCRIPT.format(lib=lib)], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout, r.stderr.count("Using backward() with create_graph=True")
    assert run("tapegrad") == run("torch") == ("18.0\n", 1)


def test_create_graph_warning_is_an_ordinary_user_warning():
    w = tg.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (w * w).sum().backward(create_graph=True)
        (w * w).sum().backward(create_graph=True)
    assert [c.category for c in caught] == [UserWarning, UserWarning]
    assert "reset the .grad fields" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            (w * w).sum().backward(create_graph=True)


def _sparse_leaf(lib):
    p = lib.tensor([[0., 2., 0.], [3., 0., 4.]]).to_sparse().requires_grad_(True)
    g = lib.tensor([[1., 0., 0.], [0., 0., 5.]]).to_sparse()
    return p, g


def test_assign_sparse_grad_to_sparse_leaf():
    for lib in (torch, tg):
        p, g = _sparse_leaf(lib)
        p.grad = g
        assert p.grad is g and p.grad.is_sparse
        p.grad = None
        assert p.grad is None


@pytest.mark.parametrize("bad", ["dense", "size", "dtype", "int"])
def test_assign_bad_grad_to_sparse_leaf(bad):
    def outcome(lib):
        p, g = _sparse_leaf(lib)
        value = {"dense": lambda: lib.zeros(2, 3), "size": lambda: lib.zeros(3, 2).to_sparse(),
                 "dtype": lambda: g.double(), "int": lambda: 5}[bad]()
        try:
            p.grad = value
        except (RuntimeError, TypeError) as e:
            return type(e).__name__, str(e)[:120]
        return "accepted"
    assert outcome(tg) == outcome(torch)


def test_backward_adds_to_an_assigned_sparse_grad():
    def run(lib):
        q = lib.sparse_coo_tensor([[0, 1]], [1., 2.], (3,), requires_grad=True)
        q.grad = lib.sparse_coo_tensor([[2, 0]], [5., 7.], (3,))
        (q * 3.0).to_dense().sum().backward()
        return q.grad.is_sparse, q.grad.to_dense().numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = run(torch)
    got = run(tg)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])



OPTIMIZERS = ["Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam",
              "ASGD", "Rprop", "SparseAdam"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_with_a_sparse_parameter(name):
    """torch_optimizer's test_param_validation: an optimizer takes a sparse leaf, a step without
    gradients passes, and a step that sees an assigned sparse gradient refuses it as PyTorch's."""
    def outcome(lib):
        p, g = _sparse_leaf(lib)
        try:
            opt = getattr(lib.optim, name)([p], lr=0.1)
            opt.zero_grad()
            opt.step()
            sd = opt.state_dict()
            p.grad = g
            opt.step()
        except (RuntimeError, ValueError) as e:
            return type(e).__name__, str(e)
        return "stepped", sd["param_groups"][0]["params"]
    assert outcome(tg) == outcome(torch)


def test_sparse_refusal_names_the_builtin_class_in_a_subclass():
    def outcome(lib):
        class MyRMSprop(lib.optim.RMSprop):
            pass
        p, g = _sparse_leaf(lib)
        opt = MyRMSprop([p])
        p.grad = g
        with pytest.raises(RuntimeError) as e:
            opt.step()
        return str(e.value)
    assert outcome(tg) == outcome(torch) == "RMSprop does not support sparse gradients"


def test_sgd_refuses_a_sparse_gradient_loudly():
    """PyTorch's SGD adds a sparse gradient into a sparse parameter; tapegrad's says it cannot."""
    p, g = _sparse_leaf(tg)
    opt = tg.optim.SGD([p], lr=0.1)
    p.grad = g
    with pytest.raises(NotImplementedError, match="SGD steps on sparse gradients"):
        opt.step()


def test_sparse_data_is_a_detached_sparse_tensor():
    """p.grad.data on a sparse gradient (every torch_optimizer step reads it): it gave a function
    object, so grad.is_sparse raised AttributeError."""
    for lib in (torch, tg):
        p, g = _sparse_leaf(lib)
        d = p.data
        assert d.is_sparse and not d.requires_grad and p.requires_grad
        np.testing.assert_array_equal(d.to_dense().numpy(), p.detach().to_dense().numpy())
        p.grad = g
        assert p.grad.data.is_sparse


def test_unsupported_sparse_property_raises_at_access():
    s = tg.tensor([[0., 1.], [2., 0.]]).to_sparse()
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        s.itemsize
    with pytest.raises(NotImplementedError, match="SparseCPU"):
        s.abs_()



def test_zero_grad_keeping_a_sparse_gradient_empties_it():
    """zero_grad(set_to_none=False) (torch_optimizer's Lookahead passes False): PyTorch zeroes a
    sparse gradient to no entries and keeps it, so the next step still refuses it."""
    def outcome(lib):
        p, g = _sparse_leaf(lib)
        p.grad = g
        opt = lib.optim.RMSprop([p])
        opt.zero_grad(set_to_none=False)
        kept = (p.grad.is_sparse, p.grad._nnz(), tuple(p.grad.shape), p.grad.dtype == p.dtype,
                float(p.grad.to_dense().abs().sum()))
        with pytest.raises(RuntimeError) as e:
            opt.step()
        return kept, str(e.value)
    assert outcome(tg) == outcome(torch)


@pytest.mark.parametrize("kwargs", [{}, {"dtype": "float64"}, {"requires_grad": True}])
def test_zeros_like_of_a_sparse_tensor(kwargs):
    """torch_optimizer's MADGRAD initialises its state with zeros_like(p.data) (TypeError for a
    sparse parameter before): a sparse tensor with no entries, as PyTorch's."""
    def outcome(lib):
        s = lib.tensor([[0., 2.], [3., 0.]]).to_sparse().requires_grad_(True)
        kw = {k: (getattr(lib, v) if k == "dtype" else v) for k, v in kwargs.items()}
        z = lib.zeros_like(s.data, **kw)
        return (z.is_sparse, z._nnz(), tuple(z.shape), str(z.dtype), z.requires_grad, z.is_leaf,
                z.to_dense().tolist())
    assert outcome(tg) == outcome(torch)


@pytest.mark.parametrize("name", ["Adam", "SGD", "RMSprop"])
def test_loaded_optimizer_state_shares_the_dicts_tensors(name):
    """PyTorch's load_state_dict keeps the dict's tensors when their dtype already fits (its
    value.to(param.dtype)); later steps update them in place, so the loaded dict changes too
    (torch_optimizer's test_optimizer relies on it; tapegrad copied: silent). A float64
    parameter gets a converted copy of a float32 state; `step` is kept as it is."""
    def outcome(lib):
        kwargs = {"lr": 0.1, "momentum": 0.9} if name != "Adam" else {"lr": 0.1}
        p = lib.ones(3, requires_grad=True)
        a = getattr(lib.optim, name)([p], **kwargs)
        p.grad = lib.tensor([1., 2., 3.])
        a.step()
        sd = a.state_dict()
        saved = copy.deepcopy(sd)
        q = lib.ones(3, requires_grad=True)
        b = getattr(lib.optim, name)([q], **kwargs)
        b.load_state_dict(sd)
        shared = [b.state[q][k] is a.state[p][k] for k in sorted(a.state[p])]
        q.grad = lib.tensor([1., 1., 1.])
        b.step()
        changed = [not lib.equal(sd["state"][0][k], saved["state"][0][k])
                   for k in sorted(saved["state"][0])]
        r = lib.ones(3, dtype=lib.float64, requires_grad=True)
        c = getattr(lib.optim, name)([r], **kwargs)
        c.load_state_dict(saved)
        converted = [(str(v.dtype), v is saved["state"][0][k]) for k, v in sorted(c.state[r].items())]
        return shared, changed, converted, q.tolist()
    assert outcome(tg) == outcome(torch)


def _held_sparse_grad_trace(lib, zero):
    """What a script holding ``s.grad`` sees across backwards and a zero_grad that keeps it."""
    s = lib.sparse_coo_tensor([[0, 1, 0], [1, 0, 1]], [3., 4., 5.], (2, 2), requires_grad=True)
    d = lib.tensor([[1., 2.], [3., 4.]])
    trace = []

    def step():
        lib.sparse.mm(s, d).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step()
        held = s.grad
        step()
        trace.append((s.grad is held, held.to_dense().tolist()))
        zero(s)
        trace.append((s.grad is held, held._nnz(), held.to_dense().tolist()))
        step()
        trace.append((s.grad is held, held._nnz(), held.to_dense().tolist()))
    return trace


@pytest.mark.parametrize("how", ["optimizer", "zero_"])
def test_a_held_sparse_gradient_is_accumulated_and_zeroed_in_place(how):
    """SILENT before: backward and zero_grad(set_to_none=False) replaced a sparse leaf's .grad
    by a new object, so a reference the script held kept stale values."""
    def zero(lib):
        def run(s):
            if how == "optimizer":
                lib.optim.SGD([s], lr=0.1).zero_grad(set_to_none=False)
            else:
                s.grad.zero_()
        return run
    assert _held_sparse_grad_trace(tg, zero(tg)) == _held_sparse_grad_trace(torch, zero(torch))


def test_backward_adds_into_an_assigned_sparse_gradient_in_place():
    def outcome(lib):
        s = lib.sparse_coo_tensor([[0, 1, 0], [1, 0, 1]], [3., 4., 5.], (2, 2),
                                  requires_grad=True)
        s.grad = lib.sparse_coo_tensor([[0], [0]], [1.], (2, 2))
        held = s.grad
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.sparse.mm(s, lib.tensor([[1., 2.], [3., 4.]])).sum().backward()
        return s.grad is held, held._nnz(), held.to_dense().tolist()
    assert outcome(tg) == outcome(torch)


def test_sparse_zero_and_add_in_place():
    def outcome(lib):
        a = lib.sparse_coo_tensor([[0, 1]], [1., 2.], (3,)).coalesce()
        b = lib.sparse_coo_tensor([[1, 2]], [1., 2.], (3,)).coalesce()
        c = a.clone()
        same = c.add_(b, alpha=2) is c
        z = a.clone()
        emptied = (z.zero_() is z, z._nnz(), z.is_coalesced(), tuple(z.shape))
        leaf = lib.sparse_coo_tensor([[0]], [1.], (3,), requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            leaf.zero_()
        return same, c._nnz(), c.is_coalesced(), c.to_dense().tolist(), emptied
    assert outcome(tg) == outcome(torch)


def test_module_zero_grad_detaches_a_create_graph_gradient():
    """Module.zero_grad(set_to_none=False) left a backward(create_graph=True) gradient on the
    graph (requires_grad, a grad_fn); PyTorch detaches it as the optimizers' zero_grad does."""
    def outcome(lib):
        m = lib.nn.Linear(1, 1)
        m.weight = lib.nn.Parameter(lib.tensor([[2.]]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (m.weight ** 3).sum().backward(create_graph=True)
        held = m.weight.grad
        m.zero_grad(set_to_none=False)
        return m.weight.grad is held, held.requires_grad, held.grad_fn is None, held.tolist()
    assert outcome(tg) == outcome(torch)
