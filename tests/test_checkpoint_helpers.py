"""torch.utils.checkpoint helpers, against PyTorch."""
import pytest

import tapegrad as tg


def _helpers_scenario(L):
    """torch.utils.checkpoint's helpers (reversible networks import get/set_device_states)."""
    import warnings
    from importlib import import_module
    cp = import_module(L.__name__ + ".utils.checkpoint")
    x = L.ones(2, requires_grad=True)
    out = [cp.get_device_states(x, 3, [x, {"a": x}])]
    cp.set_device_states([], [])
    d = cp.detach_variable((x, 3, L.ones(2)))
    out.append(([type(v).__name__ for v in d], d[0].requires_grad, d[0] is x, d[0].grad_fn,
                d[2].requires_grad))
    with pytest.raises(RuntimeError) as info:
        cp.detach_variable([x])
    out.append(str(info.value))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp.check_backward_validity((L.ones(2), 1))
        cp.check_backward_validity((x,))
    out.append([(w.category.__name__, str(w.message)) for w in caught])
    out.append((cp.DefaultDeviceType.get_device_type(), issubclass(cp.CheckpointError, RuntimeError),
                [type(c).__name__ for c in cp.noop_context_fn()]))
    lin = L.nn.Linear(2, 2)
    with L.no_grad():
        lin.weight.fill_(0.5)
    cp.checkpoint(lin, x, use_reentrant=False, context_fn=cp.noop_context_fn).sum().backward()
    out.append(x.grad.tolist())
    return out


def test_checkpoint_helpers_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _helpers_scenario(tg) == _helpers_scenario(torch)
