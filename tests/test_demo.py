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
