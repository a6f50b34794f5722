"""L-BFGS with an optional strong-Wolfe line search, as torch.optim.LBFGS computes it.

The parameters are treated as one flat vector (their gradients concatenated in order).  Scalars
that PyTorch keeps as 0-d tensors (dot products, the curvature ratios, sometimes the step size)
are numpy scalars of the parameters' dtype here, so float32 arithmetic stays float32 as in
PyTorch; the state dict holds them as 0-d tensors, in PyTorch's layout.
"""
from __future__ import annotations as _annotations

import numpy as np

from .. import _core
from ..grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, _check_lr, _real_view, _to_scalar, add_alpha

__all__ = ["LBFGS"]

# The history and the scalars kept in the state between steps, in PyTorch's order.
_STATE_KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _to_state(value):
    """numpy arrays and scalars -> tensors (recursively in lists); numbers stay numbers."""
    if isinstance(value, list):
        return [_to_state(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return _core.wrap_array(np.asarray(value))
    return value


def _from_state(value):
    """The inverse of _to_state: tensors -> arrays (0-d tensors -> numpy scalars)."""
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    if isinstance(value, _core.TensorBase):
        arr = value._array
        return arr[()] if arr.ndim == 0 else arr
    return value


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clipped to
    `bounds` (default: the interval between x1 and x2); its midpoint if the cubic has none.
    PyTorch's private name, which line searches written outside it import: it takes 0-d tensors
    there (a tensor result then), numpy scalars and numbers here."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:      # (NaN too: x1 == x2 or an infinite f, as PyTorch's test reads)
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt() if isinstance(d2_square, _core.TensorBase) else np.sqrt(d2_square)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _copied(flat):
    """A copy of a flat gradient: a numpy array in LBFGS.step, a tensor where a line search
    written outside PyTorch calls _strong_wolfe itself (with PyTorch's arguments)."""
    return flat.clone() if isinstance(flat, _core.TensorBase) else flat.copy()


def _strong_wolfe(evaluate, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step t along d satisfying the strong Wolfe conditions: bracket a minimum, then zoom in by
    cubic interpolation.  evaluate(x, t, d) -> (loss, flat grad) at x + t*d.
    Returns (loss, flat grad, t, number of evaluations)."""
    d_norm = abs(d).max()
    g = _copied(g)
    f_new, g_new = evaluate(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)

    # -- bracketing phase
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, _copied(g_new)], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, _copied(g_new)], [gtd_prev, gtd_new]
            break
        # extrapolate, between 1.01 t and 10 t
        t_next = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, _copied(g_new), gtd_new
        t = t_next
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # -- zoom phase: shrink the bracket until a point satisfies the conditions
    insufficient_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                           bracket[1], bracket_f[1], bracket_gtd[1])
        # keep t away from the bracket's ends (or move it there after two near-end guesses)
        b_min, b_max = min(bracket), max(bracket)
        eps = 0.1 * (b_max - b_min)
        if min(b_max - t, t - b_min) < eps:
            if insufficient_progress or t >= b_max or t <= b_min:
                t = b_max - eps if abs(t - b_max) < abs(t - b_min) else b_min + eps
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False

        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = _copied(g_new), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = _copied(g_new), gtd_new

    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """Implements L-BFGS, as torch.optim.LBFGS.  `step(closure)` runs up to `max_iter`
    iterations, calling `closure()` (which must zero the gradients, compute the loss, call
    backward and return the loss) to re-evaluate the model.

    Args:
        params: iterable of parameters (a single group: LBFGS has no per-group options)
        lr (float): learning rate (default: 1)
        max_iter (int): maximal number of iterations per step (default: 20)
        max_eval (int): maximal number of function evaluations per step
            (default: max_iter * 5 // 4)
        tolerance_grad (float): stop when the largest gradient entry is below this
            (default: 1e-7)
        tolerance_change (float): stop when the loss or the parameters change less than this
            (default: 1e-9)
        history_size (int): number of past updates kept (default: 100)
        line_search_fn (str): None or 'strong_wolfe' (default: None)
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @property
    def _params(self):
        return self.param_groups[0]["params"]

    # -- the flat vector view of the parameters ------------------------------------------------
    def _gather_flat_grad(self) -> np.ndarray:
        """The gradients as one flat vector; a complex parameter counts as its real pairs."""
        parts = []
        for p in self._params:
            g = p.grad
            if getattr(g, "is_sparse", False):
                g = g.to_dense()        # embedding(sparse=True)'s gradient, as PyTorch's LBFGS
            param = _real_view(p._array)
            parts.append(np.zeros(param.size, param.dtype) if g is None
                         else _real_view(g._array).reshape(-1))
        return np.concatenate(parts)

    def _add_grad(self, step_size, update: np.ndarray) -> None:
        """params += step_size * update (each parameter its slice of the flat update)."""
        offset = 0
        for p in self._params:
            param = _real_view(p._array)
            _core._mark_written(p)
            piece = update[offset:offset + param.size].reshape(param.shape)
            add_alpha(param, piece, float(step_size), out=param)
            offset += param.size

    def _evaluate(self, closure):
        with enable_grad():
            loss = closure()
        return float(loss)

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = self._evaluate(closure)
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            _core._mark_written(p)
            np.copyto(p._array, saved)
        return loss, flat_grad

    # -- the step -------------------------------------------------------------------------------
    @no_grad()
    def step(self, closure):
        """Run up to max_iter L-BFGS iterations; returns the loss closure() gave first.

        As PyTorch's, the step runs with grad mode off and the closure with it on."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"Expected exactly one param_group, but got "
                                 f"{len(self.param_groups)}")
        group = self.param_groups[0]
        lr = _to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]     # LBFGS keeps its state on the first parameter
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        with _core.IeeeResults():            # inf/nan propagate silently, as in PyTorch
            flat_grad = self._gather_flat_grad()
            if np.abs(flat_grad).max() <= tolerance_grad:
                return orig_loss
            saved = {k: _from_state(state.get(k)) for k in _STATE_KEYS}
            self._iterate(closure, state, saved, flat_grad, loss, current_evals, lr, max_iter,
                          max_eval, tolerance_grad, tolerance_change, line_search_fn,
                          history_size)
        return orig_loss

    def _iterate(self, closure, state, saved, flat_grad, loss, current_evals, lr, max_iter,
                 max_eval, tolerance_grad, tolerance_change, line_search_fn, history_size):
        d, t = saved["d"], saved["t"]
        old_dirs, old_stps, ro = saved["old_dirs"], saved["old_stps"], saved["ro"]
        H_diag, prev_flat_grad, prev_loss = saved["H_diag"], saved["prev_flat_grad"], \
            saved["prev_loss"]
        opt_cond = False
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # -- the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:                  # keep the pair only if curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                # two-loop recursion: d = -H grad, H the inverse Hessian approximation
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = _from_state(state["al"])
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    add_alpha(q, old_dirs[i], float(-al[i]), out=q)
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    add_alpha(r, old_stps[i], float(al[i] - be_i), out=r)
                state["al"] = _to_state(al)

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                np.copyto(prev_flat_grad, flat_grad)
            prev_loss = loss

            # -- the step length
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)              # directional derivative
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p._array.copy() for p in self._params]

                def evaluate(x, step, direction):
                    return self._directional_evaluate(closure, x, step, direction)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    evaluate, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # re-evaluate unless this is the last iteration (its result would be unused)
                    loss = self._evaluate(closure)
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # -- stopping conditions
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        new_state = {"d": d, "t": t, "old_dirs": old_dirs, "old_stps": old_stps, "ro": ro,
                     "H_diag": H_diag, "prev_flat_grad": prev_flat_grad, "prev_loss": prev_loss}
        for key in _STATE_KEYS:
            state[key] = _to_state(new_state[key])
