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
