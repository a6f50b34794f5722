"""Grad mode: context managers, decorators, per-thread state."""
import threading

import tapegrad as tg


def test_guards_nest_and_restore():
    assert tg.is_grad_enabled()
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        with tg.enable_grad():
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
        with tg.set_grad_enabled(True):
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_as_a_call():
    tg.set_grad_enabled(False)
    try:
        assert not tg.is_grad_enabled()
    finally:
        tg.set_grad_enabled(True)
    assert tg.is_grad_enabled()


def test_decorators():
    x = tg.tensor([1.0], requires_grad=True)

    @tg.no_grad()
    def f(t):
        return t * 2

    @tg.set_grad_enabled(False)
    def g(t):
        return t * 2

    assert tg.is_grad_enabled()
    assert not f(x).requires_grad and not g(x).requires_grad
    assert (x * 2).requires_grad


def test_exception_inside_no_grad_restores_mode():
    try:
        with tg.no_grad():
            raise ValueError("boom")
    except ValueError:
        pass
    assert tg.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = {}
    inside = threading.Event()
    done = threading.Event()

    def other():
        seen["other_start"] = tg.is_grad_enabled()
        inside.set()
        done.wait(5)

    with tg.no_grad():
        t = threading.Thread(target=other)
        t.start()
        inside.wait(5)
        seen["main"] = tg.is_grad_enabled()
        done.set()
        t.join()
    assert seen == {"other_start": True, "main": False}


# -- decorators without parentheses, generators, inference_mode -------------------------------

def _grad_mode_script(lib):
    """What a script observes of grad mode and inference mode through every guard form."""
    seen = []

    @lib.no_grad
    def bare_no_grad(x):
        return (x * 2).requires_grad, lib.is_grad_enabled()

    @lib.enable_grad
    def bare_enable_grad():
        return lib.is_grad_enabled()

    @lib.inference_mode
    def bare_inference():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.inference_mode(False)
    def not_inference():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.inference_mode(mode=True)
    def called_inference():
        return lib.is_inference_mode_enabled(), lib.is_grad_enabled()

    @lib.no_grad
    def generator():
        received = yield lib.is_grad_enabled()
        yield received, lib.is_grad_enabled()

    x = lib.ones(1, requires_grad=True)
    seen.append((bare_no_grad(x), bare_no_grad.__name__, lib.is_grad_enabled()))
    with lib.no_grad():
        seen.append(bare_enable_grad())
        with lib.inference_mode(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    seen.append((bare_inference(), called_inference(), lib.is_inference_mode_enabled()))
    with lib.inference_mode():
        seen.append(not_inference())
        with lib.set_grad_enabled(True):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        seen.append((lib.ones(1, requires_grad=True) * 2).requires_grad)
        with lib.no_grad():
            seen.append(lib.is_inference_mode_enabled())
    gen = generator()
    seen.append((next(gen), lib.is_grad_enabled(), gen.send("v"), lib.is_grad_enabled()))
    try:
        with lib.inference_mode():
            raise KeyError("boom")
    except KeyError:
        seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
    seen.append((isinstance(lib.no_grad(), lib.no_grad), lib.autograd.inference_mode is
                 lib.inference_mode))
    return seen


def test_guard_forms_match_torch(torch):
    assert _grad_mode_script(tg) == _grad_mode_script(torch)


def test_guard_forms_values():
    seen = _grad_mode_script(tg)
    assert seen[0] == ((False, False), "bare_no_grad", True)
    assert seen[1] is True                      # @enable_grad inside no_grad
    assert seen[2] == (True, False)             # inference_mode(False) turns grad mode on
    assert seen[3] == ((True, False), (True, False), False)
    assert seen[4] == (False, True)
    assert seen[6] is False                     # nothing records in inference mode
    assert seen[8] == (False, True, ("v", False), True)
    assert seen[9] == (True, False)


def test_inference_mode_is_per_thread():
    seen = []
    with tg.inference_mode():
        worker = threading.Thread(target=lambda: seen.append(
            (tg.is_inference_mode_enabled(), tg.is_grad_enabled())))
        worker.start()
        worker.join()
        assert tg.is_inference_mode_enabled()
    assert seen == [(False, True)]
