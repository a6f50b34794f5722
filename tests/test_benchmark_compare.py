"""torch.utils.benchmark.Compare: the printed tables of Measurements with fixed times equal
PyTorch's character for character (labels, thread groups, envs, missing cells, merged repeats,
trimmed figures, colours, variance notes).  Found missing by aladdinpersson's
linkedin_posts/tensor_operations/bmm_einsum_matmul.py, which ends with Compare(results).print()."""
import pytest

import tapegrad.utils.benchmark as gb

torch = pytest.importorskip("torch")
import torch.utils.benchmark as tb  # noqa: E402


def _measurements(bm, cells):
    out = []
    for (label, sub, desc, env, threads, number, times) in cells:
        spec = bm.TaskSpec(stmt=f"f({sub})", setup="pass", label=label, sub_label=sub,
                           description=desc, env=env, num_threads=threads)
        out.append(bm.Measurement(number, list(times), spec))
    return out


STEADY = [1.00e-4, 1.01e-4, 0.99e-4, 1.02e-4, 1.00e-4, 0.98e-4]
NOISY = [1.0e-3, 2.5e-3, 0.6e-3, 1.9e-3, 3.3e-3, 0.8e-3]

CASES = {
    "one column": [("bmm", "Method: bmm", "10x64", None, 1, 100, [5.7942e-1]),
                   ("bmm", "Method: matmul", "10x64", None, 1, 100, [1.339e-2]),
                   ("bmm", "Method: einsum", "10x64", None, 1, 100, [1.765e-2])],
    "grid with a gap and threads": [
        ("add", "a", "n=1", None, 1, 10, STEADY), ("add", "a", "n=100", None, 1, 10, NOISY),
        ("add", "b", "n=1", None, 1, 10, [x * 3 for x in STEADY]),
        ("add", "a", "n=1", None, 4, 10, [x / 2 for x in STEADY]),
        ("add", "b", "n=100", None, 4, 10, [x * 7 for x in NOISY])],
    "two labels and envs": [
        ("mul", "x", "small", "env A", 1, 1, [2e-7, 2.1e-7, 1.9e-7, 2e-7]),
        ("mul", "x", "small", "env B", 1, 1, [3e-7, 3.1e-7, 2.9e-7, 3e-7]),
        ("div", "y", "big", None, 2, 1, [4.2, 4.4, 4.1]),
        ("mul", "z", "big", "env A", 1, 1, [5e-5, 9e-5, 2e-5, 7e-5])],
    "repeats merged": [("m", "s", "d", None, 1, 10, STEADY), ("m", "s", "d", None, 1, 20, NOISY)],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("options", [(), ("trim",), ("colorize",), ("rowwise",),
                                     ("highlight",), ("trim", "colorize", "highlight")])
def test_compare_prints_as_torch(case, options):
    texts = []
    for bm in (tb, gb):
        c = bm.Compare(_measurements(bm, CASES[case]))
        if "trim" in options:
            c.trim_significant_figures()
        if "colorize" in options:
            c.colorize()
        if "rowwise" in options:
            c.colorize(rowwise=True)
        if "highlight" in options:
            c.highlight_warnings()
        texts.append(str(c))
    assert texts[1] == texts[0]


def test_compare_print_and_extend(capsys):
    printed = []
    for bm in (tb, gb):
        ms = _measurements(bm, CASES["one column"])
        c = bm.Compare(ms[:1])
        c.extend_results(ms[1:])
        c.print()
        printed.append(capsys.readouterr().out)
    assert printed[1] == printed[0]


def test_compare_rejects_non_measurements():
    for bm in (tb, gb):
        with pytest.raises(ValueError, match="Expected an instance of `Measurement`, got <class 'int'>"):
            bm.Compare([1])


def test_measurement_fields_compare_reads():
    for cells in CASES.values():
        for t, g in zip(_measurements(tb, cells), _measurements(gb, cells)):
            assert g.significant_figures == t.significant_figures
            assert g.as_row_name == t.as_row_name and g.env == t.env
    merged_t = tb.Measurement.merge(_measurements(tb, CASES["repeats merged"]))
    merged_g = gb.Measurement.merge(_measurements(gb, CASES["repeats merged"]))
    assert len(merged_g) == len(merged_t) == 1
    assert merged_g[0].number_per_run == 1
    assert merged_g[0].raw_times == pytest.approx(merged_t[0].raw_times)


def test_timer_measurements_make_a_table():
    results = [gb.Timer(stmt=stmt, setup="x = torch.ones(8, 8)", label="ops", sub_label=name,
                        description="8x8").timeit(3) for name, stmt in
               [("matmul", "x @ x"), ("add", "x + x")]]
    lines = str(gb.Compare(results)).splitlines()
    assert lines[0].startswith("[") and " ops " in lines[0]
    assert lines[2].startswith("1 threads: ")
    assert [l.split("|")[0].strip() for l in lines[3:5]] == ["matmul", "add"]
    assert lines[-1].startswith("Times are in ")
