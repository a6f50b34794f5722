"""Adjudication of tools/fuzz.py findings against float64 finite differences.

When tapegrad and PyTorch disagree on a value or a gradient, neither is the truth by default:
PyTorch is the specification of behaviour, but at a NaN, an inf, a kink or a value written in
place after the forward, either side can be the one that is off.  This module decides which side
the mathematics supports, so a run's report separates tapegrad's possible silent wrong results
from PyTorch's quirks without a person reproducing each seed.

    verdict = adjudicate(prog, findings, t_run, g_run)   # {"verdict": ..., "evidence": ...}

Verdicts (ordered by how much they need a person, most first; `ALARM` ones are tapegrad off):
  - torch-matches-FD / neither: at an entry where the derivative is well defined, tapegrad's
    gradient is away from the finite difference (PyTorch's is near it, or is away too);
  - undecided: no reference could be computed (a value that differs in float64 too, a gradient
    through hooks only, a retained .grad of a tensor written later, the FD run failed);
  - degenerate: every differing entry is at a NaN/inf input, a non-finite loss or a kink
    (the one-sided differences disagree), where a derivative does not exist;
  - tapegrad-matches-FD: tapegrad is near the finite difference and PyTorch is not;
  - rounding: both are near the reference (float32 rounding or FD noise decided the finding);
  - values use the program re-run in float64 as the reference instead of FD (the labels then
    end in `-f64`).

The finite differences respect autograd's semantics, not plain calculus: the program is re-run in
float64 by PyTorch with one leaf entry moved by +-h, and after every step a tensor that does not
require grad in the base run (detach, no_grad, comparisons, integer results) is rebound to its
base-run value (a constant to autograd), and a write autograd did not record (an in-place op
under no_grad, or through a detached alias) is replayed as the constant change it made in the
base run.  Second derivatives are finite differences of the first-order gradient function.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

ALARM = ("torch-matches-FD", "neither", "torch-matches-f64", "neither-f64")
ORDER = ALARM + ("undecided", "degenerate", "tapegrad-matches-FD", "tapegrad-matches-f64",
                 "rounding", "signed-zero")
MAX_ENTRIES = 8          # differing entries checked per finding (largest differences first)


# -- the program in float64 ------------------------------------------------------------------------

def to_float64(prog):
    """The same program with every float32 (complex64) leaf and cast in float64 (complex128):
    float32 literals are exact in float64, so the program runs at the same point."""
    from fuzz import Step
    steps = []
    for s in prog.steps:
        code = (s.code.replace("dtype='float32'", "dtype='float64'")
                .replace(".float()", ".double()").replace("torch.float32", "torch.float64")
                .replace("dtype='complex64'", "dtype='complex128'")
                .replace("torch.complex64", "torch.complex128")
                # (a bfloat16 leaf: its rounded values, widened)
                .replace(".to(torch.bfloat16)", ".to(torch.bfloat16).double()"))
        steps.append(Step(code, s.out, s.nograd, s.stmt, s.ctx))
    return prog.derive(steps=steps)


def without_hooks(prog):
    return prog.derive(steps=[s for s in prog.steps if ".register_hook(" not in s.code])


def run_both(prog):
    """(torch run, tapegrad run) of prog, as fuzz.check_program runs them."""
    import torch

    import fuzz
    import tapegrad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_run = fuzz.execute(torch, prog)
        g_run = fuzz.execute(tapegrad, prog, live=t_run.live)
        if (t_run.tail[0] == "err" and "modified by an inplace operation" in t_run.tail[2]
                and g_run.tail[0] == "ok"):
            with torch.autograd.graph.allow_mutation_on_saved_tensors():
                t_run = fuzz.execute(torch, prog)
    return t_run, g_run


# -- autograd-semantics finite differences ---------------------------------------------------------

class FDProgram:
    """Evaluates the float64 program's loss (or, for second derivatives, S = sum(W2_i * G_i))
    with PyTorch at moved leaf values, holding autograd's constants at their base-run values."""

    def __init__(self, prog64, live, g2_set=None):
        import torch
        import fuzz
        self.torch, self.fuzz = torch, fuzz
        self.prog, self.live = prog64, live
        self.leaves = prog64.grad_leaves()
        self.g2_set = g2_set
        self.base, self.masks, self.masking = None, None, False
        self.base = self._run(None, record=True)
        self.masks = self.base["masks"]

    def _snap_ns(self, ns):
        out = {}
        for k, v in ns.items():
            if re.fullmatch(r"v\d+", k) and isinstance(v, self.torch.Tensor):
                try:
                    out[k] = (v.detach().clone(), v.requires_grad, v.grad_fn,
                              v.is_floating_point())
                except Exception:  # noqa: BLE001 - an invalidated view
                    pass
        return out

    def _run(self, move, record=False):
        """move: None, ("leaf", name, flat index, delta) or ("var", name, flat index, delta)
        (a retained tensor moved right after the step defining it).  Returns the loss (or S)
        as a float, or raises."""
        torch, fuzz = self.torch, self.fuzz
        ns = fuzz.namespace(torch)
        trace = []
        for i, step in enumerate(self.prog.steps):
            before = self._snap_ns(ns) if not record and self.base else None
            fuzz.run_step(torch, ns, step)
            if move and step.out == move[1] and step.out in ns:
                t = ns[step.out]
                new = t.detach().resolve_conj().clone()
                # (a complex value moves one part: flat index i of its (real, imag) pairs, the
                # order fuzz.snap flattens it in)
                flat = torch.view_as_real(new) if new.is_complex() else new
                flat.view(-1)[move[2]] += move[3]
                if move[0] == "leaf" and isinstance(t, torch.nn.Parameter):
                    ns[step.out] = torch.nn.Parameter(new)
                elif move[0] == "leaf":
                    ns[step.out] = new.requires_grad_(t.requires_grad)
                else:
                    ns[step.out] = t + (new - t.detach())
            if record:
                trace.append(self._snap_ns(ns))
                continue
            base_after = self.base["trace"][i]
            base_before = self.base["trace"][i - 1] if i else {}
            for k, (val, rg, gfn, isf) in base_after.items():
                if k not in ns:
                    continue
                if not rg:
                    # a constant to autograd: its base-run value
                    ns[k] = val.clone()
                    continue
                if k == (move[1] if move else None) and step.out == k:
                    continue
                prev = base_before.get(k)
                if prev is None or prev[2] is not gfn or k == step.out:
                    continue
                changed = not torch.equal(torch.nan_to_num(prev[0], 1.5, 2.5, -2.5),
                                          torch.nan_to_num(val, 1.5, 2.5, -2.5))
                if changed and k in before:
                    # a write autograd did not record: the constant change it made in the base
                    with torch.no_grad():
                        ns[k].copy_(before[k][0] + (val - prev[0]))
        if record:
            return {"trace": trace, "masks": self._base_masks(ns)}
        return self._objective(ns, self.masking)

    def _objective(self, ns, masked=False):
        """The loss (or S).  `masked`: only the terms (elements) finite in the base run, for
        a loss made non-finite by elements the differing entry may not reach."""
        torch = self.torch
        loss = None
        masks = self.masks if masked else None
        for v in self.prog.loss_vars:
            if v in self.live and v in ns:
                t = ns[v]
                w = torch.tensor(self.prog.weights(v, tuple(t.shape), str(t.dtype).split(".")[-1]))
                term = _real(t * w)
                if masks is not None and v in masks:
                    term = torch.where(masks[v], term, torch.zeros_like(term))
                term = term.sum()
                loss = term if loss is None else loss + term
        if loss is None:
            raise RuntimeError("no loss term")
        if self.g2_set is None:
            return float(loss.detach())
        leaves = [ns[v] for v in self.leaves]
        G = torch.autograd.grad(loss, leaves, allow_unused=True)
        S = 0.0
        for i, g in enumerate(G):
            if g is None or i not in self.g2_set:
                continue
            w = torch.tensor(self.prog.weights(f"v{1000 + i}", tuple(leaves[i].shape),
                                               str(leaves[i].dtype).split(".")[-1]))
            term = _real(g * w)
            if masks is not None and ("G", i) in masks:
                term = torch.where(masks[("G", i)], term, torch.zeros_like(term))
            S += float(term.sum())
        return S

    def _base_masks(self, ns):
        """Which loss elements (and, for S, gradient elements) are finite in the base run."""
        torch = self.torch
        masks = {}
        for v in self.prog.loss_vars:
            if v in self.live and v in ns and isinstance(ns[v], torch.Tensor):
                masks[v] = torch.isfinite(ns[v].detach())
        if self.g2_set is not None:
            loss = None
            for v in masks:
                w = torch.tensor(self.prog.weights(v, tuple(ns[v].shape),
                                                   str(ns[v].dtype).split(".")[-1]))
                term = _real(ns[v] * w)
                term = torch.where(masks[v], term, torch.zeros_like(term)).sum()
                loss = term if loss is None else loss + term
            leaves = [ns[v] for v in self.leaves]
            G = torch.autograd.grad(loss, leaves, allow_unused=True)
            for i, g in enumerate(G):
                if g is not None:
                    masks[("G", i)] = torch.isfinite(g.detach())
        return masks

    def derivative(self, kind, name, index, x0):
        """Central FD at steps h and 4h, and the one-sided ones at h: (fd, noise, why, masked).
        `why` says why there is no derivative (None when there is one); `masked` says the
        objective was restricted to its elements finite in the base run."""
        h = 1e-6 * max(1.0, abs(x0))
        f = {}
        for k in (-4, -1, 0, 1, 4):
            f[k] = self._run((kind, name, index, k * h) if k else None)
        masked = False
        if not all(np.isfinite(list(f.values()))):
            self.masking = True
            try:
                f = {k: self._run((kind, name, index, k * h) if k else None) for k in f}
            finally:
                self.masking = False
            masked = True
            if not all(np.isfinite(list(f.values()))):
                return float("nan"), 0.0, "non-finite objective", masked
        c1 = (f[1] - f[-1]) / (2 * h)
        c4 = (f[4] - f[-4]) / (8 * h)
        fwd, bwd = (f[1] - f[0]) / h, (f[0] - f[-1]) / h
        noise = abs(c1 - c4) + 1e-13 * max(1.0, abs(f[0])) / h
        kink = abs(fwd - bwd) > 1e-3 * (1 + abs(c1)) + 4 * noise
        if kink:
            return c1, noise, "kink (one-sided %.6g / %.6g)" % (bwd, fwd), masked
        if abs(c1 - c4) > 1e-3 * (1 + abs(c1)):
            # the difference quotient grows as h shrinks: a jump at the point (|x| at 0 seen
            # by a second derivative), not a derivative
            return c1, noise, "discontinuous (FD %.6g at h, %.6g at 4h)" % (c1, c4), masked
        return c1, noise, None, masked


def _real(t):
    """A loss term's values: the real part of a complex one (as Program.term writes it)."""
    return t.real if t.is_complex() else t


# -- which entries differ ----------------------------------------------------------------------------

def _flat_grads(run):
    out = {}
    for k, s in run.grads.items():
        if s[0] == "seq":
            for i, e in enumerate(s[1]):
                out[f"{k}[{i}]"] = e
        else:
            out[k] = s
    return out


def _tol(dtype):
    import fuzz
    return (1e-2, 1e-3) if dtype in fuzz.SINGLE else (1e-5, 1e-7)


def _differing(ta, ga, dtype, n=MAX_ENTRIES, grad=False):
    """Flat indices where the two arrays differ by the fuzzer's own tolerance (NaN against a
    number first, then by size)."""
    import fuzz
    ta = np.asarray(ta, np.float64).reshape(-1)
    ga = np.asarray(ga, np.float64).reshape(-1)
    rtol, atol = fuzz.tolerances(dtype)
    if grad:
        rtol, atol = rtol * 5, atol * 5
    fin = np.isfinite(ta)
    scale = max(1.0, float(np.max(np.abs(ta[fin])))) if fin.any() else 1.0
    with np.errstate(invalid="ignore"):
        d = np.abs(ta - ga)
        nanmis = np.isnan(ta) != np.isnan(ga)
        infmis = (np.isinf(ta) | np.isinf(ga)) & ~(ta == ga) & ~np.isnan(ta) & ~np.isnan(ga)
        bad = nanmis | infmis | (d > rtol * np.abs(ta) + atol * scale)
    idx = np.flatnonzero(bad)
    key = np.where(nanmis[idx] | infmis[idx], np.inf, np.nan_to_num(d[idx]))
    return [int(i) for i in idx[np.argsort(-key, kind="stable")][:n]], scale


def _near(x, ref, dtype, noise, scale):
    if not np.isfinite(x):
        return False
    rtol, atol = _tol(dtype)
    return abs(x - ref) <= rtol * abs(ref) + atol * scale + 4 * noise


# -- verdicts -------------------------------------------------------------------------------------

def adjudicate(prog, findings, t_run, g_run):
    """A verdict for a seed's value/grad findings (None when it has none)."""
    cats = {c for c, _ in findings}
    if cats == {"compile"}:
        # compiled against eager tapegrad, bit for bit: a few ulp of summation order, or NaN
        # payloads, are rounding; anything else needs a person
        m = re.search(r"\(max ([\d.e+-]+|inf|nan) ulp, NaN mask (\w+)\)", findings[0][1])
        if m and m.group(2) == "same" and float(m.group(1)) <= 16:
            return {"verdict": "rounding", "evidence": f"compiled vs eager: {m.group(0)}"}
        return None
    if not cats & {"value", "grad", "signed-zero"}:
        return None
    if not cats & {"value", "grad"}:
        return {"verdict": "signed-zero", "evidence": "sign of a zero; not adjudicated"}
    try:
        if "value" in cats:
            return _values(prog, findings, t_run, g_run)
        return _grads(prog, t_run, g_run)
    except Exception as e:  # noqa: BLE001 - the adjudicator must not lose the finding
        return {"verdict": "undecided", "evidence": f"adjudication failed: {type(e).__name__}: "
                                                    f"{str(e)[:160]}"}


def _leaf_values_finite(prog, run):
    for v in prog.leaves():
        s = run.final.get(v)
        if s and s[0] == "t" and s[1].dtype.kind == "f" and not np.all(np.isfinite(s[1])):
            return False
    return True


def _values(prog, findings, t_run, g_run):
    """A value differs: the reference is the program re-run in float64 (when both libraries
    agree there); a float64 value has no independent reference."""
    label = next(m for c, m in findings if c == "value")
    m = re.match(r"step (\d+) |final (v\d+)", label)
    if not m:
        return {"verdict": "undecided", "evidence": "value finding not located"}

    def pick(run):
        s = run.steps[int(m.group(1))] if m.group(1) else ("ok", run.final.get(m.group(2)))
        s = s[1] if s and s[0] == "ok" else None
        while s is not None and s[0] == "seq":
            s = next((e for e in s[1] if e[0] == "t"), None)
        return s if s is not None and s[0] == "t" else None

    ts, gs = pick(t_run), pick(g_run)
    if ts is None or gs is None or ts[3] != gs[3]:
        return {"verdict": "undecided", "evidence": "value is not a tensor on both sides"}
    dtype = ts[2]
    finite = _leaf_values_finite(prog, t_run)
    idx, scale = _differing(ts[1], gs[1], dtype)
    nonfinite_entries = any(not (np.isfinite(ts[1].reshape(-1)[i]) and
                                 np.isfinite(gs[1].reshape(-1)[i])) for i in idx)
    prog64 = to_float64(prog)
    widened = any(a.code != b.code for a, b in zip(prog.steps, prog64.steps))
    if widened:
        dtype = "float32"           # (a float64 value computed from float32 ones: their rounding)
    else:
        if not finite or nonfinite_entries:
            return {"verdict": "degenerate", "evidence": "float64 value differs at non-finite "
                                                         "inputs/entries; no reference"}
        return {"verdict": "undecided", "evidence": "a float64 value differs; no reference"}
    t64, g64 = run_both(prog64)
    t6, g6 = pick(t64), pick(g64)
    if t6 is None or g6 is None or t6[3] != ts[3]:
        return {"verdict": "undecided", "evidence": "float64 re-run has no such value"}
    ref, other = t6[1].reshape(-1), g6[1].reshape(-1)
    ev = []
    judged, agree = [], 0
    import fuzz
    vrtol, vatol = fuzz.tolerances(dtype)
    for i in idx:
        r, o = float(ref[i]), float(other[i])
        if not (r == o or abs(r - o) <= 1e-9 * max(1.0, abs(r)) or (np.isnan(r) and np.isnan(o))):
            ev.append(f"[{i}] f64 torch {r:.10g} vs f64 tapegrad {o:.10g}")
            continue
        agree += 1
        tv, gv = float(ts[1].reshape(-1)[i]), float(gs[1].reshape(-1)[i])
        same = (lambda x: (np.isnan(x) and np.isnan(r)) or x == r
                or (np.isfinite(r) and np.isfinite(x)
                    and abs(x - r) <= vrtol * abs(r) + vatol * scale))
        g_ok, t_ok = same(gv), same(tv)
        judged.append((g_ok, t_ok))
        ev.append(f"[{i}] f64 {r:.10g}: torch {tv:.8g}{'' if t_ok else ' (off)'}, tapegrad "
                  f"{gv:.8g}{'' if g_ok else ' (off)'}")
    evidence = f"{label[:60]}: " + "; ".join(ev)
    if not agree:
        verdict = "degenerate" if (not finite or nonfinite_entries) else "undecided"
        return {"verdict": verdict, "evidence": "differs in float64 too; " + evidence}
    g_off = [t_ok for g_ok, t_ok in judged if not g_ok]
    if g_off:
        verdict = "torch-matches-f64" if all(g_off) else "neither-f64"
    else:
        verdict = "tapegrad-matches-f64" if not all(t for _, t in judged) else "rounding"
    return {"verdict": verdict, "evidence": evidence}


def _grads(prog, t_run, g_run, hooks_dropped=False):
    import fuzz
    notes = []
    if any(".register_hook(" in s.code for s in prog.steps) and not hooks_dropped:
        # hooks change gradients on purpose: adjudicate the program without them, when the
        # difference remains there
        bare = without_hooks(prog)
        found = [c for c, _ in fuzz.compare_runs(bare, *run_both(bare))]
        if "grad" not in found:
            return {"verdict": "undecided", "evidence": "the gradients differ only with hooks"}
        t_run, g_run = run_both(bare)
        prog, hooks_dropped = bare, True
        notes.append("hooks dropped (difference remains)")
    prog64 = to_float64(prog)
    t64, g64 = run_both(prog64)
    tg, gg = _flat_grads(t_run), _flat_grads(g_run)
    tg6, gg6 = _flat_grads(t64), _flat_grads(g64)
    leaves = prog.grad_leaves()
    entries = []          # (label, flat index, dtype, torch value, tapegrad value, scale)
    for label, ts in tg.items():
        gs = gg.get(label)
        if not gs or ts[0] != "t" or gs[0] != "t" or ts[3] != gs[3] or ts[1].dtype.kind != "f":
            continue
        idx, scale = _differing(ts[1], gs[1], ts[2], grad=True)
        for i in idx:
            entries.append((label, i, ts[2], float(ts[1].reshape(-1)[i]),
                            float(gs[1].reshape(-1)[i]), scale))
    if not entries:
        return {"verdict": "undecided", "evidence": "no differing gradient entry located"}
    g2_set = None
    if any(e[0].startswith("G2") for e in entries):
        G = t64.grads.get("G")
        g2_set = {i for i, s in enumerate(G[1]) if s[0] == "t" and s[4]} if G and G[0] == "seq" \
            else set()
    fd_objs = {}
    ev, n_valid, judged, degenerate = [], 0, [], []
    for label, i, dtype, tv, gv, scale in entries[:MAX_ENTRIES]:
        m = re.fullmatch(r"(retained )?(v\d+)\.grad|G(2?)\[(\d+)\]", label)
        if not m:
            continue
        second = bool(m.group(3))
        if m.group(2):
            name = m.group(2)
            kind = "var" if m.group(1) and name not in leaves else "leaf"
        else:
            name, kind = leaves[int(m.group(4))], "leaf"
        if m.group(1) and prog.mode == "grad2":
            # a retained .grad accumulates over the create_graph pass and the second one,
            # through whichever tensors each formula reads: not the derivative of one function
            degenerate.append(f"{label}[{i}]: retained .grad after two passes (no FD)")
            continue
        if kind == "var":
            at = next(j for j, s in enumerate(prog.steps) if s.out == name)
            later = prog.steps[at + 1:]
            if any(s.stmt or "_(" in s.code for s in later if ".retain_grad()" not in s.code
                   and ".register_hook(" not in s.code):
                degenerate.append(f"{label}[{i}]: retained .grad of a tensor written later "
                                  "(no FD)")
                continue
        x0s = t_run.final.get(name)
        x0 = float(x0s[1].reshape(-1)[i]) if x0s and x0s[0] == "t" else float("nan")
        if not np.isfinite(x0):
            degenerate.append(f"{label}[{i}]: input {x0}")
            continue
        key = second
        if key not in fd_objs:
            fd_objs[key] = FDProgram(prog64, t64.live, g2_set if second else None)
        try:
            fd, noise, why, masked = fd_objs[key].derivative(kind, name, i, x0)
        except Exception as e:  # noqa: BLE001 - the FD run raised (a version-counter check)
            degenerate.append(f"{label}[{i}]: FD run failed ({type(e).__name__})")
            continue
        if why or not np.isfinite(fd):
            in_range = ""
            if why and why.startswith("kink"):
                lo_hi = [float(x) for x in re.findall(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|inf|nan)",
                                                      why.split("one-sided")[1])[-2:]]
                lo, hi = min(lo_hi) - 1e-6, max(lo_hi) + 1e-6
                in_range = (", tapegrad inside the one-sided range" if lo <= gv <= hi
                            else ", tapegrad OUTSIDE the one-sided range")
            degenerate.append(f"{label}[{i}]: {why or 'FD ' + str(fd)}: torch {tv:.6g}, "
                              f"tapegrad {gv:.6g}{in_range}")
            continue
        fd_scale = max(scale, 1.0)
        g_ok, t_ok = _near(gv, fd, dtype, noise, fd_scale), _near(tv, fd, dtype, noise, fd_scale)
        if masked and (g_ok or not t_ok or not np.isfinite(gv)):
            # the loss is non-finite; the derivative of its finite elements decides only when
            # PyTorch follows it and tapegrad does not (else both read the non-finite ones)
            degenerate.append(f"{label}[{i}]: non-finite loss; FD of its finite part {fd:.6g}: "
                              f"torch {tv:.6g}, tapegrad {gv:.6g}")
            continue
        g64v = gg6.get(label)
        g64 = float(g64v[1].reshape(-1)[i]) if g64v and g64v[0] == "t" and g64v[1].size > i \
            else float("nan")
        single = dtype in fuzz.SINGLE
        if (not g_ok and single and _near(g64, fd, "float64", noise, fd_scale)
                and abs(gv - fd) <= 4 * abs(tv - fd)):
            # float32 rounding: tapegrad's float64 run is on the FD and its float32 error is of
            # the size of PyTorch's (a cancellation both suffer)
            g_ok = True
            notes.append(f"{label}[{i}]: float32 error of PyTorch's size, float64 exact")
        n_valid += 1
        judged.append((g_ok, t_ok))
        if masked:
            notes.append(f"{label}[{i}]: FD of the loss's finite elements")
        g64s = f", tapegrad-f64 {g64:.8g}" if single else ""
        ev.append(f"{label}[{i}]: FD {fd:.8g} (noise {noise:.1g}): torch {tv:.8g}"
                  f"{'' if t_ok else ' (off)'}, tapegrad {gv:.8g}{'' if g_ok else ' (off)'}{g64s}")
    evidence = "; ".join(notes + ev + degenerate)
    g_off = [t_ok for g_ok, t_ok in judged if not g_ok]
    if g_off:
        verdict = "torch-matches-FD" if all(g_off) else "neither"
    elif judged:
        verdict = "tapegrad-matches-FD" if not all(t for _, t in judged) else "rounding"
    elif any("OUTSIDE" in d or "no FD" in d or "failed" in d for d in degenerate):
        verdict = "undecided"
    else:
        verdict = "degenerate"
    return {"verdict": verdict, "evidence": evidence[:1500]}


# -- the report ---------------------------------------------------------------------------------------

# categories without a numeric reference, between the alarms and the settled verdicts: each needs
# a person (a crash of tapegrad first)
LOUD = ("process-crash", "threads", "compile", "fuzzer-error", "spurious-error", "missing-error",
        "exception-type", "requires_grad", "structure", "shape", "dtype", "grad-none")


def group_of(rec):
    if rec.get("verdict"):
        return rec["verdict"]
    if rec["cat"] in ("value", "grad"):
        return "unadjudicated"
    return rec["cat"]


def report(records):
    """Lines grouping findings by verdict: tapegrad away from the reference first, then what has
    no reference (crashes, loud differences, undecided), then the settled verdicts."""
    groups = {}
    for rec in records:
        groups.setdefault(group_of(rec), []).append(rec)
    order = list(ALARM) + ["process-crash", "unadjudicated", "undecided"] + \
        [c for c in LOUD if c != "process-crash"] + \
        ["degenerate", "tapegrad-matches-FD", "tapegrad-matches-f64", "rounding", "signed-zero",
         "torch-crash"]
    order += sorted(set(groups) - set(order))
    lines = []
    for g in order:
        recs = groups.get(g)
        if not recs:
            continue
        flag = "  <-- tapegrad away from the reference" if g in ALARM else ""
        lines.append(f"== {g}: {len(recs)} findings, {len({r['seed'] for r in recs})} seeds{flag}")
        for r in sorted(recs, key=lambda r: r["seed"]):
            ev = f"\n      {r['evidence'][:400]}" if r.get("evidence") else ""
            lines.append(f"  {r['seed']} [{r['cat']}] {r.get('mode', '')}: {r['msg'][:200]}{ev}")
    return lines
