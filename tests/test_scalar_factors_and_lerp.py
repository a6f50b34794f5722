"""beta/alpha/value factors read in the result's dtype, as PyTorch's kernels read them, and
lerp's dtype rules.  SILENT before: an integer addmm/addmv/addbmm/baddbmm/addcmul with a float
factor gave a float result with the factor unrounded (PyTorch: an integer result, the factor
truncated toward zero); addr, addmv and addbmm with beta=0 gave input no gradient (PyTorch:
zeros); lerp of integers and of a weight of another dtype computed where PyTorch refuses."""
import pytest

import tapegrad as tg

torch = pytest.importorskip("torch")


def _i(lib, *shape):
    return lib.ones(*shape, dtype=lib.int64)


CALLS = {
    "addmm_alpha": lambda lib: lib.addmm(_i(lib, 2, 3), _i(lib, 2, 4), _i(lib, 4, 3), alpha=0.5),
    "addmm_beta": lambda lib: lib.addmm(_i(lib, 2, 3), _i(lib, 2, 4), _i(lib, 4, 3), beta=1.5),
    "addmm_negative": lambda lib: lib.addmm(_i(lib, 2, 3), _i(lib, 2, 2), _i(lib, 2, 3),
                                            alpha=-1.7),
    "addmm_method_inplace": lambda lib: _i(lib, 2, 3).addmm_(_i(lib, 2, 4), _i(lib, 4, 3),
                                                            alpha=2.5),
    "addmm_complex": lambda lib: lib.addmm(lib.ones(2, 3), lib.ones(2, 4), lib.ones(4, 3),
                                           alpha=1j),
    "addmm_complex_real": lambda lib: lib.addmm(lib.ones(2, 3), lib.ones(2, 4), lib.ones(4, 3),
                                                alpha=2 + 0j),
    "addmm_int_complex": lambda lib: lib.addmm(_i(lib, 2, 2), _i(lib, 2, 2), _i(lib, 2, 2),
                                               beta=1j),
    "addmv": lambda lib: lib.addmv(_i(lib, 2), _i(lib, 2, 3), _i(lib, 3), alpha=0.5, beta=2.9),
    "addbmm": lambda lib: lib.addbmm(_i(lib, 2, 3), _i(lib, 1, 2, 4), _i(lib, 1, 4, 3),
                                     alpha=0.5),
    "baddbmm": lambda lib: lib.baddbmm(_i(lib, 1, 2, 3), _i(lib, 1, 2, 4), _i(lib, 1, 4, 3),
                                       beta=0.5),
    "addr_alpha": lambda lib: lib.addr(_i(lib, 2, 3), _i(lib, 2), _i(lib, 3), alpha=0.5),
    "addr_beta": lambda lib: _i(lib, 2, 3).addr(_i(lib, 2), _i(lib, 3), beta=0.5),
    "addr_bool_alpha_int": lambda lib: lib.addr(_i(lib, 2, 3), _i(lib, 2), _i(lib, 3),
                                                alpha=True),
    "addr_bool": lambda lib: lib.addr(_i(lib, 2, 3).bool(), _i(lib, 2).bool(),
                                      lib.zeros(3, dtype=lib.bool), beta=2),
    "addr_bool_beta0": lambda lib: lib.addr(_i(lib, 2, 3).bool(), _i(lib, 2).bool(),
                                            _i(lib, 3).bool(), beta=False, alpha=True),
    "addr_float_complex": lambda lib: lib.addr(lib.ones(2, 3), lib.ones(2), lib.ones(3),
                                               beta=1j),
    "addcmul": lambda lib: lib.addcmul(_i(lib, 2), _i(lib, 2), _i(lib, 2), value=2.7),
    "addcmul_complex": lambda lib: lib.addcmul(lib.ones(2), lib.ones(2), lib.ones(2), value=1j),
    "lerp_int": lambda lib: lib.lerp(_i(lib, 2), _i(lib, 2), 0.5),
    "lerp_int_tensor": lambda lib: lib.lerp(_i(lib, 2), _i(lib, 2), _i(lib, 2)),
    "lerp_int_inplace": lambda lib: _i(lib, 2).lerp_(_i(lib, 2), 0.5),
    "lerp_weight_dtype": lambda lib: lib.lerp(lib.ones(2), lib.ones(2),
                                              lib.tensor([0.5], dtype=lib.float64)),
    "lerp_0d_weight_dtype": lambda lib: lib.lerp(lib.zeros(2), lib.ones(2),
                                                 lib.tensor(0.25, dtype=lib.float64)),
    "lerp_half_end": lambda lib: lib.lerp(lib.ones(2, dtype=lib.float16), lib.ones(2), 0.5),
    "lerp_complex_weight": lambda lib: lib.lerp(lib.ones(2), lib.ones(2), 1j),
}


def _outcome(lib, name):
    try:
        r = CALLS[name](lib)
    except (RuntimeError, NotImplementedError) as e:
        return type(e).__name__, str(e)
    return str(r.dtype), r.tolist()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_as_pytorch(name):
    got, expected = _outcome(tg, name), _outcome(torch, name)
    assert got[0].replace("tapegrad", "torch") == expected[0]
    assert got[1] == expected[1]


ZERO_BETA = {
    "addr": lambda lib, x, w: lib.addr(x, lib.ones(2, dtype=lib.float64), w[0], beta=0),
    "addmv": lambda lib, x, w: lib.addmv(x[0], lib.ones(3, 3, dtype=lib.float64), w[0], beta=0),
    "addbmm": lambda lib, x, w: lib.addbmm(x, lib.ones(1, 2, 4, dtype=lib.float64), w[None, :, :3].expand(1, 4, 3)
                                           .contiguous(), beta=0),
    "addmm": lambda lib, x, w: lib.addmm(x, lib.ones(2, 4, dtype=lib.float64), w[:, :3].expand(4, 3).contiguous(),
                                         beta=0),
}


@pytest.mark.parametrize("name", sorted(ZERO_BETA))
def test_zero_beta_gives_input_a_zero_gradient(name):
    def outcome(lib):
        x = lib.full((2, 3), float("nan"), dtype=lib.float64, requires_grad=True)
        w = lib.ones(4, 3, dtype=lib.float64, requires_grad=True)
        r = ZERO_BETA[name](lib, x, w)
        r.sum().backward()
        return r.tolist(), None if x.grad is None else x.grad.tolist(), w.grad.tolist()
    assert outcome(tg) == outcome(torch)
