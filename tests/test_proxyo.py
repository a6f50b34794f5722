"""Faults found by running held-out PyTorch tutorial scripts unchanged under tapegrad (proxyo)."""
import subprocess
import sys

import pytest

import tapegrad


def test_dynamo_and_inductor_are_attributes_without_import_as_in_pytorch():
    # A transformer repository decorates a method with @torch._dynamo.disable at class creation.
    code = ("import tapegrad as torch\n"
            "@torch._dynamo.disable\n"
            "def f(x):\n"
            "    return x * 2\n"
            "print(f(torch.ones(2)).tolist())\n")
    code += "torch._inductor.config.coordinate_descent_tuning = True\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 2.0]"


def test_dynamo_config_defaults_and_unknown_names_match_pytorch():
    torch = pytest.importorskip("torch")
    config = tapegrad._dynamo.config
    for name, value in config._DEFAULTS.items():
        if name != "inline_inbuilt_nn_modules":     # deprecated in PyTorch: warns when read
            assert getattr(torch._dynamo.config, name) == value, name
    for lib in (torch, tapegrad):
        with pytest.raises(AttributeError, match="torch._dynamo.config.no_such_setting does not exist"):
            lib._dynamo.config.no_such_setting = 1
        with pytest.raises(AttributeError, match="does not exist"):
            lib._dynamo.config.no_such_setting


def test_inductor_config_defaults_groups_and_unknown_names_match_pytorch():
    torch = pytest.importorskip("torch")
    config = tapegrad._inductor.config
    for name, value in config._DEFAULTS.items():
        if isinstance(value, dict):
            for inner, inner_value in value.items():
                assert getattr(getattr(torch._inductor.config, name), inner) == inner_value, inner
        else:
            assert getattr(torch._inductor.config, name) == value, name
    for lib in (torch, tapegrad):
        with pytest.raises(AttributeError, match="torch._inductor.config.no_such does not exist"):
            lib._inductor.config.no_such = 1
        with pytest.raises(AttributeError,
                           match="torch._inductor.config.triton.no_such does not exist"):
            lib._inductor.config.triton.no_such = 1
        with pytest.raises(AttributeError, match="does not exist"):
            lib._inductor.config.triton.no_such


def test_inductor_config_keeps_what_a_script_sets():
    # gpt-fast style set-up lines, before torch.compile.
    config = tapegrad._inductor.config
    try:
        config.coordinate_descent_tuning = True
        config.triton.unique_kernel_names = False
        assert config.coordinate_descent_tuning is True
        assert config.triton.unique_kernel_names is False
    finally:
        config.coordinate_descent_tuning = False
        config.triton.unique_kernel_names = True


def test_dynamo_config_keeps_what_a_script_sets():
    config = tapegrad._dynamo.config
    before = config.cache_size_limit
    try:
        config.cache_size_limit = 64
        config.suppress_errors = True
        assert config.cache_size_limit == 64 and config.suppress_errors is True
    finally:
        config.cache_size_limit = before
        config.suppress_errors = False


def test_dynamo_disable_and_reset_are_the_compiler_controls():
    calls = []

    @tapegrad._dynamo.disable
    def eager_part(x):
        calls.append(tapegrad._dynamo.is_compiling())
        return x + 1

    @tapegrad.compile
    def f(x):
        return eager_part(x) * 2

    x = tapegrad.ones(3)
    assert f(x).tolist() == [4.0, 4.0, 4.0]
    assert f(x).tolist() == [4.0, 4.0, 4.0]
    assert calls == [False, False]          # runs eagerly at every call, outside the capture
    assert tapegrad._dynamo.reset() is None
    assert tapegrad._dynamo.mark_dynamic(x, 0) is None
