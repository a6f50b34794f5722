"""Differences found by running vision-backbone scripts (ViT, Swin, ConvNeXt, MLP-Mixer,
MobileNet/EfficientNet, RepVGG; timm-style init and training idioms) under tapegrad and
PyTorch: each test replays the idiom in both and compares."""
import warnings

import numpy as np
import pytest

import tapegrad as tg


def _outcome(fn):
    """(exception type name, message) of fn(), or ("ok", result)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)


# -- nn.init.trunc_normal_ far in a tail ----------------------------------------------------------
# PyTorch redraws normals only when [a, b] holds more than 0.3 of the mass; otherwise it keeps
# uniform proposals on [a, b] by the pdf ratio.  Redrawing normals for a far tail never ended.

@pytest.mark.parametrize("mean,std,a,b,n", [(10.0, 1.0, -2.0, 2.0, 2000), (0.0, 1.0, 1.0, 3.0, 50000),
                                            (0.0, 1.0, -1.0, 3.0, 50000)])
def test_trunc_normal_in_a_tail_matches_torch(torch, mean, std, a, b, n):
    # (PyTorch's own uniform proposals are slow far out: few draws for the first case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.manual_seed(0)
        w = tg.nn.init.trunc_normal_(tg.empty(n, dtype=tg.float64), mean, std, a, b)
        t = torch.nn.init.trunc_normal_(torch.empty(n, dtype=torch.float64), mean, std, a, b)
    assert a <= w.min().item() and w.max().item() <= b
    spread = (b - a) * 0.01
    assert abs(w.mean().item() - t.mean().item()) < spread
    assert abs(w.std().item() - t.std().item()) < spread


def test_trunc_normal_far_tail_terminates_with_the_truncated_mean():
    # N(0, 0.02^2) on [-2, -1.9]: 95 std out; the truncated law is nearly exponential from -1.9
    # with rate (1.9 / 0.02^2), so its mean is -1.9 - 0.02^2 / 1.9
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.manual_seed(0)
        w = tg.nn.init.trunc_normal_(tg.empty(20000, dtype=tg.float64), 0.0, 0.02, -2.0, -1.9)
    assert -2.0 <= w.min().item() and w.max().item() <= -1.9
    assert abs(w.mean().item() - (-1.9 - 0.02 ** 2 / 1.9)) < 1e-5


def test_trunc_normal_warns_when_mean_is_far_from_the_interval(torch):
    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.init.trunc_normal_(lib.empty(4), mean=5.0, std=1.0, a=-2.0, b=2.0)
            lib.nn.init.trunc_normal_(lib.empty(4), std=0.02)
        assert [str(c.message) for c in caught] == [
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect."]


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), std=0.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3, dtype=lib.int64), a=3.0, b=4.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(0, dtype=lib.int64), a=3.0, b=4.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(0, dtype=lib.int64)).shape,
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3, dtype=lib.bool)),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=3.0, b=2.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=-float("inf"), b=-5.0),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), a=2.0, b=2.0).tolist(),
    lambda lib: lib.nn.init.trunc_normal_(lib.empty(3), std=-1.0).abs().max().item() <= 2,
])
def test_trunc_normal_edge_cases_match(torch, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _outcome(lambda: call(tg)), _outcome(lambda: call(torch))
    assert ours[0] == theirs[0]
    assert str(ours[1]) == str(theirs[1])


# -- torchvision-style model code: jit overload declarations, torch.jit.annotations, torch.hub --

def _densenet_layer_class(lib):
    from typing import List

    class DenseLayer(lib.nn.Module):
        # torchvision's DenseNet declares forward for a Tensor and a List[Tensor], then defines it
        @lib.jit._overload_method  # noqa: F811
        def forward(self, input: List[lib.Tensor]) -> lib.Tensor:  # noqa: F811
            pass

        @lib.jit._overload_method  # noqa: F811
        def forward(self, input: lib.Tensor) -> lib.Tensor:  # noqa: F811
            ...

        def forward(self, input):  # noqa: F811
            prev = [input] if isinstance(input, lib.Tensor) else input
            return lib.cat(prev, 1) * 2

    return DenseLayer


def test_jit_overload_method_declarations_leave_the_implementation(torch):
    outs = []
    for lib in (tg, torch):
        layer = _densenet_layer_class(lib)()
        outs.append((layer(lib.ones(1, 2)).numpy(), layer([lib.ones(1, 1), lib.zeros(1, 1)]).numpy()))
    for ours, theirs in zip(*outs):
        np.testing.assert_array_equal(ours, theirs)


def test_jit_overload_with_a_body_is_refused(torch):
    def declare(lib):
        @lib.jit._overload
        def f(x: int) -> int:
            return x
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match=r"Only `pass` statement or `...` can be the body"):
            declare(lib)


def test_jit_annotations_submodule_has_the_typing_names(torch):
    import importlib
    import typing
    ours = importlib.import_module("tapegrad.jit.annotations")
    theirs = importlib.import_module("torch.jit.annotations")
    for name in ("Any", "Dict", "List", "Optional", "Tuple", "Union"):
        assert getattr(ours, name) is getattr(theirs, name) is getattr(typing, name)
    assert tg.jit.annotations is ours


def test_hub_module_level_names_timm_imports(torch):
    from tapegrad.hub import HASH_REGEX, urlparse
    from torch.hub import HASH_REGEX as T_HASH_REGEX
    name = "resnet18-f37072fd.pth"
    assert HASH_REGEX.search(name).group(1) == T_HASH_REGEX.search(name).group(1) == "f37072fd"
    assert urlparse("https://x.org/a/b.pth").path == "/a/b.pth"
