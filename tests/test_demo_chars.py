"""`python -m tapegrad demo chars`: a character-level GRU trains on the bundled text and samples."""
import io
import math
import subprocess
import sys

import pytest

import tapegrad as torch
from tapegrad import demo_chars


def _quick(seed=0, **kw):
    out = io.StringIO()
    options = dict(steps=20, lr=1e-2, batch_size=8, seq_len=16, seed=seed, samples=2,
                   sample_length=40, stream=out)
    options.update(kw)
    loss = demo_chars.train_chars(**options)
    return loss, out.getvalue()


def test_text_ships_with_the_package_and_is_small():
    text = demo_chars.load_text()
    assert 5_000 < len(text.encode("utf-8")) <= 200_000
    assert "lighthouse" in text


def test_vocabulary_round_trips():
    vocab = demo_chars.Vocabulary("hello, world")
    ids = vocab.encode("low here")
    assert ids.dtype == torch.int64 and vocab.decode(ids.tolist()) == "low here"
    assert len(vocab) == len(set("hello, world"))


def test_random_windows_are_shifted_by_one_character():
    data = torch.arange(100)
    torch.manual_seed(0)
    x, y = demo_chars.random_windows(data, batch_size=4, seq_len=10)
    assert tuple(x.shape) == tuple(y.shape) == (4, 10)
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y[:, 0], x[:, 0] + 1)


def test_a_few_steps_learn_and_print_progress_then_samples():
    loss, text = _quick()
    vocab_size = len(set(demo_chars.load_text()))
    assert loss < math.log(vocab_size) - 0.5      # well below uniform guessing after 20 steps
    assert "step 20/20 [" + "#" * 30 + "]" in text and "chars/s" in text
    assert "--- sample 1 (temperature 0.7) ---\nThe " in text and "--- sample 2" in text


def test_samples_are_reproducible_for_a_seed():
    def samples(seed):
        return _quick(seed, steps=3)[1].split("--- sample 1")[1]
    assert samples(5) == samples(5)
    assert samples(5) != samples(6)


def test_generate_continues_the_prompt_at_a_temperature():
    vocab = demo_chars.Vocabulary(demo_chars.load_text())
    torch.manual_seed(0)
    model = demo_chars.CharGRU(len(vocab))
    out = demo_chars.generate(model, vocab, "The ", length=25, temperature=0.5)
    assert out.startswith("The ") and len(out) == 29 and set(out) <= set(vocab.chars)
    assert model.training                            # generate restores train mode


@pytest.mark.parametrize("plot", [False, True])
def test_command_line(tmp_path, plot):
    png = tmp_path / "curve.png"
    args = ["demo", "chars", "--steps", "2", "--batch-size", "4", "--seq-len", "8",
            "--samples", "1", "--sample-length", "10", "--seed", "1"]
    if plot:
        args += ["--plot", str(png)]
    run = subprocess.run([sys.executable, "-m", "tapegrad", *args], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert "step 2/2" in run.stdout and "--- sample 1" in run.stdout
    if plot:
        try:
            import matplotlib  # noqa: F401
            assert png.exists()
        except ImportError:
            assert "--plot needs matplotlib" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "tapegrad", "demo", "chars", "--temperature",
                          "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--temperature" in bad.stderr
