"""torch.ao.nn.quantized.dynamic.LSTM / GRU: recurrent layers whose weights are stored int8 (or
float16) and whose gate products are dynamic quantized linears, as PyTorch's quantized_lstm /
quantized_gru compute them on CPU:

- per layer and direction, the input projection of the WHOLE sequence (of a PackedSequence:
  all its rows) is one dynamic linear (one input range for all steps), with bias_ih; each step's hidden projection is another (its
  own range), with bias_hh; both quantize their input over 0..127 (reduce_range, as
  make_quantized_cell_params_dynamic(..., reduce_range=True) in PyTorch's version-2 modules);
- the cells then combine the float32 gates as ATen's LSTMCell / GRUCell do.

The integer products are bit-exact (see linear.py); sigmoid and tanh are tapegrad's, which can
differ from PyTorch's vectorised ones by one float32 ulp, and such an ulp can move a later step's
hidden value across a quantization boundary: outputs agree with PyTorch to about one quantization
step of the hidden projection (~1e-3 absolute on typical sizes), not bit for bit.
The forward is not differentiable (PyTorch's is not either)."""
from __future__ import annotations

import numbers
import warnings

import tapegrad as torch
from tapegrad import nn

from .linear import _fp16_weight, _linear_dynamic, _linear_dynamic_fp16, _quantize_weight


class _CellParams:
    """The packed weights of one layer and direction (PyTorch's CellParamsBase script object):
    w_ih and w_hh (qint8 quantized tensors, or float32 holding float16 values) and the float
    biases."""

    __slots__ = ("kind", "w_ih", "w_hh", "b_ih", "b_hh")

    def __init__(self, kind, w_ih, w_hh, b_ih, b_hh):
        self.kind, self.w_ih, self.w_hh, self.b_ih, self.b_hh = kind, w_ih, w_hh, b_ih, b_hh

    def __reduce__(self):
        return (_CellParams, (self.kind, self.w_ih, self.w_hh, self.b_ih, self.b_hh))

    def _linear(self, x, w, b):
        if self.kind == "quantized_fp16":
            return _linear_dynamic_fp16(x, w, b)
        return _linear_dynamic(x, w, b, reduce_range=True)

    def linear_ih(self, x):
        return self._linear(x, self.w_ih, self.b_ih)

    def linear_hh(self, h):
        return self._linear(h, self.w_hh, self.b_hh)

    def __repr__(self) -> str:
        return f"CellParams({self.kind})"


def _make_cell_params(w_ih, w_hh, b_ih, b_hh, dtype):
    if dtype is torch.qint8:
        return _CellParams("quantized_dynamic", w_ih, w_hh, b_ih, b_hh)
    return _CellParams("quantized_fp16", _fp16_weight(w_ih), _fp16_weight(w_hh), b_ih, b_hh)


class PackedParameter(nn.Module):
    """Holds one layer-direction's cell params; saved in the state_dict as `param`."""

    def __init__(self, param):
        super().__init__()
        self.param = param

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "param"] = self.param

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        self.param = state_dict.pop(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)


def _lstm_cell(igates, hx, cx, params):
    gates = params.linear_hh(hx) + igates
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy


def _gru_cell(igates, hx, params):
    ir, iz, in_ = igates.chunk(3, 1)
    hr, hz, hn = params.linear_hh(hx).chunk(3, 1)
    reset = (hr + ir).sigmoid()
    update = (hz + iz).sigmoid()
    new = (in_ + hn * reset).tanh()
    return (hx - new) * update + new


class RNNBase(nn.Module):
    """The shared machinery of the dynamic quantized LSTM and GRU."""

    _FLOAT_MODULE = nn.RNNBase
    _version = 2

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=torch.qint8):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        self.training = False
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if mode == "LSTM":
            gate_size = 4 * hidden_size
        elif mode == "GRU":
            gate_size = 3 * hidden_size
        else:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if dtype not in (torch.qint8, torch.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        num_directions = 2 if bidirectional else 1
        values = []
        for layer in range(num_layers):
            for _ in range(num_directions):
                layer_input_size = input_size if layer == 0 else hidden_size * num_directions
                # (random placeholders, as PyTorch's; from_float or set_weight_bias replaces them)
                w_ih = torch.randn(gate_size, layer_input_size)
                w_hh = torch.randn(gate_size, hidden_size)
                if dtype is torch.qint8:
                    w_ih = torch.quantize_per_tensor(w_ih, 0.1, 0, torch.qint8)
                    w_hh = torch.quantize_per_tensor(w_hh, 0.1, 0, torch.qint8)
                values.append(PackedParameter(_make_cell_params(
                    w_ih, w_hh, torch.randn(gate_size), torch.randn(gate_size), dtype)))
        self._all_weight_values = nn.ModuleList(values)

    def _get_name(self) -> str:
        return "DynamicQuantizedRNN"

    # (the float RNN's: the same arguments, a proj_size of 0 never printed)
    proj_size = 0
    extra_repr = nn.RNNBase.extra_repr

    def __repr__(self) -> str:
        # the packed parameters are state, not submodules to print (PyTorch hides them too)
        return f"{self._get_name()}({self.extra_repr()})"

    # -- checks ----------------------------------------------------------------------------------
    def check_input(self, input, batch_sizes) -> None:  # noqa: A002
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple:  # noqa: A002
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch,
                self.hidden_size)

    def check_hidden_size(self, hx, expected, msg="Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.size())))

    # -- weights ---------------------------------------------------------------------------------
    def _names(self):
        for layer in range(self.num_layers):
            for direction in range(2 if self.bidirectional else 1):
                yield layer, "_reverse" if direction == 1 else ""

    def _weight_bias(self) -> dict:
        out = {"weight": {}, "bias": {}}
        for (layer, suffix), packed in zip(self._names(), self._all_weight_values):
            p = packed.param
            out["weight"][f"weight_ih_l{layer}{suffix}"] = p.w_ih
            out["weight"][f"weight_hh_l{layer}{suffix}"] = p.w_hh
            out["bias"][f"bias_ih_l{layer}{suffix}"] = p.b_ih
            out["bias"][f"bias_hh_l{layer}{suffix}"] = p.b_hh
        return out

    def get_weight(self) -> dict:
        return self._weight_bias()["weight"]

    def get_bias(self) -> dict:
        return self._weight_bias()["bias"]

    def set_weight_bias(self, weight_bias_dict) -> None:
        values = []
        for layer, suffix in self._names():
            w_ih = weight_bias_dict[f"weight_ih_l{layer}{suffix}"]
            w_hh = weight_bias_dict[f"weight_hh_l{layer}{suffix}"]
            dtype = torch.qint8 if w_ih.dtype is torch.qint8 else torch.float16
            values.append(PackedParameter(_make_cell_params(
                w_ih, w_hh, weight_bias_dict[f"bias_ih_l{layer}{suffix}"],
                weight_bias_dict[f"bias_hh_l{layer}{suffix}"], dtype)))
        self._all_weight_values = nn.ModuleList(values)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The dynamic quantized twin of float nn.LSTM / nn.GRU `mod`: each weight quantized by
        its own instance of `mod.qconfig`'s weight observer (qint8), or rounded to float16."""
        if type(mod) not in (nn.LSTM, nn.GRU):
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for "
                                 "nn.LSTM and nn.GRU")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer_method = mod.qconfig.weight
        else:
            from tapegrad.ao.quantization.qconfig import default_dynamic_qconfig
            weight_observer_method = default_dynamic_qconfig.weight
        dtype = weight_observer_method().dtype
        if dtype not in (torch.qint8, torch.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        if getattr(mod, "proj_size", 0):
            raise RuntimeError("tapegrad: dynamic quantization of an LSTM with proj_size > 0 "
                               "is not supported")
        qmod = {"LSTM": LSTM, "GRU": GRU}[mod.mode](
            mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
            mod.dropout, mod.bidirectional, dtype)
        if not mod.bias:
            raise AssertionError("mod.bias must be True")

        def quantize(w):
            if dtype is torch.float16:
                return w.detach().float()
            observer = weight_observer_method()
            observer(w)
            return _quantize_weight(w.detach().float(), observer)

        values = []
        for layer, suffix in qmod._names():
            values.append(PackedParameter(_make_cell_params(
                quantize(getattr(mod, f"weight_ih_l{layer}{suffix}")),
                quantize(getattr(mod, f"weight_hh_l{layer}{suffix}")),
                getattr(mod, f"bias_ih_l{layer}{suffix}"),
                getattr(mod, f"bias_hh_l{layer}{suffix}"), dtype)))
        qmod._all_weight_values = nn.ModuleList(values)
        return qmod

    # -- forward ---------------------------------------------------------------------------------
    def _step(self, igates, state, cell):
        if self.mode == "LSTM":
            return list(_lstm_cell(igates, state[0], state[1], cell))
        return [_gru_cell(igates, state[0], cell)]

    def _direction(self, igates, state, cell, batch_sizes, reverse):
        """One layer-direction over the steps: igates (total rows, gates), the step t's rows
        being the next batch_sizes[t] (all of a padded batch's rows at each step); state: the
        initial (batch, hidden) tensors.  Returns the outputs, stacked by rows, and the final
        states (a sequence that ends early keeps the state of its last step, as PyTorch's
        PackedLayer / ReversedPackedLayer)."""
        steps = len(batch_sizes)
        outputs = [None] * steps
        if not reverse:
            offset, last, finished = 0, batch_sizes[0] if steps else 0, []
            current = state
            for t in range(steps):
                b = batch_sizes[t]
                if b < last:
                    finished.append([s[b:last] for s in current])
                    current = [s[:b] for s in current]
                last = b
                current = self._step(igates[offset:offset + b], current, cell)
                offset += b
                outputs[t] = current[0]
            finished.append(current)
            finals = [torch.cat([f[i] for f in reversed(finished)], 0)
                      for i in range(len(state))]
        else:
            offset = igates.shape[0]
            last = batch_sizes[-1] if steps else 0
            current = [s[:last] for s in state]
            for t in reversed(range(steps)):
                b = batch_sizes[t]
                if b > last:
                    current = [torch.cat([c, s[last:b]], 0) for c, s in zip(current, state)]
                current = self._step(igates[offset - b:offset], current, cell)
                offset -= b
                last = b
                outputs[t] = current[0]
            finals = current
        out = (torch.cat(outputs, 0) if outputs else
               torch.zeros(0, self.hidden_size))
        return out, finals

    def _run(self, x, batch_sizes, states):
        """x: the rows of all steps, (total, features) float32, step t's being the next
        batch_sizes[t]; states: per state kind a list over layers * directions of
        (batch, hidden) tensors.  Returns the last layer's output rows and the final states."""
        num_directions = 2 if self.bidirectional else 1
        params = [p.param for p in self._all_weight_values]
        finals = [[] for _ in states]
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                cell = params[index]
                # the input projection of all steps at once: one dynamic linear
                igates = cell.linear_ih(layer_input)
                out, state = self._direction(igates, [s[index] for s in states], cell,
                                             batch_sizes, direction == 1)
                for f, s in zip(finals, state):
                    f.append(s)
                outputs.append(out)
            layer_input = outputs[0] if num_directions == 1 else torch.cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = nn.functional.dropout(layer_input, self.dropout, True)
        return layer_input, [torch.stack(f, 0) for f in finals]

    def _forward(self, input, hx, n_states):  # noqa: A002
        from tapegrad.nn.utils.rnn import PackedSequence
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            sizes = [int(b) for b in batch_sizes.tolist()]
            self.check_input(data, batch_sizes)
            expected = (self.num_layers * (2 if self.bidirectional else 1),
                        sizes[0] if sizes else 0, self.hidden_size)
        else:
            data, sorted_indices, unsorted_indices = input, None, None
            self.check_input(data, None)
            expected = self.get_expected_hidden_size(data, None)
        if hx is None:
            zeros = torch.zeros(*expected, dtype=data.dtype)
            hx = (zeros,) * n_states
        else:
            hx = (hx,) if n_states == 1 else tuple(hx)
            if sorted_indices is not None:
                hx = tuple(h.index_select(1, sorted_indices) for h in hx)
            for i, h in enumerate(hx):
                self.check_hidden_size(h, expected, "Expected hidden size {}, got {}"
                                       if n_states == 1 else
                                       f"Expected hidden[{i}] size {{}}, got {{}}")
        with torch.no_grad():
            states = [list(h.unbind(0)) for h in hx]
            if packed:
                out, finals = self._run(data, sizes, states)
                out = PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices)
                if unsorted_indices is not None:
                    finals = [h.index_select(1, unsorted_indices) for h in finals]
                return out, finals
            x = data.transpose(0, 1) if self.batch_first else data
            steps, batch = x.shape[0], x.shape[1]
            out, finals = self._run(x.reshape(steps * batch, x.shape[2]), [batch] * steps,
                                    states)
            out = out.reshape(steps, batch, out.shape[-1])
            if self.batch_first:
                out = out.transpose(0, 1)
        return out, finals


class LSTM(RNNBase):
    """A dynamic quantized LSTM: the nn.LSTM interface, float32 inputs and outputs."""

    _FLOAT_MODULE = nn.LSTM

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedLSTM"

    def forward(self, input, hx=None):  # noqa: A002
        out, (h, c) = self._forward(input, hx, 2)
        return out, (h, c)


class GRU(RNNBase):
    """A dynamic quantized GRU: the nn.GRU interface, float32 inputs and outputs."""

    _FLOAT_MODULE = nn.GRU

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def _get_name(self) -> str:
        return "DynamicQuantizedGRU"

    def forward(self, input, hx=None):  # noqa: A002
        out, (h,) = self._forward(input, hx, 1)
        return out, h
