"""The main job: `python -m tapegrad demo` trains to a high held-out accuracy."""
import io
import subprocess
import sys

from tapegrad import demo


def test_demo_with_few_epochs_beats_chance_by_far():
    out = io.StringIO()
    acc = demo.train(epochs=3, lr=1e-2, batch_size=64, seed=1, stream=out)
    assert acc > 0.85                            # chance is 0.10
    text = out.getvalue()
    assert "epoch   3/3" in text and "examples/s" in text and "test accuracy" in text


def test_demo_default_run_reaches_96_percent():
    assert demo.train(stream=io.StringIO()) >= 0.96


def test_command_line_options_and_plot_message(tmp_path):
    plot = tmp_path / "curve.png"
    run = subprocess.run([sys.executable, "-m", "tapegrad", "demo", "--epochs", "1",
                          "--batch-size", "128", "--lr", "0.02", "--seed", "3",
                          "--plot", str(plot)], capture_output=True, text=True, check=True)
    assert "epoch   1/1" in run.stdout and "total time" in run.stdout
    try:
        import matplotlib  # noqa: F401
        assert plot.exists()
    except ImportError:
        assert "--plot needs matplotlib" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "tapegrad", "demo", "--epochs", "0"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--epochs" in bad.stderr


def test_digits_data_ship_with_the_package():
    x, y = demo.load_digits()
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(y.tolist()) == set(range(10))


def test_cnn_on_a_training_subset_learns_and_reports():
    out = io.StringIO()
    acc = demo.train(epochs=2, seed=0, stream=out, model="cnn", train_subset=512)
    assert acc > 0.35            # 512 digits, 2 epochs (0.54..0.67 over seeds 0-3); chance is 0.10
    text = out.getvalue()
    assert "CNN conv3x3(16)-conv3x3(32)-maxpool-64-10 on 512 UCI digits (359 held out)" in text
    assert "epoch   2/2" in text and "test accuracy" in text


def test_cnn_is_an_ordinary_module_of_conv_relu_pool_linear_layers():
    from tapegrad import nn
    net = demo.DigitsCNN()
    kinds = {type(m) for m in net.modules()}
    assert {nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Linear, nn.Dropout} <= kinds
    assert tuple(net(demo.torch.zeros(5, 64)).shape) == (5, 10)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "tapegrad", *args], capture_output=True,
                          text=True)


def test_command_line_help_version_and_task_options():
    top = _run("--help")
    assert top.returncode == 0 and all(c in top.stdout for c in ("demo", "bench", "examples"))
    version = _run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"tapegrad {demo.torch.version.tapegrad_version}"
    help_ = _run("demo", "--help")
    assert help_.returncode == 0
    for option in ("--model", "--epochs", "--steps", "--temperature", "--seed", "--plot",
                   "--train-subset", "chars"):
        assert option in help_.stdout
    wrong = _run("demo", "chars", "--model", "cnn")
    assert wrong.returncode == 2 and "--model is an option of 'demo digits'" in wrong.stderr
    unknown = _run("frobnicate")
    assert unknown.returncode == 2 and "invalid choice" in unknown.stderr
    # Options without a command still go to the demo, as they always did.
    assert _run("--epochs", "0").returncode == 2


def test_cnn_from_the_command_line_with_a_subset():
    run = _run("demo", "--model", "cnn", "--epochs", "1", "--train-subset", "64", "--seed", "2")
    assert run.returncode == 0, run.stderr
    assert "CNN" in run.stdout and "on 64 UCI digits" in run.stdout and "epoch   1/1" in run.stdout
