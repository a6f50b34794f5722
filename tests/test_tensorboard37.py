"""tapegrad.utils.tensorboard against torch.utils.tensorboard: the same SummaryWriter calls made
with each library into two directories, compared through what TensorBoard's EventAccumulator
reads back (wall times aside), and the projector / hparams / add_scalars files on disk."""
import dataclasses
import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import tapegrad as tg  # noqa: E402
from tapegrad.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(log_dir):
    accumulator = EventAccumulator(str(log_dir), size_guidance={
        "scalars": 0, "histograms": 0, "images": 0, "tensors": 0, "audio": 0})
    accumulator.Reload()
    return accumulator


def _raw_events(log_dir):
    """Every Event proto of the run's event file(s), wall times cleared, serialized."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    found = []
    for name in sorted(os.listdir(log_dir)):
        if name.startswith("events.out.tfevents."):
            for event in EventFileLoader(str(log_dir / name)).Load():
                event.wall_time = 0
                found.append(event.SerializeToString())
    return found


def _event_fields(events):
    """The fields of EventAccumulator records other than the wall time."""
    return [{k: v for k, v in dataclasses.asdict(e).items() if k != "wall_time"} for e in events]


def _everything_read(log_dir):
    """Every tag's records (scalars, histograms, images, audio, tensors) as plain values."""
    acc = _read(log_dir)
    tags = acc.Tags()
    seen = {"tags": {k: sorted(v) for k, v in tags.items() if isinstance(v, list)}}
    for kind, reader in (("scalars", acc.Scalars), ("histograms", acc.Histograms),
                         ("images", acc.Images), ("audio", acc.Audio)):
        for tag in tags[kind]:
            seen[kind, tag] = _event_fields(reader(tag))
    for tag in tags["tensors"]:
        seen["tensors", tag] = [(e.step, e.tensor_proto.SerializeToString())
                                for e in acc.Tensors(tag)]
        seen["metadata", tag] = acc.SummaryMetadata(tag).SerializeToString()
    return seen


class _Net:
    """The same small model class for either library."""

    @staticmethod
    def make(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = lib.nn.Linear(4, 3)
                self.act = lib.nn.ReLU()
                self.head = lib.nn.Sequential(lib.nn.Linear(3, 2))

            def forward(self, x):
                return lib.sigmoid(self.head(self.act(self.fc1(x)))) * 2
        return Net()


def _log_everything(lib, writer_class, log_dir):
    """One run of most SummaryWriter calls, with lib's tensors, numpy arrays and numbers."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=200).astype(np.float32)
    image_chw = rng.random((3, 5, 7)).astype(np.float32)
    with writer_class(str(log_dir)) as w:
        for step in range(3):
            w.add_scalar("loss/train", lib.tensor(1.0 / (step + 1)), step)
            w.add_scalar("number", 0.25 * step, step)
            w.add_scalar("numpy", np.float64(step) / 3, step)
            w.add_scalar("new_style", lib.tensor([0.1 * step]), step, new_style=True)
            w.add_scalar("double", 0.1 * step, step, new_style=True, double_precision=True)
        w.add_scalar("walltime", 1.0, 7, walltime=123.5)
        w.add_histogram("hist/tensorflow", lib.tensor(values), 0)
        w.add_histogram("hist/numpy_bins", values, 1, bins="auto")
        w.add_histogram("hist/int_bins", lib.tensor(values), 2, bins=10, max_bins=4)
        w.add_histogram("hist/fd", lib.tensor(values, dtype=lib.float64), 3, bins="fd")
        w.add_histogram_raw("hist/raw", min=0.0, max=3.0, num=6, sum=9.0, sum_squares=19.0,
                            bucket_limits=[1.0, 2.0, 3.0], bucket_counts=[1, 2, 3],
                            global_step=4)
        w.add_image("img/chw_float", lib.tensor(image_chw), 0)
        w.add_image("img/hwc_uint8", (image_chw.transpose(1, 2, 0) * 255).astype(np.uint8), 0,
                    dataformats="HWC")
        w.add_image("img/hw", lib.tensor(image_chw[0]), 0, dataformats="HW")
        w.add_image("img/grey_chw", lib.tensor(image_chw[:1]), 0)
        w.add_image("img/out_of_range", lib.tensor(image_chw * 3 - 1), 0)
        w.add_images("img/nchw", lib.tensor(rng.random((5, 3, 4, 4))), 0)
        w.add_images("img/nhwc_grey", lib.tensor(rng.random((3, 4, 4, 1))), 0,
                     dataformats="NHWC")
        w.add_image_with_boxes("img/boxes", lib.tensor(image_chw), lib.tensor([[1, 1, 4, 3]]),
                               0, labels=["cat"])
        w.add_text("note", "hello *tapegrad*", 0)
        w.add_text("note", "second", 1)
        w.add_pr_curve("pr", lib.tensor([0, 1, 1, 0, 1]),
                       lib.tensor([0.1, 0.8, 0.6, 0.4, 0.3]), 0, num_thresholds=10)
        w.add_custom_scalars({"Training": {"losses": ["Multiline", ["loss/train", "number"]],
                                           "band": ["Margin", ["number", "numpy", "double"]]}})
        w.add_audio("sound", lib.linspace(-1, 1, 50), 0, sample_rate=8000)
        w.add_mesh("mesh", lib.tensor([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]]),
                   faces=lib.tensor([[[0, 1, 2]]]), colors=lib.tensor([[[255, 0, 0]] * 3]))
        w.add_tensor("raw_tensor", lib.tensor([[1.0, 2.0], [3.0, 4.0]]), 0)
        w.add_scalars("pair", {"a": 1.0, "b": lib.tensor(2.0)}, 0)
        w.add_scalars("pair", {"a": 1.5, "b": 2.5}, 1)
        w.add_hparams({"lr": 0.1, "layers": 2, "opt": "sgd", "tensor": lib.tensor([0.5])},
                      {"hparam/accuracy": 0.75}, run_name="hp_run")
        w.add_hparams({"flag": True, "opt": "adam"}, {"m": 1.0}, run_name="hp_domains",
                      hparam_domain_discrete={"flag": [True, False], "opt": ["adam", "sgd"]},
                      global_step=5)
        w.add_pr_curve("pr_weighted", lib.tensor([1, 0, 1]), np.array([0.2, 0.5, 0.9]), 1,
                       weights=np.array([1.0, 2.0, 0.5]))
        w.add_pr_curve_raw("pr_raw", [1, 2], [0, 1], [3, 2], [1, 0], [1.0, 0.6], [0.5, 1.0], 0,
                           num_thresholds=2)
        w.add_tensor("tensor_int32", lib.tensor([1, 2], dtype=lib.int32), 0)
        w.add_tensor("tensor_half", lib.tensor([1.5, -2.0], dtype=lib.float16), 0)
        w.add_tensor("tensor_bool", lib.tensor([True, False]), 0)


def test_summaries_read_back_as_torchs(torch, tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    _log_everything(tg, SummaryWriter, tmp_path / "mine")
    _log_everything(torch, TorchWriter, tmp_path / "theirs")
    mine, theirs = _everything_read(tmp_path / "mine"), _everything_read(tmp_path / "theirs")
    assert mine.keys() == theirs.keys()
    for key in theirs:
        assert mine[key] == theirs[key], key
    # add_scalars' runs and add_hparams' run are sub-directories with the same contents
    def runs(log_dir):
        return sorted(name for name in os.listdir(log_dir) if (log_dir / name).is_dir())
    assert runs(tmp_path / "mine") == runs(tmp_path / "theirs") == \
        ["hp_domains", "hp_run", "pair_a", "pair_b"]
    for run in ("pair_a", "pair_b", "hp_run", "hp_domains"):
        assert _everything_read(tmp_path / "mine" / run) == \
            _everything_read(tmp_path / "theirs" / run), run
    # and byte for byte, event by event (the hparams plugin's summaries too, which
    # EventAccumulator does not show)
    for run in (".", "pair_a", "pair_b", "hp_run", "hp_domains"):
        assert _raw_events(tmp_path / "mine" / run) == _raw_events(tmp_path / "theirs" / run), run


def test_scalar_values_steps_and_walltime(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("x", tg.tensor(2.5, requires_grad=True) * 2, 3, walltime=10.0)
        w.add_scalar("x", np.array(1.0), 4)
    events = _read(tmp_path).Scalars("x")
    assert [(e.step, e.value) for e in events] == [(3, 5.0), (4, 1.0)]
    assert events[0].wall_time == 10.0


def test_bad_inputs_raise_as_torch(torch, tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    for lib, writer_class in ((tg, SummaryWriter), (torch, TorchWriter)):
        with writer_class(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(AssertionError, match="Tensor should contain one element"):
                w.add_scalar("x", lib.ones(2))
            with pytest.raises(NotImplementedError, match="numpy array or torch tensor"):
                w.add_scalar("x", [1.0])
            with pytest.raises(ValueError, match="The input has no element"):
                w.add_histogram("h", lib.ones(0))
            with pytest.raises(ValueError, match="len\\(bucket_limits\\)"):
                w.add_histogram_raw("h", 0, 1, 1, 1, 1, [1.0], [1, 2])
            with pytest.raises(AssertionError, match="size of input tensor and input format"):
                w.add_image("i", lib.ones(3, 4))
            with pytest.raises(AssertionError, match="same dimension shorthand twice"):
                w.add_image("i", lib.ones(3, 4, 4), dataformats="CCW")
            with pytest.raises(TypeError, match="should be dictionary"):
                w.add_hparams([("lr", 1)], {})
            with pytest.raises(ValueError, match="value should be one of int, float, str"):
                w.add_hparams({"lr": [1]}, {"m": 1.0})
            with pytest.raises(AssertionError, match="Expected 3 tags"):
                w.add_custom_scalars_marginchart(["a"])


def test_default_log_dir_comment_and_suffix(tmp_path, monkeypatch):
    import socket
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1", filename_suffix=".v1") as w:
        w.add_scalar("x", 1.0, 0)
        log_dir = w.get_logdir()
    assert log_dir.startswith("runs" + os.sep)
    assert log_dir.endswith("_" + socket.gethostname() + "_lr0.1")
    files = os.listdir(log_dir)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    assert files[0].endswith(".v1")


def test_purge_step_close_and_reopen(tmp_path):
    w = SummaryWriter(tmp_path)
    for step in range(5):
        w.add_scalar("x", float(step), step)
    w.close()
    w.close()  # a second close does nothing, as torch's
    resumed = SummaryWriter(tmp_path, purge_step=2)
    resumed.add_scalar("x", 20.0, 2)
    resumed.flush()
    resumed.close()
    # TensorBoard drops the first run's steps >= 2 when it meets the restart
    assert [(e.step, e.value) for e in _read(tmp_path).Scalars("x")] == \
        [(0, 0.0), (1, 1.0), (2, 20.0)]
    # adding after close writes a new event file, as torch's writer does
    w.add_scalar("y", 1.0, 0)
    w.close()
    assert len(os.listdir(tmp_path)) == 3


def _projector_files(log_dir):
    found = {}
    for root, _, files in os.walk(log_dir):
        for name in files:
            if not name.startswith("events."):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, log_dir)] = f.read()
    return found


def test_embedding_files_as_torchs(torch, tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    rng = np.random.default_rng(1)
    mat = rng.normal(size=(6, 3)).astype(np.float32)
    sprites = rng.random((6, 3, 4, 4)).astype(np.float32)
    for lib, writer_class in ((tg, SummaryWriter), (torch, TorchWriter)):
        with writer_class(str(tmp_path / lib.__name__)) as w:
            w.add_embedding(lib.tensor(mat), metadata=list("abcdef"),
                            label_img=lib.tensor(sprites), tag="fea/tures")
            w.add_embedding(mat, metadata=[[i, i % 2] for i in range(6)],
                            metadata_header=["index", "parity"], global_step=3)
    mine, theirs = _projector_files(tmp_path / "tapegrad"), _projector_files(tmp_path / "torch")
    assert sorted(mine) == sorted(theirs)
    assert "00000/fea%2ftures/sprite.png" in mine
    for name in theirs:
        assert mine[name] == theirs[name], name


def test_graph_of_a_module(tmp_path):
    model = _Net.make(tg)
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, tg.randn(5, 4))
    acc = _read(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step1"]
    nodes = {n.name: n for n in acc.Graph().node}
    # torch's jit graph has the same scopes, ops and input / output nodes
    assert nodes["input/x"].op == "IO Node"
    linear = nodes["Net/Linear[fc1]/linear"]
    assert linear.op == "aten::linear"
    assert list(linear.input) == ["input/x", "Net/Linear[fc1]/weight/weight",
                                  "Net/Linear[fc1]/bias/bias"]
    assert nodes["Net/Linear[fc1]/weight/weight"].op == "prim::GetAttr"
    assert nodes["Net/ReLU[act]/relu"].op == "aten::relu"
    assert nodes["Net/Sequential[head]/Linear[0]/linear_1"].op == "aten::linear"
    output = nodes["output/output.1"]
    assert output.op == "IO Node" and list(output.input) == ["Net/mul"]
    assert [d.size for d in output.attr["_output_shapes"].list.shape[0].dim] == [5, 2]
    assert model.training  # the trace ran in eval mode and gave the mode back


def _graph_nodes(tmp_path, model, args):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, args)
    return {n.name: n for n in _read(tmp_path).Graph().node}


def test_graph_with_a_submodule_fx_cannot_enter(tmp_path):
    class DataDependent(tg.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x  # a branch on a value: fx cannot enter it

    class Outer(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = DataDependent()

        def forward(self, x):
            return self.inner(x) + 1

    nodes = _graph_nodes(tmp_path, Outer(), (tg.ones(2),))
    call = nodes["Outer/DataDependent[inner]/inner"]
    assert call.op == "DataDependent" and list(call.input) == ["input/x"]
    assert list(nodes["Outer/add"].input) == ["Outer/DataDependent[inner]/inner"]


def test_graph_of_a_forward_fx_cannot_trace_comes_from_the_tape(tmp_path):
    class Recurrent(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = tg.nn.Linear(3, 3)

        def forward(self, x):
            h = tg.zeros(3)
            for i in range(x.shape[0]):  # a loop over a size: fx cannot trace it, jit runs it
                h = tg.tanh(self.cell(x[i]) + h)
            return h

    nodes = _graph_nodes(tmp_path, Recurrent(), tg.ones(2, 3))
    ops = sorted(n.op for n in nodes.values())
    assert ops.count("aten::addmm") == 2 and ops.count("aten::tanh") == 2  # two steps
    assert nodes["Recurrent/addmm_1"].input[0] == "Recurrent/Linear[cell]/bias/bias"
    assert list(nodes["output/output.1"].input) == ["Recurrent/tanh_2"]
    assert [d.size for d in nodes["input/x"].attr["_output_shapes"].list.shape[0].dim] == [2, 3]
