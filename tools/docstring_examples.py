"""Run PyTorch's own docstring examples under PyTorch and under tapegrad, and compare them.

    python tools/docstring_examples.py                      # harvest, run both, print the counts
    python tools/docstring_examples.py --only nn.functional # examples whose name contains this
    python tools/docstring_examples.py --show 30            # also list the first 30 differences
    python tools/docstring_examples.py --category value     # ... of one category only
    python tools/docstring_examples.py --json out.json      # write every difference to a file

Run it from the repo root with the venv active and PyTorch installed: PyTorch is the oracle.
It is a measuring instrument, not a test (pytest does not collect tools/).

How it works.  The parent process imports the installed PyTorch and harvests every docstring
with `>>>` lines from the namespaces in ROOTS (module-level functions and classes, and the
methods of those classes), splitting each into statements with doctest's parser.  Examples
that need what this machine cannot give (CUDA, distributed, network, files) or that PyTorch
marks as skipped (`xdoctest: +SKIP`, `+REQUIRES`) are left out.  Each remaining example then
runs in a fresh namespace (`torch`, `nn`, `F`, `np` bound as in PyTorch's docs) in worker
subprocesses: twice under PyTorch (seeded with two different seeds, the second run shifting the
seeds the examples set themselves too, with tools/corpus_reseed) and once under tapegrad
(through tools/corpus_hook, which maps `import torch` to tapegrad), with torch, numpy and
random seeded before each example.

A statement's outcome is what it printed plus the repr of its value (as the interactive prompt
shows it), or the type of the exception it raised; after the last statement, the repr of every
tensor the example left in its namespace, and of its .grad, is compared the same way.  Where
PyTorch's two seeds agree and neither the statement nor one before it in the example drew from
the default generator, tapegrad must print the same text, numbers within the corpus tolerance
(tools/run_corpus.py's lines_match).  Otherwise the statement depends on the random stream,
which tapegrad draws differently: only the structure is compared (types, shapes, dtypes of the
value; the printed text with its numbers and booleans blanked).
"""
from __future__ import annotations

import argparse
import collections
import doctest
import importlib
import inspect
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from run_corpus import HOOK_DIR, RESEED_DIR, lines_match  # noqa: E402

# The namespaces whose docstrings are harvested; classes found in them contribute their methods.
ROOTS = (
    "torch", "torch.nn", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
    "torch.distributions", "torch.optim", "torch.optim.lr_scheduler", "torch.autograd",
    "torch.autograd.functional", "torch.autograd.forward_ad", "torch.func", "torch.utils.data",
    "torch.nn.init", "torch.nn.utils", "torch.nn.utils.rnn", "torch.nn.utils.parametrize",
    "torch.nn.utils.parametrizations",
)
# An example mentioning one of these needs hardware, processes, the network or files.
_UNAVAILABLE = re.compile(
    r"cuda|\bmps\b|xpu|distributed|\bdist\.|rpc|https?://|\bopen\(|\.save\(|torch\.load|download"
    r"|\.pt\b|\.pth\b|tmp|file|torch\.compile|torch\.jit|torch\.export|\bonnx|from_file|pin_memory"
    r"|num_workers|DataLoader|tensorboard|profiler|input\(|getpass",
    re.IGNORECASE)
# PyTorch's marks for an example that needs what this machine lacks (CUDA, the DataLoader's
# worker processes, matplotlib).  Its plain `+SKIP` marks are mostly about undefined names or
# output that varies between runs, which both libraries see alike, so those examples run.
_SKIP_MARK = re.compile(
    r"xdoctest:\s*\+REQUIRES\((?!env:TORCH_DOC\w*(AUTOGRAD|LAPACK|ANOMALY)|POSIX)")

EXAMPLE_TIMEOUT_S = 20
SEEDS = (0, 1)  # PyTorch runs with both; tapegrad with the first


# ---------------------------------------------------------------------------------------------
# Harvest (parent process, under PyTorch)

def _members(module):
    """(qualified name, object) of a module's public functions and classes and the classes'
    own methods, properties and attributes."""
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(module, name)
        except Exception:
            continue
        if inspect.ismodule(obj):
            continue
        qual = f"{module.__name__}.{name}"
        yield qual, obj
        if inspect.isclass(obj):
            for attr, value in sorted(vars(obj).items()):
                if not attr.startswith("_") or attr in ("__init__", "__call__"):
                    yield f"{qual}.{attr}", value


def harvest() -> list[dict]:
    """Every runnable example: {"name", "statements": [source, ...]}; a docstring reached under
    several names (torch.add and torch.Tensor.add share none, torch.nn.Linear and
    torch.nn.modules.linear.Linear share one) is taken once, under its first name."""
    import torch

    parser = doctest.DocTestParser()
    seen: set[str] = set()
    examples, skipped = [], collections.Counter()
    # torch.Tensor before torch: the legacy tensor types (torch.FloatTensor, ...) carry the
    # Tensor methods too, and an example should be named after the class users call it on.
    targets = [("torch.Tensor", torch.Tensor)] + [(r, importlib.import_module(r)) for r in ROOTS]
    for root, module in targets:
        # The Tensor methods live on its compiled base class: dir() reaches them, vars() not.
        members = _members(module) if inspect.ismodule(module) else (
            (f"torch.Tensor.{a}", getattr(module, a, None))
            for a in dir(module) if not a.startswith("_"))
        for qual, obj in members:
            doc = obj if isinstance(obj, str) else getattr(obj, "__doc__", None)
            if not isinstance(doc, str) or ">>>" not in doc or doc in seen:
                continue
            seen.add(doc)
            try:
                parts = parser.get_examples(doc)
            except ValueError:  # a malformed example (bad indentation)
                skipped["unparsable"] += 1
                continue
            statements = [p.source for p in parts]
            text = "".join(statements)
            if not statements:
                continue
            if _SKIP_MARK.search(doc):
                skipped["marked by PyTorch as needing CUDA/workers/matplotlib"] += 1
            elif _UNAVAILABLE.search(text):
                skipped["needs CUDA/distributed/network/files"] += 1
            else:
                examples.append({"name": qual, "statements": statements})
    return examples, skipped


# ---------------------------------------------------------------------------------------------
# Worker (subprocess, under PyTorch or tapegrad)

class _Timeout(BaseException):
    """Raised by the alarm; a BaseException, so an example's `except Exception` cannot eat it."""


def _is_tensor(value, torch) -> bool:
    # tapegrad's sparse tensors are not instances of its Tensor, yet are torch.Tensor by name.
    return isinstance(value, torch.Tensor) or repr(type(value)) == "<class 'torch.Tensor'>"


def _structure(value) -> str:
    """What does not depend on the random stream: types, shapes, dtypes."""
    import torch
    if _is_tensor(value, torch):
        return f"Tensor{tuple(value.shape)}:{value.dtype}:rg={value.requires_grad}"
    if isinstance(value, (tuple, list)):
        inner = ",".join(_structure(v) for v in value)
        return f"{type(value).__name__}[{inner}]"
    if isinstance(value, dict):
        return "dict{" + ",".join(f"{k!r}:{_structure(v)}" for k, v in value.items()) + "}"
    if isinstance(value, type(None)):
        return "None"
    return type(value).__name__


def _blank_addresses(text: str) -> str:
    """An object's default repr shows its address, which no two runs share."""
    return re.sub(r"\bat 0x[0-9a-fA-F]+", "at 0x#", text)


def _blank_numbers(text: str) -> str:
    # Booleans go too (a random mask), and whitespace: a tensor's column width follows its
    # widest number.
    number = r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|\b(?:inf|nan|True|False)\b"
    return "".join(re.sub(number, "#", text).split())


def _reset_global_state(torch, np, random, seed):
    """Undo what an earlier example may have changed, then seed every generator."""
    torch.set_default_dtype(torch.float32)
    torch.set_printoptions(profile="default")
    torch.set_grad_enabled(True)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def run_example(statements: list[str], seed: int) -> list[dict]:
    import random
    import signal

    import numpy as np
    import torch
    import torch.nn
    import torch.nn.functional

    _reset_global_state(torch, np, random, seed)
    namespace = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "np": np,
                 "__name__": "__main__"}
    outcomes = []
    shown = []

    def displayhook(value):
        if value is not None:
            shown.append(value)
            print(repr(value))

    def on_alarm(signum, frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(EXAMPLE_TIMEOUT_S)
    old_out, old_hook = sys.stdout, sys.displayhook
    try:
        for source in statements:
            buffer = io.StringIO()
            shown.clear()
            sys.stdout, sys.displayhook = buffer, displayhook
            error = None
            state = torch.get_rng_state()
            try:
                exec(compile(source, "<example>", "single"), namespace)
            except _Timeout:
                error = "Timeout"
            except BaseException as exc:  # SystemExit and KeyboardInterrupt from examples, too
                error = type(exc).__name__
                buffer.write(f"{error}: {str(exc)[:300]}")
            finally:
                sys.stdout, sys.displayhook = old_out, old_hook
            outcomes.append(_outcome(buffer.getvalue(), error, shown))
            # A statement that drew from the default generator depends on the random stream,
            # even where two seeds happen to give the same small result (randperm(4)).
            try:
                outcomes[-1]["drew"] = not torch.equal(state, torch.get_rng_state())
            except Exception:  # an example that replaced the generator's state with junk
                outcomes[-1]["drew"] = True
            if error == "Timeout":
                break
        else:
            outcomes.append(_final_tensors(namespace, torch))
    finally:
        signal.alarm(0)
        sys.stdout, sys.displayhook = old_out, old_hook
    return outcomes


def _outcome(text: str, error: str | None, shown: list) -> dict:
    text = _blank_addresses(text)
    try:
        structure = ";".join(_structure(v) for v in shown)
    except Exception as exc:
        structure = f"<{type(exc).__name__}>"
    # Cut after blanking: the same tensor printed with other numbers wraps its lines elsewhere.
    return {"text": text[:20000], "error": error,
            "structure": (structure + "|" + _blank_numbers(text))[:20000]}


def _final_tensors(namespace: dict, torch) -> dict:
    """The example's tensors and their grads when it ends: most examples assign and call
    backward() without displaying anything, and a wrong value or gradient there would
    otherwise pass unseen."""
    lines, shown = [], []
    for name, value in sorted(namespace.items()):
        if _is_tensor(value, torch) and not name.startswith("_"):
            try:
                lines.append(f"{name} = {value!r}")
                shown.append(value)
                if value.grad is not None:
                    lines.append(f"{name}.grad = {value.grad!r}")
                    shown.append(value.grad)
            except Exception as exc:  # a tensor that cannot print is a difference, not a crash
                lines.append(f"{name}: {type(exc).__name__}")
    return _outcome("\n".join(lines), None, shown)


def worker_main(examples_file: str, results_file: str, start: int, seed: int) -> None:
    import warnings
    warnings.simplefilter("ignore")
    examples = json.loads(Path(examples_file).read_text())
    with open(results_file, "a") as out:
        for index in range(start, len(examples)):
            outcomes = run_example(examples[index]["statements"], seed)
            out.write(json.dumps({"index": index, "outcomes": outcomes}) + "\n")
            out.flush()


def run_all(examples: list[dict], use_tapegrad: bool, seed: int, workdir: Path) -> list[list[dict]]:
    """Outcomes of every example; a worker that dies (a crash, a hang in C) loses only the
    example it was running, recorded as a Crash, and a new worker goes on from the next one."""
    examples_file = workdir / "examples.json"
    examples_file.write_text(json.dumps(examples))
    results_file = workdir / f"results-{'tapegrad' if use_tapegrad else 'torch'}-{seed}.jsonl"
    results_file.unlink(missing_ok=True)
    env = dict(os.environ)
    paths = [str(ROOT)]
    if use_tapegrad:
        paths.insert(0, str(HOOK_DIR))
    elif seed != SEEDS[0]:
        # An example that seeds itself (torch.manual_seed(283)) must see another stream too.
        paths.insert(0, str(RESEED_DIR))
        env["CORPUS_SEED_OFFSET"] = str(seed - SEEDS[0])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["OMP_NUM_THREADS"] = "1"
    results: dict[int, list[dict]] = {}
    start = 0
    while start < len(examples):
        command = [sys.executable, __file__, "--worker", str(examples_file), str(results_file),
                   str(start), str(seed)]
        process = subprocess.Popen(command, env=env, cwd=tempfile.gettempdir(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        last_size, last_change = -1, time.monotonic()
        while process.poll() is None:
            time.sleep(0.2)
            size = results_file.stat().st_size if results_file.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > EXAMPLE_TIMEOUT_S + 30:
                process.kill()
                process.wait()
        process.stderr.close()
        if results_file.exists():
            for line in results_file.read_text().splitlines():
                record = json.loads(line)
                results[record["index"]] = record["outcomes"]
        done = max(results, default=-1) + 1
        if done < len(examples):  # the worker died while running example `done`
            results[done] = [{"text": "", "error": "Crash", "structure": ""}]
            start = done + 1
        else:
            start = done
    return [results[i] for i in range(len(examples))]


# ---------------------------------------------------------------------------------------------
# Comparison

_MISSING = re.compile(r"has no attribute|No module named|cannot import name|is not defined")


def classify(expected: dict, actual: dict, random_dependent: bool) -> str:
    """'same' or the category of the difference."""
    if expected["error"] or actual["error"]:
        if expected["error"] == actual["error"]:
            return "same"
        if actual["error"] in ("Crash", "Timeout"):
            return actual["error"].lower()
        if expected["error"] is None:
            if _MISSING.search(actual["text"]):
                return "missing name"
            return "raises where PyTorch does not"
        if actual["error"] is None:
            return "no exception where PyTorch raises"
        return "exception type"
    if random_dependent:
        return "same" if expected["structure"] == actual["structure"] else "structure (random)"
    if all(lines_match(e, a) for e, a in _paired_lines(expected["text"], actual["text"])):
        return "same"
    if "dtype=" in expected["text"] + actual["text"] and \
            _without_dtype(expected["text"]) == _without_dtype(actual["text"]):
        return "dtype"
    if _blank_numbers(expected["text"]) == _blank_numbers(actual["text"]):
        return "value"
    return "repr"


def _paired_lines(a: str, b: str):
    la, lb = a.rstrip().splitlines(), b.rstrip().splitlines()
    if len(la) != len(lb):
        return [(a, b + "\0")]  # never matches
    return zip(la, lb)


def _without_dtype(text: str) -> str:
    return " ".join(re.sub(r",?\s*dtype=torch\.\w+", "", text).split())


FINAL = "# the example's tensors and grads when it ends"


def compare(examples, torch_runs, tapegrad_run):
    """Per statement: (example name, statement, category, PyTorch's text, tapegrad's text,
    PyTorch's structure, tapegrad's structure).
    A statement after an example's first difference is 'after a difference' (it inherits the
    state), and one after a statement that depends on the random stream is compared by
    structure: its values derive from numbers tapegrad draws differently."""
    rows = []
    for example, reference, other, actual in zip(examples, *torch_runs, tapegrad_run):
        diverged = random_dependent = False
        for i, source in enumerate(example["statements"] + [FINAL]):
            if i >= len(reference):
                break
            if i >= len(actual):
                rows.append((example["name"], source, "after a difference", "", "", "", ""))
                continue
            exp, act = reference[i], actual[i]
            random_dependent = random_dependent or i >= len(other) or exp.get("drew") \
                or other[i]["text"] != exp["text"] or other[i]["error"] != exp["error"]
            category = classify(exp, act, random_dependent)
            if category != "same" and diverged:
                category = "after a difference"
            diverged = diverged or category != "same"
            rows.append((example["name"], source, category, exp["text"], act["text"],
                         exp["structure"], act["structure"]))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", action="append", default=[],
                        help="examples whose name contains this")
    parser.add_argument("--show", type=int, default=0, help="list this many differences")
    parser.add_argument("--category", help="list differences of this category only")
    parser.add_argument("--json", help="write every difference to this file")
    args = parser.parse_args(argv)

    examples, skipped = harvest()
    if args.only:
        examples = [e for e in examples if any(o in e["name"] for o in args.only)]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        torch_runs = [run_all(examples, False, seed, workdir) for seed in SEEDS]
        tapegrad_run = run_all(examples, True, SEEDS[0], workdir)
    rows = compare(examples, torch_runs, tapegrad_run)

    counts = collections.Counter(r[2] for r in rows)
    both_raise = sum(1 for ex, run in zip(examples, torch_runs[0]) for o in run if o["error"])
    print(f"examples run: {len(examples)}; skipped: " +
          ", ".join(f"{n} {why}" for why, n in skipped.items()))
    print(f"statements: {len(rows)} (PyTorch itself raised in {both_raise})")
    for category, n in counts.most_common():
        print(f"  {category:<40} {n}")
    examples_differing = len({r[0] for r in rows if r[2] not in ("same",)})
    print(f"examples with a difference: {examples_differing} of {len(examples)}")

    differences = [r for r in rows if r[2] not in ("same", "after a difference")
                   and (not args.category or r[2] == args.category)]
    for name, source, category, exp, act, exp_structure, act_structure in differences[:args.show]:
        print(f"\n== {name} [{category}]\n>>> {source.rstrip()}\n-- torch:\n{exp.rstrip()[:600]}"
              f"\n-- tapegrad:\n{act.rstrip()[:600]}")
        if category.startswith("structure"):
            print(f"-- structures:\n{exp_structure[:300]}\n{act_structure[:300]}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            [dict(zip(("name", "source", "category", "torch", "tapegrad", "torch structure",
                      "tapegrad structure"), r)) for r in differences],
            indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(main())
