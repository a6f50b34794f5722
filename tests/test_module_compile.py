"""Module.compile(): PyTorch 2's in-place compile of a module's calls (the module object, its
parameters and state_dict keys stay as they are), here through tapegrad.compile's replay."""
import copy
import io

import numpy as np

import tapegrad as tg


def _model():
    tg.manual_seed(0)
    return tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Dropout(0.5), tg.nn.Tanh(),
                            tg.nn.Linear(4, 1))


def test_compiled_calls_equal_eager_values_and_gradients():
    eager, compiled = _model(), _model()
    assert compiled.compile() is None
    assert "_compiled_call_impl" in compiled.__dict__
    for step in range(4):
        x = tg.randn(5, 3)
        for m in (eager, compiled):
            m.eval() if step % 2 else m.train()
        tg.manual_seed(step)
        y_eager = eager(x)
        tg.manual_seed(step)
        y_compiled = compiled(x)
        assert np.array_equal(y_eager.detach().numpy(), y_compiled.detach().numpy())
        y_eager.sum().backward()
        y_compiled.sum().backward()
        for p, q in zip(eager.parameters(), compiled.parameters()):
            assert np.array_equal(p.grad.numpy(), q.grad.numpy())
            with tg.no_grad():          # an optimizer step between calls
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
            p.grad = q.grad = None


def test_the_module_keeps_its_identity_and_state_dict_keys():
    m = _model()
    keys = list(m.state_dict())
    m.compile()
    assert list(m.state_dict()) == keys == ["0.weight", "0.bias", "3.weight", "3.bias"]
    assert isinstance(m, tg.nn.Sequential)


def test_copies_and_pickles_run_uncompiled_with_the_same_values():
    m = _model().eval()
    x = tg.randn(2, 3)
    m.compile()
    expected = m(x).detach().numpy()
    clone = copy.deepcopy(m)
    assert "_compiled_call_impl" not in clone.__dict__      # as PyTorch's copies
    assert np.array_equal(clone(x).detach().numpy(), expected)
    buffer = io.BytesIO()
    tg.save(m, buffer)
    buffer.seek(0)
    loaded = tg.load(buffer, weights_only=False)
    assert np.array_equal(loaded(x).detach().numpy(), expected)
