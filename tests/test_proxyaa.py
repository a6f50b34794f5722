"""Faults found by running held-out PyTorch scripts (normalizing flows, VAEs, CapsNet, word2vec,
DDPM, neural ODE, GNN from scratch) under tapegrad; each case replays the script's call in both
libraries and compares the outcome with PyTorch's."""
from __future__ import annotations

import warnings

import pytest

import tapegrad as tg


def _outcome(fn, lib):
    """('ok', repr) or ('err', exception type name, first line of the message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(lib)
        except Exception as e:     # noqa: BLE001  (the exception is what is compared)
            return ("err", type(e).__name__, str(e).split("\n")[0])
    return ("ok", repr(r))


# A GNN written for the GPU moves its helper tensors with `.to(adj.get_device())`; on a CPU
# tensor get_device() is -1, and PyTorch refuses the negative index before asking for an
# accelerator.
NEGATIVE_DEVICE_CASES = {
    "tensor_to_get_device": lambda T: T.eye(3).to(T.ones(2).get_device()),
    "tensor_to_minus_one_dtype": lambda T: T.zeros(1).to(-1, T.float64),
    "tensor_to_device_kw": lambda T: T.zeros(1).to(device=-1),
    "device_minus_one": lambda T: T.device(-1),
    "factory_device_minus_one": lambda T: T.zeros(1, device=-1),
    "tensor_device_minus_one": lambda T: T.tensor([1.0], device=-1),
    "new_zeros_device_minus_one": lambda T: T.zeros(1).new_zeros(2, device=-1),
    "cuda_minus_one": lambda T: T.zeros(1).cuda(-1),
    "device_type_index_minus_one": lambda T: T.device("cpu", -2),
    "device_zero": lambda T: T.device(0),
    "tensor_to_zero": lambda T: T.zeros(1).to(0),
}


@pytest.mark.parametrize("name", sorted(NEGATIVE_DEVICE_CASES))
def test_negative_device_index_refused_as_torch(torch, name):
    fn = NEGATIVE_DEVICE_CASES[name]
    assert _outcome(fn, tg) == _outcome(fn, torch)


# A training script resumes with `torch.load(path, map_location=device)`; PyTorch resolves the
# location per storage, so a checkpoint without tensors (a vocabulary, a config) loads whatever
# map_location names, while one with tensors refuses CUDA on a CPU machine.
MAP_LOCATIONS = {
    "cuda": lambda T: "cuda",
    "cuda_device": lambda T: T.device("cuda:0"),
    "dict_to_cuda": lambda T: {"cpu": "cuda:0"},
    "dict_from_cuda": lambda T: {"cuda:0": "cpu"},
    "cpu": lambda T: "cpu",
}


@pytest.mark.parametrize("with_tensor", [True, False])
@pytest.mark.parametrize("name", sorted(MAP_LOCATIONS))
def test_load_map_location_checked_per_storage(torch, tmp_path, name, with_tensor):
    def load(T):
        path = tmp_path / f"{T.__name__}.pt"
        obj = {"epoch": 3, "vocab": ["a", "b"]}
        if with_tensor:
            obj["w"] = T.ones(2)
        T.save(obj, path)
        out = T.load(path, map_location=MAP_LOCATIONS[name](T))
        return sorted(out)
    assert _outcome(load, tg) == _outcome(load, torch)


# A seq2seq script passes the LSTM's hidden tensor alone where the (h, c) pair belongs;
# PyTorch indexes hx[0] and hx[1] and fails the way indexing the tensor does.
LSTM_STATE_CASES = {
    "tensor_for_pair": lambda T, z: T.nn.LSTM(3, 4)(z(5, 2, 3), z(1, 2, 4)),
    "tensor_for_pair_unbatched": lambda T, z: T.nn.LSTM(3, 4)(z(5, 3), z(1, 4)),
    "tensor_for_pair_two_layers": lambda T, z: T.nn.LSTM(3, 4, 2)(z(5, 2, 3), z(2, 2, 4)),
    "one_tuple": lambda T, z: T.nn.LSTM(3, 4)(z(5, 2, 3), (z(1, 2, 4),)),
    "three_tuple": lambda T, z: T.nn.LSTM(3, 4)(z(5, 2, 3), (z(1, 2, 4),) * 3),
    "pair_as_list": lambda T, z: T.nn.LSTM(3, 4)(z(5, 2, 3), [z(1, 2, 4)] * 2)[0].shape,
}


@pytest.mark.parametrize("name", sorted(LSTM_STATE_CASES))
def test_lstm_state_given_wrongly_fails_as_torch(torch, name):
    def call(T):
        return LSTM_STATE_CASES[name](T, lambda *shape: T.zeros(*shape))
    assert _outcome(call, tg) == _outcome(call, torch)


# The cells: an LSTM cell's state is walked and indexed as PyTorch's Python layer does before
# its kernel checks the pair; GRU and Elman cells read the hidden size from dim 1.
CELL_STATE_CASES = {
    "lstm_tensor_batched": lambda T, z: T.nn.LSTMCell(3, 4)(z(2, 3), z(2, 4)),
    "lstm_tensor_unbatched": lambda T, z: T.nn.LSTMCell(3, 4)(z(3), z(2, 4))[0].shape,
    "lstm_tensor_unbatched_one_row": lambda T, z: T.nn.LSTMCell(3, 4)(z(3), z(1, 4)),
    "lstm_one_tuple": lambda T, z: T.nn.LSTMCell(3, 4)(z(2, 3), (z(2, 4),)),
    "lstm_one_tuple_unbatched": lambda T, z: T.nn.LSTMCell(3, 4)(z(3), (z(4),)),
    "lstm_three_tuple": lambda T, z: T.nn.LSTMCell(3, 4)(z(2, 3), (z(2, 4),) * 3),
    "lstm_one_tuple_bad_input": lambda T, z: T.nn.LSTMCell(3, 4)(z(2, 5), (z(2, 4),)),
    "lstm_3d_second_state": lambda T, z: T.nn.LSTMCell(3, 4)(z(2, 3), (z(2, 4), z(1, 2, 4))),
    "lstm_1d_states_batched": lambda T, z: T.nn.LSTMCell(3, 4)(z(4, 3), (z(4), z(4))),
    "lstm_2d_states_unbatched": lambda T, z: T.nn.LSTMCell(3, 4)(z(3), (z(4, 4), z(4, 4))),
    "gru_1d_state_batched": lambda T, z: T.nn.GRUCell(3, 4)(z(4, 3), z(4)),
    "gru_2d_state_unbatched": lambda T, z: T.nn.GRUCell(3, 4)(z(3), z(2, 4)),
    "gru_2d_state_unbatched_hidden_rows": lambda T, z: T.nn.GRUCell(3, 4)(z(3), z(4, 4)),
    "rnn_2d_state_unbatched_hidden_rows": lambda T, z: T.nn.RNNCell(3, 4)(z(3), z(4, 4)).shape,
}


@pytest.mark.parametrize("name", sorted(CELL_STATE_CASES))
def test_cell_state_given_wrongly_fails_as_torch(torch, name):
    def call(T):
        return CELL_STATE_CASES[name](T, lambda *shape: T.zeros(*shape))
    assert _outcome(call, tg) == _outcome(call, torch)


# autograd.grad(..., is_grads_batched=True): a batch of vector-Jacobian products (rows of a
# Jacobian from torch.eye), as scripts computing Jacobians of a flow or an ODE field do.
def _batched(T, kind):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([1.0, 2.0], requires_grad=True)
    if kind == "eye":
        return T.autograd.grad(a * a.sin(), a, T.eye(3), is_grads_batched=True)
    if kind == "two_outputs":
        return T.autograd.grad([a * a, b * 3], [a, b], [T.ones(2, 3), T.ones(2, 2)],
                               is_grads_batched=True)
    if kind == "batch_sizes_differ":
        return T.autograd.grad([a * a, b * 3], [a, b], [T.ones(2, 3), T.ones(3, 2)],
                               is_grads_batched=True)
    if kind == "unbatched_grad_output":
        return T.autograd.grad(a * a, a, T.ones(3), is_grads_batched=True)
    if kind == "unused_allowed":
        return T.autograd.grad(a * a, [a, b], T.eye(3), is_grads_batched=True, allow_unused=True)
    if kind == "unused_materialized":
        return T.autograd.grad(a * a, [a, b], T.eye(3), is_grads_batched=True, allow_unused=True,
                               materialize_grads=True)
    if kind == "unused_refused":
        return T.autograd.grad(a * a, [a, b], T.eye(3), is_grads_batched=True)
    if kind == "create_graph":
        g, = T.autograd.grad(a ** 3, a, T.eye(3), is_grads_batched=True, create_graph=True)
        return g, T.autograd.grad(g.sum(), a)
    if kind == "graph_freed":
        out = a * a
        T.autograd.grad(out, a, T.eye(3), is_grads_batched=True)
        out.sum().backward()
    if kind == "graph_retained":
        out = a * a
        T.autograd.grad(out, a, T.eye(3), is_grads_batched=True, retain_graph=True)
        out.sum().backward()
        return a.grad
    raise AssertionError(kind)


def _values(r):
    if isinstance(r, (tuple, list)):
        return [_values(x) for x in r]
    return None if r is None else (tuple(r.shape), r.detach().numpy().round(5).tolist())


@pytest.mark.parametrize("kind", ["eye", "two_outputs", "batch_sizes_differ",
                                  "unbatched_grad_output", "unused_allowed",
                                  "unused_materialized", "unused_refused", "create_graph",
                                  "graph_freed", "graph_retained"])
def test_grad_is_grads_batched_matches_torch(torch, kind):
    def call(T):
        return _values(_batched(T, kind))
    assert _outcome(call, tg) == _outcome(call, torch)
