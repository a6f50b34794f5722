"""Run the corpus of PyTorch-style scripts under PyTorch and under tapegrad, and compare.

    python tools/run_corpus.py                 # every script, under tapegrad, against the cache
    python tools/run_corpus.py --only bigram   # scripts whose name contains 'bigram'
    python tools/run_corpus.py --verbose       # also print both outputs around the first difference
    python tools/run_corpus.py --regen         # rerun under real PyTorch and rewrite the cache
    python tools/run_corpus.py --strict        # exit 1 unless every script passes
    python tools/run_corpus.py --check-seeds   # PyTorch with shifted seeds must print the cache

Each script in tools/corpus/*.py is a plain PyTorch program (`import torch`).  Under tapegrad it
runs UNCHANGED: tools/corpus_hook/ goes on PYTHONPATH, and its sitecustomize.py maps `torch` and
`torch.*` imports to `tapegrad` and `tapegrad.*`.  What PyTorch printed is cached in
tools/corpus/expected/<name>.txt (stdout) and expected/status.json (exit code, exception type),
so the comparison needs no PyTorch installed; `--regen` refreshes the cache from PyTorch.

A script passes when its exit code and exception type (if any) match PyTorch's and its stdout
matches line by line, where numbers may differ by one unit in the last printed digit or by a
relative 1e-3 (float32 rounding and summation order differ between libraries; any larger
difference is a real difference).  It is a measuring instrument: it exits 0 whatever the
results, unless --strict.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tools" / "corpus"
EXPECTED = CORPUS / "expected"
STATUS_FILE = EXPECTED / "status.json"
HOOK_DIR = ROOT / "tools" / "corpus_hook"
RESEED_DIR = ROOT / "tools" / "corpus_reseed"

RTOL = 1e-3
TIMEOUT_S = 120

# A number as Python and tensor reprs print it: 12, -3.5, 1.2e-05, .5, 1e+03, inf, nan.
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:inf|nan)\b")
# The last line of a traceback: "pkg.mod.ErrorType: message" or a bare "ErrorType".
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Iteration))\b")


@dataclass
class Outcome:
    stdout: str
    returncode: int
    exception: str | None  # the exception's class name (without its module), if the script raised
    seconds: float
    stderr_tail: str = ""
    cpu_seconds: float = 0.0


def corpus_scripts() -> list[Path]:
    return sorted(p for p in CORPUS.glob("*.py") if not p.name.startswith("_"))


def _exception_type(stderr: str) -> str | None:
    for line in reversed(stderr.strip().splitlines()):
        match = _EXCEPTION_LINE.match(line.strip())
        if match:
            return match.group(1).rsplit(".", 1)[-1]
    return None


def run_script(script: Path, use_tapegrad: bool, timeout: float = TIMEOUT_S, seed_offset: int = 0) -> Outcome:
    env = dict(os.environ)
    paths = [str(ROOT)]
    if use_tapegrad:
        paths.insert(0, str(HOOK_DIR))
    elif seed_offset:
        paths.insert(0, str(RESEED_DIR))
        env["CORPUS_SEED_OFFSET"] = str(seed_offset)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONHASHSEED"] = "0"
    # One BLAS thread: the machine is shared, and summation order then does not vary run to run.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    start = time.perf_counter()
    cpu_before = _children_cpu()
    try:
        proc = subprocess.run(
            [sys.executable, script.name], cwd=script.parent, env=env,
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return Outcome(out, -1, "Timeout", time.perf_counter() - start, f"timed out after {timeout:.0f} s")
    seconds = time.perf_counter() - start
    cpu_seconds = _children_cpu() - cpu_before
    exception = _exception_type(proc.stderr) if proc.returncode != 0 else None
    tail = "\n".join(proc.stderr.strip().splitlines()[-1:])
    return Outcome(proc.stdout, proc.returncode, exception, seconds, tail, cpu_seconds)


def _children_cpu() -> float:
    # CPU time says how heavy a script is even when the shared machine stretches wall time.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _numbers_match(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    if x != x or y != y:  # nan only matches nan, and that was the a == b case
        return False
    decimals = max(_decimals(a), _decimals(b))
    if decimals == 0 and "e" not in a.lower() and "e" not in b.lower():
        return x == y  # integers (counts, shapes, indices) must be exact
    last_digit = 10.0 ** (-decimals)
    return abs(x - y) <= max(RTOL * max(abs(x), abs(y)), 1.0000001 * last_digit)


def _decimals(token: str) -> int:
    mantissa = token.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def lines_match(expected: str, actual: str) -> bool:
    """Same text around the numbers, and each number within tolerance of its counterpart."""
    exp_nums, act_nums = _NUMBER.findall(expected), _NUMBER.findall(actual)
    if len(exp_nums) != len(act_nums):
        return False
    if _NUMBER.sub("#", expected).rstrip() != _NUMBER.sub("#", actual).rstrip():
        return False
    return all(_numbers_match(a, b) for a, b in zip(exp_nums, act_nums))


def first_difference(expected: str, actual: str) -> tuple[int, str, str] | None:
    """(1-based line number, expected line, actual line) of the first mismatch, or None."""
    exp_lines, act_lines = expected.splitlines(), actual.splitlines()
    for i in range(max(len(exp_lines), len(act_lines))):
        e = exp_lines[i] if i < len(exp_lines) else "<end of output>"
        a = act_lines[i] if i < len(act_lines) else "<end of output>"
        if i >= len(exp_lines) or i >= len(act_lines) or not lines_match(e, a):
            return i + 1, e, a
    return None


def compare(expected: Outcome, actual: Outcome) -> tuple[bool, str]:
    """(passed, why not): the exception first (it explains a short output), then stdout."""
    if (expected.returncode == 0) != (actual.returncode == 0) or expected.exception != actual.exception:
        if actual.returncode != 0:
            diff = first_difference(expected.stdout, actual.stdout)
            total = len(expected.stdout.splitlines())
            matched = diff[0] - 1 if diff else total
            return False, f"raised after {matched} of {total} lines: {actual.stderr_tail or actual.exception}"
        return False, f"exit {actual.returncode}, PyTorch raised {expected.exception}"
    diff = first_difference(expected.stdout, actual.stdout)
    if diff:
        line, e, a = diff
        return False, f"line {line}: expected {e!r}, got {a!r}"
    return True, ""


def load_expected(name: str, status: dict) -> Outcome | None:
    path = EXPECTED / f"{name}.txt"
    if not path.exists() or name not in status:
        return None
    info = status[name]
    return Outcome(path.read_text(), info["returncode"], info["exception"], info["seconds"])


def regenerate(scripts: list[Path]) -> None:
    try:
        import torch  # noqa: F401  (only to fail early with a clear message)
    except ImportError:
        sys.exit("--regen needs PyTorch installed")
    EXPECTED.mkdir(parents=True, exist_ok=True)
    status = json.loads(STATUS_FILE.read_text()) if STATUS_FILE.exists() else {}
    for script in scripts:
        outcome = run_script(script, use_tapegrad=False)
        name = script.stem
        (EXPECTED / f"{name}.txt").write_text(outcome.stdout)
        status[name] = {"returncode": outcome.returncode, "exception": outcome.exception,
                        "seconds": round(outcome.seconds, 2), "cpu_seconds": round(outcome.cpu_seconds, 2)}
        # Written after every script, so an interrupted regeneration keeps what it finished.
        STATUS_FILE.write_text(json.dumps(dict(sorted(status.items())), indent=1) + "\n")
        flag = "" if outcome.returncode == 0 else f"  (exit {outcome.returncode}: {outcome.stderr_tail})"
        print(f"{name:<40} {outcome.seconds:6.1f} s ({outcome.cpu_seconds:.1f} s CPU) under PyTorch{flag}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[],
                        help="run only scripts whose name contains this (repeatable)")
    parser.add_argument("--verbose", action="store_true", help="show outputs around the first difference")
    parser.add_argument("--regen", action="store_true", help="rerun under PyTorch and rewrite expected/")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every script passes")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per script run")
    parser.add_argument("--check-seeds", type=int, nargs="?", const=2, default=0, metavar="K",
                        help="instead of tapegrad, run PyTorch K times with every seed shifted, to "
                             "check the corpus prints nothing that depends on the random stream")
    args = parser.parse_args(argv)

    scripts = corpus_scripts()
    if args.only:
        scripts = [s for s in scripts if any(o in s.stem for o in args.only)]
    if not scripts:
        print("no script matches", args.only)
        return 1 if args.strict else 0
    if args.regen:
        regenerate(scripts)

    status = json.loads(STATUS_FILE.read_text()) if STATUS_FILE.exists() else {}
    if args.check_seeds:
        return check_seeds(scripts, status, args.check_seeds, args.timeout)
    passed = 0
    print(f"{'script':<40} {'result':<6} {'torch s':>7} {'tg s':>6}  first difference / exception")
    for script in scripts:
        expected = load_expected(script.stem, status)
        if expected is None:
            print(f"{script.stem:<40} {'SKIP':<6} no cached PyTorch output (run with --regen)")
            continue
        actual = run_script(script, use_tapegrad=True, timeout=args.timeout)
        ok, why = compare(expected, actual)
        passed += ok
        print(f"{script.stem:<40} {'pass' if ok else 'FAIL':<6} {expected.seconds:7.1f} {actual.seconds:6.1f}  {why}")
        if args.verbose and not ok:
            _show_context(expected, actual)
    print(f"\n{passed} of {len(scripts)} pass")
    return 1 if args.strict and passed != len(scripts) else 0


def check_seeds(scripts: list[Path], status: dict, runs: int, timeout: float) -> int:
    """Rerun PyTorch with shifted seeds; any difference from the cache is a flaw of the script."""
    stable = 0
    for script in scripts:
        expected = load_expected(script.stem, status)
        if expected is None:
            print(f"{script.stem:<40} SKIP   no cached PyTorch output (run with --regen)")
            continue
        problems = []
        for offset in range(1, runs + 1):
            ok, why = compare(expected, run_script(script, use_tapegrad=False, timeout=timeout, seed_offset=offset))
            if not ok:
                problems.append(f"seed+{offset}: {why}")
        stable += not problems
        print(f"{script.stem:<40} {'stable' if not problems else 'DEPENDS ON SEED':<15} {'; '.join(problems)}")
    print(f"\n{stable} of {len(scripts)} scripts print the same under {runs} shifted seeds")
    return 0


def _show_context(expected: Outcome, actual: Outcome, around: int = 3) -> None:
    diff = first_difference(expected.stdout, actual.stdout)
    line = diff[0] if diff else len(expected.stdout.splitlines()) + 1
    lo = max(0, line - 1 - around)
    for label, text in (("PyTorch", expected.stdout), ("tapegrad", actual.stdout)):
        print(f"    --- {label} (lines {lo + 1}..{line + around}) ---")
        for i, text_line in enumerate(text.splitlines()[lo:line + around], start=lo + 1):
            print(f"    {'>' if i == line else ' '}{i:4d} | {text_line}")
    if actual.stderr_tail:
        print(f"    --- tapegrad stderr: {actual.stderr_tail}")


if __name__ == "__main__":
    sys.exit(main())
