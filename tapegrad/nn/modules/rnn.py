"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameters.

Per layer and direction the input projection of every time step is one matmul (a recorded
F.linear); the loop over time then runs in compiled code as one record (_RecurrentSequence: the
kernels of nn_kernels.c, one BLAS matmul per step forward and backward, the hidden weights'
gradient one matmul over all steps).  Packed sequences and LSTM projections (proj_size) run the
same step functions per time step from Python, built from tapegrad's differentiable ops; so does
the sequence record's backward under create_graph, so gradients of any order work.

Gate layouts are PyTorch's, so state dicts interchange: LSTM rows (i, f, g, o), GRU rows (r, z, n)
with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
"""
from __future__ import annotations as _annotations

from tapegrad._core import type_name as _type_name
import math
import numbers
import warnings

import numpy as np

from ... import _core
from ... import creation
from ...autograd.function import KernelFunction
from ...grad_mode import enable_grad
from ..._device import check_device
from ..._meta import bfloat16_route as _bfloat16_route
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# -- one time step per mode ---------------------------------------------------------------------
# Each takes the input projection of this step (bias included where it can be folded in), the
# state tuple and the hidden-side weights, and returns the new state tuple; state[0] is the output.
# The operands are in PyTorch's order (its cells add the input's projection into the hidden one's,
# and split the gates with unsafe_chunk), so a script walking grad_fn sees PyTorch's graph; the
# values are the same either way (a sum or product of two values rounds the same in either order).
# They call public ops (methods), not the core's: under a bfloat16 autocast the cells' linear
# gives bfloat16 tensors, which only the public ops compute and round as bfloat16 (the core's
# tanh and chunk returned float32: RNNCell's result was float32, GRU's and LSTM's values off).

def _rnn_tanh_step(gi, state, w_hh, b_hh, w_hr):
    return ((F.linear(state[0], w_hh, b_hh) + gi).tanh(),)


def _rnn_relu_step(gi, state, w_hh, b_hh, w_hr):
    return ((F.linear(state[0], w_hh, b_hh) + gi).relu(),)


def _lstm_step(gi, state, w_hh, b_hh, w_hr):
    h, c = state
    i, f, g, o = (F.linear(h, w_hh, b_hh) + gi).unsafe_chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return (h, c)


def _gru_step(gi, state, w_hh, b_hh, w_hr):
    h = state[0]
    i_r, i_z, i_n = gi.unsafe_chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).unsafe_chunk(3, -1)
    r = (h_r + i_r).sigmoid()
    z = (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return ((h - n) * z + n,)


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_tanh_step,
          "RNN_RELU": _rnn_relu_step}


def _input_bias(mode, b_ih, b_hh):
    """The bias of the input projection: b_ih, with b_hh folded in for LSTM only.  PyTorch's RNN
    and GRU layers add linear(h, W_hh, b_hh) to linear(x, W_ih, b_ih) at each step, as their
    cells do, and their output is the cells' bit for bit; a folded b_ih + b_hh rounds another
    sum.  (PyTorch's LSTM layer is one oneDNN kernel whose bits differ from LSTMCell's anyway.)"""
    return b_ih + b_hh if (b_ih is not None and b_hh is not None and mode == "LSTM") else b_ih


def _input_projection(mode, x, w_ih, b_ih, b_hh):
    """W_ih x + b_ih for all steps at once; for LSTM b_hh folds in too (_input_bias)."""
    return _project(x, w_ih, _input_bias(mode, b_ih, b_hh))


def _project(x, w_ih, bias):
    """x @ W_ih^T + bias as recorded ops.  A (T, B, I) input is projected as one (T*B, I) matrix:
    one gemm, not T batched ones."""
    if x.dim() == 3:
        T, B = x.shape[0], x.shape[1]
        return F.linear(x.reshape(T * B, x.shape[2]), w_ih, bias).reshape(T, B, w_ih.shape[0])
    return F.linear(x, w_ih, bias)


def _hidden_bias(mode, b_ih, b_hh):
    return b_hh if (mode != "LSTM" or b_ih is None) else None


def _run_direction(mode, steps, state, weights, reverse, batch_sizes):
    """Run one layer in one direction over `steps` (a list of per-step input projections).

    state: tuple of (B, *) tensors.  batch_sizes: None for equal-length sequences, else the
    non-increasing active batch size per step (a packed batch, sequences sorted by length).
    Returns (list of per-step outputs in time order, final state tuple)."""
    step = _STEPS[mode]
    w_hh, b_hh, w_hr = weights
    T = len(steps)
    outputs = [None] * T
    if batch_sizes is None:
        order = range(T - 1, -1, -1) if reverse else range(T)
        for t in order:
            state = step(steps[t], state, w_hh, b_hh, w_hr)
            outputs[t] = state[0]
        return outputs, state
    full = state
    if not reverse:
        # Sequences end from the bottom of the batch upward; keep each one's state as it ends.
        finished = []
        for t in range(T):
            bs = batch_sizes[t]
            if bs < state[0].shape[0]:
                finished.append(tuple(s[bs:] for s in state))
                state = tuple(s[:bs] for s in state)
            state = step(steps[t], state, w_hh, b_hh, w_hr)
            outputs[t] = state[0]
        finished.append(state)
        finished.reverse()
        final = tuple(_core_cat([f[k] for f in finished]) for k in range(len(state)))
        return outputs, final
    # Backwards in time the batch grows: a sequence joins at its own last step with its h0.
    state = tuple(s[:batch_sizes[T - 1]] for s in full)
    for t in range(T - 1, -1, -1):
        bs = batch_sizes[t]
        have = state[0].shape[0]
        if bs > have:
            state = tuple(_core_cat([s, f[have:bs]]) for s, f in zip(state, full))
        state = step(steps[t], state, w_hh, b_hh, w_hr)
        outputs[t] = state[0]
    return outputs, state


# -- the compiled sequence: one record per layer and direction ----------------------------------

_MODE_CODES = {"LSTM": 0, "GRU": 1, "RNN_TANH": 2, "RNN_RELU": 3}

def _refuse_under_vmap(op, module, input, hx):
    """PyTorch's vmap has no batching rule for its fused recurrent kernels (aten::lstm,
    aten::gru, aten::rnn_tanh, aten::lstm_cell ...) and cannot fall back to a per-sample loop:
    a recurrent layer meeting a batched input, state or weight raises."""
    from ... import _vmap
    if not _vmap.active():
        return
    tensors = [input, *(hx if isinstance(hx, (tuple, list)) else (hx,)),
               *module._parameters.values()]
    if any(type(t) is _vmap.BatchedTensor for t in tensors):
        raise RuntimeError(f"Batching rule not implemented for aten::{op}. We could not "
                           f"generate a fallback.")



class _RecurrentSequence(KernelFunction):
    """Outputs (T, B, H), the last h and (LSTM) the last c of one layer in one direction, from the
    layer's input x (T, B, I), its input weights and bias (bias: b_ih + b_hh folded for LSTM, b_ih
    alone otherwise), the initial state and the hidden weights (b_hh except for LSTM, which folds
    it into the bias).  The input projection of all steps is part of the record: its buffer is the
    kernels' workspace, used by the loop and let go before the next layer's."""

    saved_args = (0, 1, 2, 3, 4, 5, 6)

    @staticmethod
    def kernel_forward(x, w_ih, bias, h0, c0, w_hh, b_hh, mode, reverse):
        x, w_ih, bias, h0, c0, w_hh, b_hh = (None if a is None else np.ascontiguousarray(a)
                                             for a in (x, w_ih, bias, h0, c0, w_hh, b_hh))
        if h0 is None:                  # no initial state given: zeros
            h0 = np.zeros((x.shape[1], w_hh.shape[1]), dtype=x.dtype)
            c0 = h0 if mode == "LSTM" else None
        gi = _core._rnn_input_projection(x, w_ih, bias)
        out, h_last, c_last, saved = _core._rnn_sequence_forward(
            _MODE_CODES[mode], gi, h0, c0, w_hh, b_hh, reverse)
        del gi
        # The backward reads the steps' states from its own buffer (saved[4]: the returned output
        # is a copy of it), so an in-place write into the returned output is no error (PyTorch's
        # layer saves its own).
        # The buffers come from the kernels' workspace: reused by a later call once this record
        # (and every tensor on them) is gone.
        outs = (out, h_last) + ((c_last,) if mode == "LSTM" else ())
        return outs, (mode, reverse, saved, x, w_ih, bias is not None, h0, c0, w_hh,
                      b_hh is not None)

    @staticmethod
    def kernel_backward(state, need, grads):
        mode, reverse, saved, x, w_ih, has_bias, h0, c0, w_hh, has_b_hh = state
        dout, dh_last = grads[0], grads[1]
        dc_last = grads[2] if len(grads) > 2 else None
        arr = lambda a: None if a is None else np.ascontiguousarray(a)  # noqa: E731
        dgi, dh0, dc0, dw, db = _core._rnn_sequence_backward(
            _MODE_CODES[mode], saved, c0, w_hh, has_b_hh, arr(dout),
            arr(dh_last), arr(dc_last), reverse)
        dx, dw_ih, dbias = _core._rnn_input_grads(dgi, x, w_ih, need[0], need[1],
                                                  has_bias and need[2])
        del dgi
        pick = lambda k, a: a if need[k] and a is not None else None  # noqa: E731
        return (pick(0, dx), pick(1, dw_ih), pick(2, dbias), pick(3, dh0), pick(4, dc0),
                pick(5, dw), pick(6, db), None, None)

    @staticmethod
    def graph_backward(ctx, saved, dout, dh_last, dc_last=None):
        # create_graph: differentiate the per-step composite
        return _sequence_graph_grads(ctx, saved, (dout, dh_last, dc_last))


class _StackedSequence(_RecurrentSequence):
    """The same record for GRU and plain RNN layers, whose outputs PyTorch's CPU build stacks
    from the steps (only the LSTM runs as one oneDNN layer): only its grad_fn name differs."""


# PyTorch's names for the grad_fn of a CPU layer's output: LSTM and the other modes.
for _cls, _name in ((_RecurrentSequence, "MkldnnRnnLayerBackward0"),
                    (_StackedSequence, "StackBackward0")):
    _cls._backward_cls.__name__ = _cls._backward_cls.__qualname__ = _name
del _cls, _name


def _sequence_graph_grads(ctx, inputs, grads):
    """The sequence record's input gradients as recorded ops (create_graph=True): re-run its
    projection and steps with the differentiable step functions and differentiate them."""
    from ...autograd import grad as autograd_grad
    x, w_ih, bias, h0, c0, w_hh, b_hh = inputs
    mode, reverse = ctx.params[7], ctx.params[8]
    if h0 is None:                      # the zeros the forward started from
        h0 = _core.wrap_array(ctx.kernel_state[6])
        c0 = h0 if mode == "LSTM" else None
    state = (h0, c0) if mode == "LSTM" else (h0,)
    with enable_grad():
        gi = _project(x, w_ih, bias)
        outs, last = _run_direction(mode, gi.unbind(0), state, (w_hh, b_hh, None),
                                    reverse, None)
        results = (_stack(outs, 0),) + tuple(last)
    pairs = [(r, g) for r, g in zip(results, grads) if g is not None]
    wanted = [k for k, t in enumerate(inputs) if t is not None and ctx.needs_input_grad[k]]
    found = autograd_grad([r for r, _ in pairs], [inputs[k] for k in wanted],
                          [g for _, g in pairs], create_graph=True, allow_unused=True)
    res = [None] * 9
    for k, g in zip(wanted, found):
        res[k] = g
    return tuple(res)


def _compiled_direction(mode, x, state, weights, reverse):
    """One layer in one direction through _RecurrentSequence: (output (T, B, H), final state).
    x (T, B, I): the layer's input; weights: (w_ih, b_ih, b_hh, w_hh, w_hr)."""
    w_ih, b_ih, b_hh, w_hh, _ = weights
    bias = _input_bias(mode, b_ih, b_hh)
    # Under tapegrad.compile the sequence is one replay step (a KernelFunction: its kernels run
    # on the replay's buffers); the capture hook around it re-runs the call whole should the
    # step not be noted.  Outside a capture the hook just calls it.
    res = _core._capture_op_call(
        (_RecurrentSequence if mode == "LSTM" else _StackedSequence).apply,
        (x, w_ih, bias, state[0], state[1] if mode == "LSTM" else None, w_hh,
         _hidden_bias(mode, b_ih, b_hh), mode, reverse), {})
    return res[0], tuple(res[1:])


def _compiles(x, w_hr):
    """Whether the compiled sequence serves this layer: float32/float64, no output projection,
    an input of (T, B, I)."""
    return w_hr is None and x.dim() == 3 and x._array.dtype in (np.float32, np.float64)


_cat = _core.TORCH_FUNCTIONS["cat"]
_stack = _core.TORCH_FUNCTIONS["stack"]


def _core_cat(parts):
    return parts[0] if len(parts) == 1 else _cat(parts, 0)


def _shape_str(shape):
    return "(" + ", ".join(str(s) for s in shape) + (",)" if len(shape) == 1 else ")")


def _run_layers(mode, data, state, direction_weights, num_layers, bidirectional, dropout,
                train, hx_given, batch_sizes):
    """The stacked layers of an RNN/LSTM/GRU over a (T, B, I) input or a packed batch's data
    (``batch_sizes`` not None): ``direction_weights(layer, direction)`` gives (w_ih, w_hh, b_ih,
    b_hh, w_hr); ``state`` is the list of (L * D, B, H) initial states (h, and c for LSTM);
    dropout between layers when ``train``.  Returns (output, list of final states).  The
    layers (RNNBase.forward) and the functional torch.lstm & co. both run through here."""
    packed = batch_sizes is not None
    num_directions = 2 if bidirectional else 1
    layer_input = data
    finals = [[] for _ in state]
    for layer in range(num_layers):
        direction_outputs = []
        for direction in range(num_directions):
            w_ih, w_hh, b_ih, b_hh, w_hr = direction_weights(layer, direction)
            idx = layer * num_directions + direction
            if batch_sizes is None and _compiles(layer_input, w_hr):
                # (no hx: the sequence starts from zeros of its own, so a replay runs no
                # zeros and indexing steps for the initial state)
                init_state = ((None,) * len(state) if not hx_given
                              else tuple(s[idx] for s in state))
                out, last = _compiled_direction(
                    mode, layer_input, init_state, (w_ih, b_ih, b_hh, w_hh, w_hr),
                    direction == 1)
                direction_outputs.append(out)
            else:
                init_state = tuple(s[idx] for s in state)
                proj = _input_projection(mode, layer_input, w_ih, b_ih, b_hh)
                weights = (w_hh, _hidden_bias(mode, b_ih, b_hh), w_hr)
                steps = (proj.split(batch_sizes, 0) if packed else proj.unbind(0))
                outs, last = _run_direction(mode, steps, init_state, weights,
                                            direction == 1, batch_sizes)
                direction_outputs.append(_cat(outs, 0) if packed else _stack(outs, 0))
            for k, s in enumerate(last):
                finals[k].append(s)
        layer_input = (direction_outputs[0] if num_directions == 1
                       else _cat(direction_outputs, -1))
        if dropout > 0 and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    return layer_input, [_stack(f, 0) for f in finals]


# -- the multi-layer modules --------------------------------------------------------------------

class _BFloat16Calls:
    """The recurrent layers reach their fused steps by internal names, which the bfloat16
    dispatch does not see: with bfloat16 parameters the whole call goes through it
    (tapegrad/_bfloat16.py's module_call), so its outputs are bfloat16 as PyTorch's are."""

    def _call_impl(self, *args, **kwargs):
        if _bfloat16_route[0] and any(p is not None and p.dtype is _core.bfloat16
                                      for p in self._parameters.values()):
            from ..._bfloat16 import module_call
            return module_call(super()._call_impl, self._parameters.values(), args, kwargs)
        return super()._call_impl(*args, **kwargs)


class RNNBase(_BFloat16Calls, Module):
    """The shared machinery of RNN, LSTM and GRU: parameters, checks, layers and directions."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None,
                 dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            # (attributed to the subclass's super().__init__ line, as PyTorch's is: shown once
            # per process by the default filter, however many layers a script builds)
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        # (PyTorch checks these types: a script passing dropout as the fourth positional
        # argument, nn.GRU(embed, hidden, layers, 0.5), gives it to bias and is refused)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * num_directions
            for direction in range(num_directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for kind, shape in shapes:
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(creation.empty(*shape, dtype=dtype, device=device)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN, and on CPU (the
        only device here) its call returns at once. Scripts call it before every forward."""
        return None

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters per layer and direction, as lists in PyTorch's order (w_ih, w_hh, b_ih, b_hh,
        then w_hr with ``proj_size``).
        """
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def _direction_weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- forward ------------------------------------------------------------------------------
    def _state_shapes(self, batch):
        num_directions = 2 if self.bidirectional else 1
        out = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = (self.num_layers * num_directions, batch, out)
        if self.mode == "LSTM":
            return [h_shape, (self.num_layers * num_directions, batch, self.hidden_size)]
        return [h_shape]

    # -- PyTorch's public checks, for subclasses that call or override them ------------------
    def check_input(self, input, batch_sizes) -> None:
        """The input's dtype (the weights'), rank (3, or 2 for packed data) and feature size."""
        w = self.weight_ih_l0
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:
        """(layers * directions, batch, proj_size or hidden_size)."""
        return self._state_shapes(self._mini_batch(input, batch_sizes))[0]

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg: str = "Expected hidden size {}, got {}") -> None:
        """RuntimeError (`msg` formatted with both sizes) unless hx has the expected size."""
        if hx.size() != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        """check_input, then the state's size(s): h (and c for an LSTM)."""
        self.check_input(input, batch_sizes)
        if self.mode != "LSTM":
            self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))
            return
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        """The state with its batch dim reordered by `permutation` (None: unchanged)."""
        if permutation is None:
            return hx
        if self.mode == "LSTM":
            return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)
        return hx.index_select(1, permutation)

    def _check_input(self, input, batch_sizes):
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        expected = 2 if batch_sizes is not None else 3
        if batch_sizes is None and input.dim() not in (2, 3):
            tail = " tensor instead" if name == "RNN" else " instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tail}")
        if batch_sizes is not None and input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        w = self.weight_ih_l0
        if input.dtype != w.dtype and self.mode == "LSTM" and batch_sizes is not None:
            # PyTorch's LSTM skips its argument checks for a packed batch: its kernel's
            # matmul refuses the mix
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{_core.scalar_type_name_of(input._array.dtype)} and "
                               f"{_core.scalar_type_name_of(w._array.dtype)}")
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        if input.shape[-1] != self.input_size:
            if self.mode == "LSTM" and batch_sizes is not None:
                # (no argument check for a packed LSTM batch: its kernel's input projection,
                # data @ weight_ih_l0.T, refuses the size)
                rows, gates = input.shape[0], w.shape[0]
                raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x"
                                   f"{input.shape[-1]} and {self.input_size}x{gates})")
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def forward(self, input, hx=None):
        from ..utils.rnn import PackedSequence
        packed = isinstance(input, PackedSequence)
        is_lstm = self.mode == "LSTM"
        _refuse_under_vmap(self.mode.lower() + (".data" if packed else ".input"), self,
                           input.data if packed else input, hx)
        if packed:
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in batch_sizes_t.tolist()]
            self._check_input(data, batch_sizes)
            batch = batch_sizes[0]
            batched = True
        else:
            self._check_input(input, None)
            batched = input.dim() == 3
            data = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                data = data.transpose(0, 1)
            batch_sizes = None
            batch = data.shape[1]
        state = self._initial_state(hx, data, batch, batched, is_lstm, packed)
        if not packed and data.shape[0] == 0:       # (PyTorch's kernel, after the hx checks)
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if packed and sorted_indices is not None:
            state = [s.index_select(1, sorted_indices) for s in state]

        run, weights = _run_layers, self._direction_weights
        autocasting = self._autocast_casts(data, packed)
        if autocasting:
            data, state, run, weights = self._autocast_operands(data, state)
            _core._exclude_autocast(True)
        try:
            output, final = run(self.mode, data, state, weights, self.num_layers,
                                self.bidirectional, self.dropout, self.training,
                                hx is not None, batch_sizes)
        finally:
            if autocasting:
                _core._exclude_autocast(False)
        if packed:
            if unsorted_indices is not None:
                final = [s.index_select(1, unsorted_indices) for s in final]
            output = PackedSequence(output, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            if self.batch_first and batched:
                # PyTorch's GRU and RNN layers transpose their fresh output in place
                # (grad_fn TransposeBackward1); the LSTM's Python path takes a view.  Under
                # tapegrad.compile's capture the view is taken out of place too: the replay
                # runs no in-place op on a tensor the call made (the call would stay eager),
                # the values and gradients are the same, and a compiled layer's output shows
                # the compiled node (CompiledFunctionBackward) in PyTorch anyway.
                from ...compiler import is_compiling
                output = (output.transpose(0, 1) if is_lstm or is_compiling()
                          else output.transpose_(0, 1))
            if not batched:
                output = output.squeeze(1)
                final = [s.squeeze(1) for s in final]
        return (output, tuple(final)) if is_lstm else (output, final[0])

    def _autocast_casts(self, data, packed):
        """Whether PyTorch's CPU autocast runs this call in its dtype: rnn_tanh and rnn_relu are
        on its lower-precision list; lstm is not, its oneDNN kernel (mkldnn_rnn_layer) is, and
        aten::lstm takes that kernel only for an unpacked, non-empty input of float32 or
        bfloat16, or of float16 without grad (RNN.cpp's use_mkldnn); otherwise its cells run
        in the input's dtype (an empty batch under autocast kept float32, fuzz 67302467)."""
        if self.mode == "GRU" or not _core._set_autocast_on(None):
            return False
        if self.mode != "LSTM":
            return True
        kernel_dtype = data.dtype in (_core.float32, _core.bfloat16) or (
            data.dtype is _core.float16 and not _core.is_grad_enabled())
        return not packed and data.numel() != 0 and kernel_dtype

    def _autocast_operands(self, data, state):
        """PyTorch's CPU autocast runs lstm, rnn_tanh and rnn_relu (not gru) in its dtype: the
        input, states and weights cast (the weights' casts recorded, so float32 parameters get
        float32 gradients); with bfloat16 the layers run as the bfloat16 parameters' call does
        (_BFloat16Calls), their fused steps unseen by the dispatch."""
        from ..._autocast import lower_precision_operands
        op = self.mode.lower()
        data, *state = lower_precision_operands(op, data, *state)
        layers = [[list(lower_precision_operands(op, *self._direction_weights(layer, direction)))
                   for direction in range(2 if self.bidirectional else 1)]
                  for layer in range(self.num_layers)]
        weights = lambda layer, direction: layers[layer][direction]  # noqa: E731
        run = _run_layers
        if data.dtype is _core.bfloat16:
            from ..._bfloat16 import module_call
            every = [w for layer in layers for direction in layer for w in direction]
            run = lambda *args: module_call(_run_layers, every, args, {})  # noqa: E731
        return data, state, run, weights

    def _initial_state(self, hx, data, batch, batched, is_lstm, packed=False):
        shapes = self._state_shapes(batch)
        if hx is None:
            return [creation.zeros(*shape, dtype=data.dtype) for shape in shapes]
        # PyTorch reads an LSTM's state as hx[0], hx[1]: a lone tensor given in place of the
        # (h, c) pair fails on its first dimension, as indexing it does
        parts = [hx[0], hx[1]] if is_lstm else [hx]
        want = 3 if batched else 2
        if packed:
            # PyTorch checks a packed batch's states by their sizes alone (an LSTM's not even
            # those: its kernel reads dim 2 of each)
            short = [p for p in parts if p.dim() < 3]
            if is_lstm and short:
                rank = short[0].dim()
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-rank}, {rank - 1}], but got 2)")
            if is_lstm:
                # ... and meets a state of another batch size in its first step's sums:
                # h @ W_hh.T + the input's projection, then the forget gate times c
                h_batch, c_batch = parts[0].shape[1], parts[1].shape[1]
                for a, b in ((h_batch, batch), (batch, c_batch)):
                    if a != b and a != 1 and b != 1:
                        raise RuntimeError(f"The size of tensor a ({a}) must match the size of "
                                           f"tensor b ({b}) at non-singleton dimension 0")
        elif is_lstm:
            if any(p.dim() != want for p in parts):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({parts[0].dim()}-D, {parts[1].dim()}-D) tensors")
        elif parts[0].dim() != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{parts[0].dim()}-D tensor")
        if not batched:
            parts = [p.unsqueeze(1) for p in parts]
        for k, (p, shape) in enumerate(zip(parts, shapes)):
            if tuple(p.shape) != shape:
                label = f"hidden[{k}]" if is_lstm else "hidden"
                raise RuntimeError(f"Expected {label} size {_shape_str(shape)}, got "
                                   f"{list(p.shape)}")
        if is_lstm and len(hx) != 2:        # PyTorch's kernel, after the size checks
            raise RuntimeError("lstm expects two hidden states")
        # PyTorch's kernel multiplies h by weight_hh, which refuses another dtype; an LSTM's c
        # only meets gate values, so it is promoted to theirs (c_n in the weights' dtype)
        w = self.weight_ih_l0
        if parts[0].dtype != w.dtype:
            raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                               f"{_core.scalar_type_name_of(parts[0]._array.dtype)} and "
                               f"{_core.scalar_type_name_of(w._array.dtype)}")
        if is_lstm and parts[1].dtype != w.dtype:
            parts[1] = parts[1].to(w.dtype)
        return parts


class RNN(RNNBase):
    """Elman RNN: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), act tanh or relu."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"RNN.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)
        # Module.__setattr__ exists only after Module.__init__: keep the name as PyTorch does.
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gate order (i, f, g, o); optional output projection."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple:
        """(layers * directions, batch, hidden_size): the cell state's shape."""
        return self._state_shapes(self._mini_batch(input, batch_sizes))[1]


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gate order (r, z, n)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if kwargs:
            raise TypeError(f"GRU.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


# -- single-step cells --------------------------------------------------------------------------

class RNNCellBase(_BFloat16Calls, Module):
    """Base of ``RNNCell``, ``LSTMCell`` and ``GRUCell``: holds ``weight_ih`` (gates*hidden_size,
    input_size), ``weight_hh``, and the biases, drawn from U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size)).
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None) -> None:
        super().__init__()
        check_device(device, allow_meta=True)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(creation.empty(num_chunks * hidden_size, input_size,
                                                  dtype=dtype, device=device))
        self.weight_hh = Parameter(creation.empty(num_chunks * hidden_size, hidden_size,
                                                  dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(creation.empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = getattr(self, "nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _prepare(self, input, hx, n_states):
        """Checks as PyTorch's cells do; returns (2-D input, list of 2-D states, batched)."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        if hx is None:
            states = []
        elif n_states == 2:
            # An LSTM cell walks its state as PyTorch's does (a lone tensor row by row), and
            # then reads hx[0], hx[1]
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"{name}: Expected hx[{idx}] to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
            states = hx
        else:
            if hx.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D "
                                 f"instead")
            states = [hx]
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = [] if hx is None else [states[k].unsqueeze(0) for k in range(n_states)]
        elif n_states == 2 and hx is not None:
            # a batched state goes to PyTorch's lstm_cell kernel as given: only a pair of
            # tensors passes its binding and its first check
            if not isinstance(hx, (tuple, list)):
                raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of "
                                f"Tensors, not {_type_name(hx)}")
            if len(hx) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
            states = list(hx)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if not states:
            zeros = creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)
            states = [zeros] * n_states
        for k, s in enumerate(states):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match "
                                   f"hidden{k} batch size {s.shape[0]}")
            # PyTorch's kernel reads the hidden size from dim 1 (an unbatched input's 2-D state
            # has become 3-D by now)
            if s.dim() < 2:
                raise IndexError("Dimension out of range (expected to be in range of [-1, 0], "
                                 "but got 1)")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, "
                                   f"expected {self.hidden_size}")
            n_gates = self.weight_ih.shape[0] // self.hidden_size
            if s.dim() != 2 and n_gates > 1:
                # (an unbatched input with a 2-D state): PyTorch's GRU and LSTM cells fail
                # adding the state's gates to the input's; the Elman cell broadcasts
                raise RuntimeError(f"The size of tensor a ({n_gates * self.hidden_size}) must "
                                   f"match the size of tensor b ({self.hidden_size}) at "
                                   f"non-singleton dimension 2")
        return input, states, batched

    def _step(self, mode, input, states):
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        return _STEPS[mode](gi, tuple(states), self.weight_hh, self.bias_hh, None)


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``
    (``nonlinearity='relu'`` uses relu), x (N, input_size) or (input_size,).
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, states, batched = self._prepare(input, hx, 1)
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = self._step(mode, input, states)[0]
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``h', c' = LSTMCell(x, (h, c))`` for x (N, input_size) or (input_size,);
    zeros when the state is omitted; PyTorch's gate order (i, f, g, o) and parameter names.
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        _refuse_under_vmap("lstm_cell", self, input, hx)
        input, states, batched = self._prepare(input, hx, 2)
        h, c = self._step("LSTM", input, states)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = GRUCell(x, h)`` for x (N, input_size) or (input_size,) and h of
    hidden_size (zeros when omitted), PyTorch's gate order (r, z, n) and parameter names
    ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``.
    """
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, states, batched = self._prepare(input, hx, 1)
        h = self._step("GRU", input, states)[0]
        return h if batched else h.squeeze(0)
