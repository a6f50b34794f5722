"""tapegrad.utils.benchmark: the Timer and Measurement of torch.utils.benchmark (Python statements).

Tutorials time two ways of computing the same thing with

    t = benchmark.Timer(stmt="f(x)", globals={"f": f, "x": x}, label="f")
    print(t.timeit(100))              # or t.blocked_autorange(min_run_time=0.2)

and print the Measurement, or read its `times`, `mean`, `median`.  This module gives the same
names, arguments, measuring rules and printed summary as PyTorch: `timeit(number)` warms up with
number // 100 runs (at least 2) and records one measurement of `number` runs; `blocked_autorange`
grows the block size by tens until the timer's overhead is negligible, then records blocks until
`min_run_time` has passed; `adaptive_autorange` records until the interquartile range falls below
`threshold` of the median.  `torch` (here tapegrad) is added to the statement's globals when it is
not given, as PyTorch does.  `Compare` (tapegrad/utils/_benchmark_compare.py) prints many
Measurements as one table; `Fuzzer` (tapegrad/utils/_benchmark_fuzzer.py) draws reproducible
benchmark inputs.  Not here: the C++ language and Callgrind counts
(`collect_callgrind`), which need PyTorch's C++ toolchain.
"""
from __future__ import annotations as _annotations

import dataclasses
import enum
import math
import statistics
import textwrap
import timeit as _timeit_module
from typing import Any, Callable
from .._torch_names import object_repr as _object_repr

__all__ = ["Timer", "Measurement", "TaskSpec", "Language", "select_unit", "timer", "Compare",
           "Colorize", "Fuzzer", "FuzzedParameter", "FuzzedTensor", "ParameterAlias"]

timer = _timeit_module.default_timer

_IQR_WARN_THRESHOLD = 0.1          # PyTorch's thresholds for the "noisy measurement" warnings
_IQR_GROSS_WARN_THRESHOLD = 0.25
_MAX_SIGNIFICANT_FIGURES = 4       # and for the figures a Compare table prints
_MIN_CONFIDENCE_INTERVAL = 25e-9


class Language(enum.Enum):
    """The language of a Timer's statement (only Python is supported by tapegrad)."""
    PYTHON = 0
    CPP = 1


def select_unit(t: float) -> tuple[str, float]:
    """The unit (ns, us, ms or s) and its scale that print `t` seconds as a number of order 1."""
    exponent = math.floor(math.log10(t) / 3) if t > 0 else -3
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(exponent, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def _dedent_snippet(code: str) -> str:
    # Triple-quoted snippets written inside a function start with a newline and are indented.
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What a Timer measures (its statement, setup and labels), shared by its Measurements."""
    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the one-line statement), with the sub-label after a colon."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup line of the printed summary ('' when there is no setup)."""
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line, as a Measurement prints them."""
        sections = [s for s in (self.title, self.description or "", self.setup_str()) if s]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections)


@dataclasses.dataclass(repr=False)
class Measurement:
    """The result of a Timer: `raw_times` are seconds per block of `number_per_run` runs."""
    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __getattr__(self, name: str) -> Any:
        # label, stmt, num_threads, ... read through to the TaskSpec, as in PyTorch.
        if name in {f.name for f in dataclasses.fields(TaskSpec)}:
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list:
        """Seconds per single run of the statement, one entry per block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q: float) -> float:
        # Linear interpolation between order statistics (numpy's and torch.quantile's default).
        s = sorted(self.times)
        pos = q * (len(s) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def median(self) -> float:
        return self._quantile(0.5)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def iqr(self) -> float:
        """The interquartile range of the per-run times."""
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def as_row_name(self) -> str:
        """The name of this measurement's row in a Compare table."""
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread of the middle half of the times supports
        (1 to 4): PyTorch's estimate, a 90% interval (z = 1.645) of at least 25 ns."""
        s = sorted(self.times)
        middle = s[len(s) // 4:math.ceil(3 * len(s) / 4)]
        std = statistics.pstdev(middle) if len(middle) > 1 else 0.0
        interval = max(1.645 * std / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(math.floor(math.log10(self.median / interval)), 1), _MAX_SIGNIFICANT_FIGURES)

    @staticmethod
    def merge(measurements) -> list:
        """One Measurement per TaskSpec, holding the per-run times of all of its measurements
        (number_per_run 1, no metadata), in order of first appearance."""
        grouped: dict = {}
        for m in measurements:
            grouped.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in grouped.items()]

    @property
    def has_warnings(self) -> bool:
        return bool(self._warnings())

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether the interquartile range is below `threshold` of the median."""
        return self.iqr / self.median < threshold

    def _warnings(self) -> list:
        if not self.raw_times:
            return []
        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            why = "This suggests significant environmental influence."
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            why = "This could indicate system fluctuation."
        else:
            return []
        return [f"  WARNING: Interquartile range is {self.iqr / self.median * 100:.1f}% "
                f"of the median measurement.\n           {why}"]

    def __repr__(self) -> str:
        n = len(self.raw_times)
        unit, scale = select_unit(self.median)
        # (the object line names PyTorch's class, as tapegrad's reprs say torch)
        lines = [f"<torch.utils.benchmark.utils.common.Measurement object at {id(self):#x}>",
                 self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._quantile(0.25) / scale:.2f} to {self._quantile(0.75) / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings())
        return "\n".join(lines).strip()


class Timer:
    """Times a Python statement as torch.utils.benchmark.Timer does (see the module docstring)."""
    _torch_module = "torch.utils.benchmark.utils.timer"  # where PyTorch defines it (its default repr names it)
    __repr__ = _object_repr

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("tapegrad.utils.benchmark.Timer times Python statements only "
                                      "(language='c++' needs PyTorch's C++ toolchain)")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             "code can simply be moved to `setup`.")
        # A copy, so that what the statement defines does not leak into the caller's globals.
        self._globals = dict(globals or {})
        import tapegrad
        self._globals.setdefault("torch", tapegrad)
        stmt, setup = _dedent_snippet(stmt), _dedent_snippet(setup)
        self._timer = _timeit_module.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env,
                                   num_threads=num_threads)

    def _time(self, number: int) -> float:
        # No real statement takes under a nanosecond; the floor also keeps ratios finite.
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Warm up, then one measurement of `number` runs."""
        self._time(max(number // 100, 2))
        return Measurement(number, [self._time(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        # Runs per block so that the timer's own overhead is negligible (this is also the warmup).
        overhead = statistics.median(self._time(0) for _ in range(5))
        number = 1
        while True:
            taken = self._time(number)
            if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                return number
            if taken > min_run_time or number * 10 > 2147483647:
                return number
            number *= 10

    def _measure(self, number: int, enough: Callable[[list], bool], min_run_time: float,
                 max_run_time: float | None = None, callback=None) -> list:
        times: list = []
        total, can_stop = 0.0, False
        while total < min_run_time or not can_stop:
            spent = self._time(number)
            times.append(spent)
            total += spent
            if callback:
                callback(number, spent)
            can_stop = enough(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a calibrated number of runs until `min_run_time` seconds have passed."""
        number = self._block_size(min_run_time)
        times = self._measure(number, lambda _: True, min_run_time, callback=callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks until the interquartile range is below `threshold` of the median (at least
        `min_run_time`, at most `max_run_time` seconds)."""
        number = self._block_size(min_run_time=0.05)

        def enough(times: list) -> bool:
            return len(times) > 3 and Measurement(number, times, self._task_spec).meets_confidence(threshold)

        times = self._measure(number, enough, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)


from ._benchmark_compare import Colorize, Compare  # noqa: E402  (it reads Measurement)
from ._benchmark_fuzzer import Fuzzer, FuzzedParameter, FuzzedTensor, ParameterAlias  # noqa: E402
