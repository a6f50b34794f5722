"""Variable._execution_engine (queue_callback, run_backward) and torch._C._current_graph_task_id
as PyTorch's: a callback queued from a hook runs once the pass is done (leaves' .grad set),
outside a pass queueing is refused, and run_backward is backward / grad."""
import pytest

import tapegrad

torch = pytest.importorskip("torch")


def _session(lib):
    engine = lib.autograd.Variable._execution_engine
    out = []
    try:
        engine.queue_callback(lambda: None)
    except RuntimeError as e:
        out.append(str(e))
    out.append(lib._C._current_graph_task_id())
    x = lib.ones(2, requires_grad=True)
    seen = []

    def hook(g):
        seen.append(("hook", lib._C._current_graph_task_id() != -1, x.grad))
        engine.queue_callback(lambda: seen.append(("callback", x.grad.tolist())))
        return g
    x.register_hook(hook)
    (x * 2).sum().backward()
    out.append(seen)
    y = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    grads = engine.run_backward(((y * y).sum(),), (lib.tensor(1.0),), False, False, (y,), True, False)
    out.append([g.tolist() for g in grads])
    engine.run_backward(((y * 3).sum(),), (lib.tensor(1.0),), False, False, (), True, True)
    out.append(y.grad.tolist())
    return out


def test_engine_as_pytorch():
    assert _session(tapegrad) == _session(torch)


def test_graph_task_id_is_one_per_pass():
    x = tapegrad.ones(2, requires_grad=True)
    ids = []
    x.register_hook(lambda g: ids.append(tapegrad._C._current_graph_task_id()))
    y = (x * 2).sum()
    y.backward(retain_graph=True)
    assert ids[0] != -1
    assert tapegrad._C._current_graph_task_id() == -1
