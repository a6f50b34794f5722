"""torch.utils.benchmark.Compare: many Measurements printed as tables, one per label.

A table has a row per (num_threads, env, sub_label or statement) and a column per description;
rows are grouped under a "N threads:" rule, each cell is the median in the table's unit (the unit
of its fastest measurement).  Options, as PyTorch's: `trim_significant_figures()` prints only
the figures a measurement's spread supports, `colorize()` marks each cell against the best of its
column (or row) with ANSI colours, `highlight_warnings()` appends "(! XX%)" to noisy cells.
Measurements of one TaskSpec are merged first (Measurement.merge), so repeated runs of a Timer
make one cell.  The layout rules (widths, centring, separators) are PyTorch's, so a script's
printed table matches it line for line.
"""
from __future__ import annotations as _annotations

import enum
import math

from .benchmark import Measurement, select_unit

__all__ = ["Colorize", "Compare"]

# ANSI sequences of the colouring (PyTorch's)
_BEST = "\033[92m"
_GOOD = "\033[34m"
_BAD = "\033[2m\033[91m"
_VERY_BAD = "\033[31m"
_BOLD = "\033[1m"
_END = "\033[0m"

_UNIT_WORDS = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


class Colorize(enum.Enum):
    """How Compare colours its cells: not at all, against the column's best, or the row's."""
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _leading_digits(value: float) -> int:
    return math.ceil(math.log10(value))


def _trim_sigfig(x: float, n: int) -> float:
    """x rounded to n significant figures (halves to even, as torch.round)."""
    scale = 10 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


def _colored(cell: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return _BEST + _BOLD + cell + _END * 2
    if value <= best * 1.1:
        return _GOOD + _BOLD + cell + _END * 2
    if value >= best * 5:
        return _VERY_BAD + _BOLD + cell + _END * 2
    if value >= best * 2:
        return _BAD + cell + _END * 2
    return cell


class _ColumnFormat:
    """How one column prints its numbers: a common width and number of decimals."""

    def __init__(self, results: list, scale: float, trim: bool, highlight: bool):
        present = [m for m in results if m is not None]
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in present)
        digits = [_leading_digits(m.median / scale) for m in present]
        decimals = min(max(m.significant_figures - d, 0)
                       for d, m in zip(digits, present)) if trim else 1
        width = max(digits) + decimals + (1 if decimals else 0)
        self.template = f"{{:>{width}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def cell(self, value: float | None, sigfigs: int, spread: float | None) -> str:
        if value is None:
            return " " * len(self.cell(1, sigfigs, None))
        if self.trim:
            value = _trim_sigfig(value, sigfigs)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return self.template.format(value, note)


def _table(results: list, colorize: Colorize, trim: bool, highlight: bool) -> str:
    """The printed table of the Measurements of one label."""
    unit, scale = select_unit(min(m.median for m in results))

    def row_key(m):
        return (m.num_threads, m.env, m.as_row_name)

    row_keys = list(dict.fromkeys(row_key(m) for m in results))
    row_keys.sort(key=lambda k: k[:2])        # stable: statements keep their order
    col_keys = list(dict.fromkeys(m.description for m in results))
    grid = [[None] * len(col_keys) for _ in row_keys]
    row_at = {k: i for i, k in enumerate(row_keys)}
    col_at = {k: j for j, k in enumerate(col_keys)}
    for m in results:
        grid[row_at[row_key(m)]][col_at[m.description]] = m

    envs = {m.env for m in results}
    show_env = len(envs) > 1
    env_width = max(len(e) for e in envs) if show_env else 0

    # thread groups: a new one each time num_threads changes down the sorted rows
    group_of, starts, group = [], [], -1
    for i, (threads, _, _) in enumerate(row_keys):
        if i == 0 or threads != row_keys[i - 1][0]:
            group += 1
            starts.append(i)
        group_of.append(group)
    formats = [_ColumnFormat([row[j] for row in grid], scale, trim, highlight)
               for j in range(len(col_keys))]

    text_rows = [[""] + col_keys]
    prior_env = None
    for i, (threads, env, name) in enumerate(row_keys):
        if i in starts:
            prior_env = ""
        env_text = f"({env})" if show_env and env != prior_env else ""
        prior_env = env
        cells = ["  " + env_text.ljust(env_width + 4) + name]
        for fmt, m in zip(formats, grid[i]):
            if m is None:
                cells.append(fmt.cell(None, 1, None))
            else:
                cells.append(fmt.cell(m.median / scale, m.significant_figures,
                                      m.iqr / m.median if m.has_warnings else None))
        text_rows.append(cells)
    n_cols = max(len(r) for r in text_rows)
    for r in text_rows:
        r.extend([""] * (n_cols - len(r)))
    widths = [max(len(c) for c in col) for col in zip(*text_rows)]

    header = "  |  ".join(c.center(w) for c, w in zip(text_rows[0], widths))
    lines = [header]
    for i, cells in enumerate(text_rows[1:]):
        if i in starts:
            lines.append(f"{row_keys[i][0]} threads: ".ljust(len(header), "-"))
        if colorize is Colorize.ROWWISE:
            row_best = min(m.median for m in grid[i] if m is not None)
            bests = [row_best] * len(cells)
        elif colorize is Colorize.COLUMNWISE:
            same_group = [k for k in range(len(row_keys)) if group_of[k] == group_of[i]]
            bests = [min((grid[k][j].median for k in same_group if grid[k][j] is not None),
                         default=None) for j in range(len(col_keys))]
        else:
            bests = [None] * len(cells)
        out = [cells[0].ljust(widths[0])]
        for cell, width, m, best in zip(cells[1:], widths[1:], grid[i], bests):
            cell = cell.center(width)
            if m is not None and best is not None:
                cell = _colored(cell, m.median, best)
            out.append(cell)
        lines.append("  |  ".join(out))

    label = results[0].label
    warned = highlight and any(m.has_warnings for m in results)
    note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
            if warned else "")
    body = "\n".join(lines)
    return (f"[{(' ' + (label or '') + ' ').center(len(header) - 2, '-')}]\n{body}\n\n"
            f"Times are in {_UNIT_WORDS[unit]}s ({unit}).\n{note}")


class Compare:
    """Tables of many Measurements (see the module docstring); `print()` or `str()` shows them."""

    def __init__(self, results) -> None:
        self._results: list = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results) -> None:
        """Add Measurements to the ones already held (anything else raises ValueError)."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print only the figures each measurement's spread supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Colour cells against the best of their column (or, with rowwise, of their row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Append "(! XX%)" to cells whose measurement is noisy."""
        self._highlight_warnings = True

    def _render(self) -> list:
        by_label: dict = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [_table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings) for group in by_label.values()]

    def __str__(self) -> str:
        return "\n".join(self._render())

    def print(self) -> None:
        """Print the tables."""
        print(str(self))
