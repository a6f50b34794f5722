"""The order a backward runs gradient hooks in, as PyTorch's engine: leaves (tensor hooks,
post-accumulate hooks) right after their last consumer's node, in its next_functions order and
its ready queue's heap order; Module backward hooks and non-leaf hooks between them.  Each
scenario runs with L = tapegrad and L = torch and the logs of hook calls are compared."""
from __future__ import annotations

import numpy as np
import pytest

import tapegrad as tg


def log_hooks(log, named, post=True):
    for name, t in named:
        t.register_hook(lambda g, name=name: log.append(("hook", name, tuple(g.shape))))
        if post and t.is_leaf:
            t.register_post_accumulate_grad_hook(lambda p, name=name: log.append(("post", name)))


def leaves(L, *shapes):
    rng = np.random.default_rng(len(shapes))
    return [L.tensor(rng.standard_normal(s), dtype=L.float64, requires_grad=True) for s in shapes]


def run_both(scenario):
    torch = pytest.importorskip("torch")
    logs = []
    for L in (tg, torch):
        log = []
        scenario(L, log)
        logs.append(log)
    assert logs[0] == logs[1]
    return logs[0]


# -- one node with several leaf inputs: its next_functions order ---------------------------------

def test_conv2d_weight_then_bias():
    def scenario(L, log):
        x, w, b = leaves(L, (1, 1, 5, 5), (2, 1, 3, 3), (2,))
        log_hooks(log, [("x", x), ("w", w), ("b", b)])
        L.nn.functional.conv2d(x, w, b).sum().backward()
    assert [e[1] for e in run_both(scenario) if e[0] == "hook"] == ["x", "w", "b"]


def test_addmm_bias_first():
    def scenario(L, log):
        b, m1, m2 = leaves(L, (2, 2), (2, 3), (3, 2))
        log_hooks(log, [("b", b), ("m1", m1), ("m2", m2)])
        L.addmm(b, m1, m2).sum().backward()
    run_both(scenario)


def test_norm_layers_weight_and_bias():
    def scenario(L, log):
        F = L.nn.functional
        x, w, b = leaves(L, (3, 4), (4,), (4,))
        log_hooks(log, [("x", x), ("w", w), ("b", b)])
        F.layer_norm(x, (4,), w, b).pow(2).sum().backward()
        F.batch_norm(x, L.zeros(4, dtype=L.float64), L.ones(4, dtype=L.float64), w, b,
                     training=True).pow(2).sum().backward()
        F.group_norm(x, 2, w, b).pow(2).sum().backward()
    run_both(scenario)


def test_six_leaves_ready_at_once_pop_in_heap_order():
    # torch.stack's node makes six AccumulateGrads ready together: std::priority_queue pops
    # equal keys 0, 2, 5, 4, 1, 3
    def scenario(L, log):
        ps = leaves(L, *[(2,)] * 6)
        log_hooks(log, [(str(i), p) for i, p in enumerate(ps)], post=False)
        L.stack(ps).sum().backward()
    assert [e[1] for e in run_both(scenario)] == ["0", "2", "5", "4", "1", "3"]


def test_cat_of_leaves_and_nodes():
    def scenario(L, log):
        ps = leaves(L, *[(2,)] * 4)
        log_hooks(log, [(str(i), p) for i, p in enumerate(ps)])
        L.cat([ps[0] * 2, ps[1], ps[2].exp(), ps[3]]).sum().backward()
    run_both(scenario)


# -- across nodes: dependencies and the ready order ----------------------------------------------

def test_shared_leaf_waits_for_its_last_use():
    def scenario(L, log):
        w, v, u = leaves(L, (3,), (3,), (3,))
        log_hooks(log, [("w", w), ("v", v), ("u", u)])
        a = w * v
        ((a * u).sin() + w).sum().add((v * 3).sum()).backward()
    run_both(scenario)


def test_multiple_roots():
    def scenario(L, log):
        a, b, c = leaves(L, (3,), (3,), (3,))
        log_hooks(log, [("a", a), ("b", b), ("c", c)])
        L.autograd.backward([(a * b).sum(), (b * c).sum()])
    run_both(scenario)


def test_non_leaf_hooks_interleave_with_leaves():
    def scenario(L, log):
        w1, w2 = leaves(L, (3, 4), (4, 2))
        log_hooks(log, [("w1", w1), ("w2", w2)])
        h = L.ones(2, 3, dtype=L.float64) @ w1
        h.retain_grad()
        a = h.relu()
        o = a @ w2
        log_hooks(log, [("h", h), ("a", a), ("o", o)])
        o.sum().backward()
    run_both(scenario)


def test_linear_layers_and_batch_inputs():
    def scenario(L, log):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.GELU(), L.nn.Linear(4, 2)).double()
        log_hooks(log, list(m.named_parameters()))
        x = leaves(L, (2, 5, 3))[0]
        log_hooks(log, [("x", x)])
        m(x).sum().backward()
        m(x.transpose(0, 1)).sum().backward()
        m(x[0]).sum().backward()
    run_both(scenario)


def test_convnet_and_gru_cell_parameters():
    def scenario(L, log):
        L.manual_seed(0)
        net = L.nn.Sequential(L.nn.Conv2d(1, 2, 3), L.nn.ReLU(), L.nn.Conv2d(2, 2, 3),
                              L.nn.Flatten(), L.nn.Linear(8, 2))
        cell = L.nn.GRUCell(3, 2)
        log_hooks(log, list(net.named_parameters()) + list(cell.named_parameters()))
        net(L.ones(2, 1, 6, 6)).sum().backward()
        h = L.zeros(1, 2)
        for _ in range(2):
            h = cell(L.ones(1, 3), h)
        h.sum().backward()
    run_both(scenario)


def test_custom_function_with_two_outputs():
    def scenario(L, log):
        class Split(L.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * 2, b * 3

            @staticmethod
            def backward(ctx, ga, gb):
                log.append("Split.backward")
                return ga * 2, gb * 3
        a, b, c = leaves(L, (3,), (3,), (3,))
        log_hooks(log, [("a", a), ("b", b), ("c", c)])
        u, v = Split.apply(a, b)
        (u * c + v.exp()).sum().backward()
    run_both(scenario)


# -- Module hooks, optimizer-in-backward, bucketing ----------------------------------------------

def test_module_full_backward_hooks_and_parameters():
    def scenario(L, log):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.ReLU(), L.nn.Linear(4, 2))
        for name, mod in m.named_children():
            mod.register_full_backward_pre_hook(lambda mod, go, n=name: log.append(("pre", n)))
            mod.register_full_backward_hook(
                lambda mod, gi, go, n=name: log.append(
                    ("bwd", n, [p.grad is not None for p in m.parameters()])))
        log_hooks(log, list(m.named_parameters()))
        m(L.ones(2, 3, requires_grad=True)).sum().backward()
    run_both(scenario)


def test_post_accumulate_optimizer_step_and_bucketing():
    def scenario(L, log):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(3, 5), L.nn.Tanh(), L.nn.Linear(5, 5), L.nn.Tanh(),
                            L.nn.Conv1d(1, 1, 2), L.nn.Flatten())
        names = {p: n for n, p in m.named_parameters()}
        opt = {p: L.optim.SGD([p], lr=0.1) for p in m.parameters()}
        bucket = []

        def step(p):
            bucket.append(names[p])
            if len(bucket) == 2:
                log.append(tuple(bucket))
                bucket.clear()
            opt[p].step()
            opt[p].zero_grad()
        for p in m.parameters():
            p.register_post_accumulate_grad_hook(step)
        for _ in range(2):
            m(L.ones(1, 1, 3)).sum().backward()
        log.append(tuple(bucket))
    run_both(scenario)


# -- the other front ends: autograd.grad, inputs=, retain_graph, create_graph ---------------------

def test_autograd_grad_runs_leaf_hooks_in_order():
    def scenario(L, log):
        b, m1, m2 = leaves(L, (2, 2), (2, 3), (3, 2))
        log_hooks(log, [("b", b), ("m1", m1), ("m2", m2)], post=False)
        L.autograd.grad(L.addmm(b, m1, m2).sum(), (m2, b, m1))
        log.append("subset")
        L.autograd.grad(L.addmm(b, m1, m2).sum(), (m2, b))
    run_both(scenario)


def test_backward_inputs_and_retain_graph():
    def scenario(L, log):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Conv2d(1, 2, 3), L.nn.ReLU(), L.nn.Conv2d(2, 1, 3))
        log_hooks(log, list(m.named_parameters()))
        y = m(L.ones(1, 1, 6, 6)).sum()
        y.backward(inputs=[m[0].bias, m[2].weight, m[0].weight], retain_graph=True)
        log.append("again")
        y.backward()
    run_both(scenario)


def test_create_graph_sweep_orders_as_the_plain_one():
    def scenario(L, log):
        x, w, b = leaves(L, (1, 1, 5, 5), (2, 1, 3, 3), (2,))
        log_hooks(log, [("x", x), ("w", w), ("b", b)], post=False)
        gs = L.autograd.grad(L.nn.functional.conv2d(x, w, b).tanh().sum(), (x, w, b),
                             create_graph=True)
        log.append("second")
        sum(g.sum() for g in gs).backward()
        ps = leaves(L, *[(2,)] * 5)
        log_hooks(log, [(str(i), p) for i, p in enumerate(ps)])
        (L.stack(ps) ** 2).sum().backward(create_graph=True)
        for p in ps:
            p.grad = None               # (the cycle create_graph makes through .grad)
    with pytest.warns(UserWarning, match="create_graph=True"):
        run_both(scenario)


def test_gradients_unchanged_by_the_order():
    torch = pytest.importorskip("torch")
    grads = []
    for L in (tg, torch):
        x, w, b = leaves(L, (2, 1, 5, 5), (3, 1, 3, 3), (3,))
        for t in (x, w, b):
            t.register_hook(lambda g: g * 2)
        L.nn.functional.conv2d(x, w, b).tanh().sum().backward()
        grads.append([t.grad.detach().numpy() for t in (x, w, b)])
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
