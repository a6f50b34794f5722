"""tapegrad.utils.benchmark: Timer / Measurement as torch.utils.benchmark (tutorials time with it)."""
import pytest

import tapegrad
from tapegrad.utils import benchmark


def _summary(measurement):
    # Everything a Measurement prints except its first line (the object's address) and the times.
    return [line for line in str(measurement).splitlines()[1:]
            if not any(u in line for u in (" ns", " us", " ms", " s "))]


def test_timeit_measures_one_block_and_prints_the_task():
    x = tapegrad.ones(3)
    t = benchmark.Timer(stmt="x + 1", setup="y = 2", globals={"x": x}, label="add",
                        sub_label="small", description="ones(3)")
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.raw_times) == 1 and len(m.times) == 1
    assert m.times[0] == pytest.approx(m.raw_times[0] / 50)
    assert m.median == m.mean == m.times[0] and m.iqr == 0
    assert (m.label, m.stmt, m.title, m.num_threads) == ("add", "x + 1", "add: small", 1)
    assert _summary(m) == ["add: small", "ones(3)", "setup: y = 2", "  1 measurement, 50 runs , 1 thread"]


def test_statistics_repr_and_warnings_of_several_blocks():
    spec = benchmark.TaskSpec(stmt="f()", setup="pass")
    m = benchmark.Measurement(1, [1e-3, 2e-3, 3e-3, 4e-3, 5e-3], spec)
    assert m.median == pytest.approx(3e-3) and m.mean == pytest.approx(3e-3)
    assert m.iqr == pytest.approx(2e-3) and not m.meets_confidence() and m.has_warnings
    assert str(m).splitlines()[1:] == [
        "f()", "  Median: 3.00 ms", "  IQR:    2.00 ms (2.00 to 4.00)",
        "  5 measurements, 1 runs per measurement, 1 thread",
        "  WARNING: Interquartile range is 66.7% of the median measurement.",
        "           This suggests significant environmental influence."]
    steady = benchmark.Measurement(10, [1e-5] * 4, spec)
    assert steady.meets_confidence() and not steady.has_warnings and steady.times == pytest.approx([1e-6] * 4)


def test_blocked_and_adaptive_autorange_and_multiline_statements():
    t = benchmark.Timer(stmt="""
        a = torch.ones(2)
        a.sum()
    """)
    assert t.timeit(3).title == "stmt:\n  a = torch.ones(2)\n  a.sum()"   # torch is in its globals
    m = t.blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and str(m.number_per_run).strip("0") == "1"
    seen = []
    m = t.adaptive_autorange(min_run_time=0.01, max_run_time=0.3, callback=lambda n, s: seen.append(n))
    assert len(m.raw_times) == len(seen) >= 1


def test_globals_are_copied_and_errors_are_pytorchs():
    g = {"z": 1}
    benchmark.Timer(stmt="w = 5", globals=g).timeit(2)
    assert sorted(g) == ["z"]
    with pytest.raises(ValueError, match="only a `str` stmt"):
        benchmark.Timer(stmt=lambda: 1)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        benchmark.Timer(global_setup="int x;")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        benchmark.Timer().repeat()
    assert benchmark.select_unit(3e-5) == ("us", 1e-6) and benchmark.select_unit(2.0) == ("s", 1)
    assert benchmark.select_unit(4e-9) == ("ns", 1e-9) and benchmark.select_unit(0.5) == ("ms", 1e-3)


def test_same_summary_as_torch(torch):
    import torch.utils.benchmark as tb
    for kwargs in [dict(stmt="x + 1", setup="y = 2", label="add", sub_label="s", description="d"),
                   dict(stmt="x * 2"), dict(stmt="x.sum()", setup="a = 1\nb = 2", sub_label="two")]:
        ours = benchmark.Timer(globals={"x": tapegrad.ones(3)}, **kwargs).timeit(20)
        theirs = tb.Timer(globals={"x": torch.ones(3)}, **kwargs).timeit(20)
        assert _summary(ours) == _summary(theirs)
        assert (ours.title, ours.number_per_run, len(ours.times)) == (theirs.title, theirs.number_per_run, len(theirs.times))
    spec_t = tb.Measurement(1, [1e-3, 2e-3, 3e-3, 4e-3, 5e-3], tb.TaskSpec("f()", "pass"))
    spec_o = benchmark.Measurement(1, [1e-3, 2e-3, 3e-3, 4e-3, 5e-3], benchmark.TaskSpec("f()", "pass"))
    assert str(spec_o).splitlines()[1:] == str(spec_t).splitlines()[1:]
    for t in [4e-9, 3e-5, 2e-2, 7.0]:
        assert benchmark.select_unit(t) == tb.select_unit(t)
