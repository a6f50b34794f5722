"""PyTorchStepByStep chapter 8 style: variable-length sequences padded and packed through a
batch-first RNN and GRU (weights set from a fixed pattern, so the run is seed-free): padded vs
packed final hidden states, pad_packed_sequence with the original order restored, the last
real output of each sequence, and the grad_fn of every printed output."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.utils.rnn as rnn_utils

points = np.array([[[1.0349, 0.9661], [0.8055, -0.9169], [-0.8251, -0.9499], [-0.8670, 0.9342]],
                   [[1.0185, -1.0739], [1.0035, 0.9806], [-1.1247, -0.9683], [-1.0771, -1.0414]],
                   [[-1.0911, 0.9254], [-1.0157, -0.9871], [0.8182, -0.9944], [1.0081, 0.7680]]])
s0 = points[0]      # 4 data points
s1 = points[1][2:]  # 2 data points
s2 = points[2][1:]  # 3 data points
print(s0.shape, s1.shape, s2.shape)

all_seqs = [s0, s1, s2]
seq_tensors = [torch.as_tensor(seq).float() for seq in all_seqs]
padded = rnn_utils.pad_sequence(seq_tensors, batch_first=True)
print(padded)


def fixed_weights(module):
    with torch.no_grad():
        for k, (name, p) in enumerate(module.named_parameters()):
            p.copy_(torch.linspace(-0.6, 0.5, p.numel()).view_as(p).roll(k))
    return module


for kind in (nn.RNN, nn.GRU):
    print("==", kind.__name__)
    rnn = fixed_weights(kind(2, 2, batch_first=True))
    output_padded, hidden_padded = rnn(padded)
    print(output_padded)
    print(hidden_padded.permute(1, 0, 2))

    packed = rnn_utils.pack_sequence(seq_tensors, enforce_sorted=False)
    print(packed)
    print((packed.data[[0, 3, 6, 8]] == seq_tensors[0]).all())
    output_packed, hidden_packed = rnn(packed)
    print(output_packed, hidden_packed)
    print(hidden_packed == hidden_padded)
    print(output_packed.data[[2, 5]])   # x1 sequence

    output_unpacked, seq_sizes = rnn_utils.pad_packed_sequence(output_packed, batch_first=True)
    print(output_unpacked, seq_sizes)
    print(output_unpacked[:, -1])
    seq_idx = torch.arange(seq_sizes.size(0))
    print(output_unpacked[seq_idx, seq_sizes - 1])

    len_seqs = [len(seq) for seq in all_seqs]
    packed = rnn_utils.pack_padded_sequence(padded, len_seqs, enforce_sorted=False,
                                            batch_first=True)
    print(packed)
    out, _ = rnn(packed)
    unpacked, sizes = rnn_utils.pad_packed_sequence(out, batch_first=False)
    print(unpacked.shape, unpacked.grad_fn.name(), sizes)
    loss = unpacked.pow(2).sum()
    loss.backward()
    for name, p in rnn.named_parameters():
        print(name, p.grad)

# in-place shape changes name their own backward nodes
h = hidden_padded * 1
print(h.transpose_(0, 1).grad_fn.name(), h.squeeze_().grad_fn.name(),
      h.unsqueeze_(0).grad_fn.name())
print(h.squeeze_(0).t_().grad_fn.name(), h.shape)
