"""torch.from_file, nn.utils.convert_conv{2,3}d_weight_memory_format, torch.__config__ and
torch.utils.collect_env (session 38)."""
import os

import pytest

import tapegrad
import tapegrad.nn as nn


def test_from_file_shared_writes_reach_the_file(tmp_path):
    path = tmp_path / "values.bin"
    t = tapegrad.from_file(str(path), shared=True, size=4, dtype=tapegrad.float32)
    assert os.path.getsize(path) == 16 and t.tolist() == [0.0] * 4
    t[0] = 5
    del t
    private = tapegrad.from_file(path, shared=False, size=4)
    assert private.tolist() == [5.0, 0.0, 0.0, 0.0]
    private[1] = 3                      # copy on write: the file keeps its values
    assert tapegrad.from_file(path, size=4).tolist() == [5.0, 0.0, 0.0, 0.0]
    grown = tapegrad.from_file(path, True, 8, dtype=tapegrad.float64)
    assert os.path.getsize(path) == 64 and grown.dtype == tapegrad.float64
    assert tapegrad.from_file(path, size=2, requires_grad=True).requires_grad
    assert tapegrad.from_file(path, size=0).shape == (0,)


def test_from_file_refusals(tmp_path):
    with pytest.raises(RuntimeError, match="unable to open file .* in read-only mode"):
        tapegrad.from_file(str(tmp_path / "missing.bin"), shared=False, size=4)
    path = tmp_path / "small.bin"
    path.write_bytes(b"\0" * 16)
    with pytest.raises(RuntimeError, match=r"size <16> is smaller than the required mapping "
                                           r"size <400>"):
        tapegrad.from_file(str(path), size=100)


def test_from_file_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "ints.bin"
    path.write_bytes(bytes(range(16)))
    for dtype in ("int16", "float32", "uint8"):
        ours = tapegrad.from_file(str(path), size=4, dtype=getattr(tapegrad, dtype))
        theirs = torch.from_file(str(path), size=4, dtype=getattr(torch, dtype))
        assert ours.tolist() == theirs.tolist()


def test_convert_conv_weight_memory_format_strides_as_torch():
    torch = pytest.importorskip("torch")

    def model(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.ReLU(),
                                 lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)),
                                 lib.nn.Conv2d(2, 2, 1), lib.nn.Conv3d(2, 2, 1),
                                 lib.nn.Linear(2, 2))
    ours, theirs = model(tapegrad), model(torch)
    for lib, m in ((tapegrad, ours), (torch, theirs)):
        weight = m[0].weight
        assert lib.nn.utils.convert_conv2d_weight_memory_format(m, lib.channels_last) is m
        assert m[0].weight is weight            # the Parameter stays, its data is relaid
        lib.nn.utils.convert_conv3d_weight_memory_format(m, lib.channels_last_3d)
    for i in (0, 3, 4, 5):
        assert ours[i].weight.stride() == theirs[i].weight.stride(), i
    assert ours[2][0].weight.stride() == theirs[2][0].weight.stride()
    assert ours[0].weight.requires_grad and isinstance(ours[0].weight, nn.Parameter)


def test_config_reports_this_build():
    import numpy as np
    text = tapegrad.__config__.show()
    assert text.startswith("tapegrad built with:") and f"numpy {np.__version__}" in text
    info = tapegrad.__config__.parallel_info()
    assert f"get_num_threads() : {tapegrad.get_num_threads()}" in info
    import tapegrad.__config__ as config
    assert config.show is tapegrad.__config__.show


def test_collect_env_fields():
    from tapegrad.utils import collect_env
    env = collect_env.get_env_info()
    assert env.torch_version == tapegrad.__version__ and env.is_cuda_available is False
    text = collect_env.get_pretty_env_info()
    assert text.startswith(f"PyTorch version: {tapegrad.__version__}\n")
    assert "Is CUDA available: False" in text
