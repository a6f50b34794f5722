"""yangyutu's TorchBasic RNN/GRU layer notebooks (107_5, 107_7): an nn.RNN / nn.GRU layer and an
nn.RNNCell / nn.GRUCell sharing its weights (copied through state dicts and .data), the cell
unrolled over the sequence by hand, and the check the notebooks print:
torch.all(torch.eq(hCell, h_1)) -- PyTorch's CPU layer runs its cell's ops at each step, so the
two agree bit for bit.  Also batch_first and a two-layer bidirectional layer against cells per
layer and direction; weights and data from numpy (the same in both libraries)."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(107)


def fill(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.4, 0.4, tuple(p.shape)), dtype=torch.float32))


def unroll(cell, x, h, reverse=False):
    outs = [None] * x.shape[0]
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h = cell(x[t], h)
        outs[t] = h
    return torch.stack(outs), h


for kind in ("RNN", "GRU"):
    inputSize, hiddenSize, seqLen, batchSize = 10, 20, 6, 3
    layer = getattr(nn, kind)(input_size=inputSize, hidden_size=hiddenSize, num_layers=1)
    fill(layer)
    cell = getattr(nn, kind + "Cell")(inputSize, hiddenSize)
    cell.weight_ih.data = layer.weight_ih_l0.data
    cell.weight_hh.data = layer.weight_hh_l0.data
    cell.bias_ih.data = layer.bias_ih_l0.data
    cell.bias_hh.data = layer.bias_hh_l0.data
    x = torch.tensor(rng.standard_normal((seqLen, batchSize, inputSize)), dtype=torch.float32)
    h0 = torch.tensor(rng.standard_normal((1, batchSize, hiddenSize)), dtype=torch.float32)
    output, h_1 = layer(x, h0)
    outCell, hCell = unroll(cell, x, h0[0])
    print(kind, "output", tuple(output.shape), "h_1", tuple(h_1.shape))
    print(kind, "layer == cell loop:", torch.all(torch.eq(hCell, h_1[0])),
          torch.all(torch.eq(outCell, output)))
    print(kind, "last h[0, :4]:", [round(v, 5) for v in h_1[0, 0, :4].tolist()])

    # batch_first, bigger sizes, no initial state
    layer = getattr(nn, kind)(32, 64, batch_first=True)
    fill(layer)
    cell = getattr(nn, kind + "Cell")(32, 64)
    cell.load_state_dict({k.replace("_l0", ""): v for k, v in layer.state_dict().items()})
    x = torch.tensor(rng.standard_normal((8, 12, 32)), dtype=torch.float32)
    output, h_n = layer(x)
    outCell, hCell = unroll(cell, x.transpose(0, 1), torch.zeros(8, 64))
    print(kind, "batch_first equal:", torch.equal(outCell.transpose(0, 1), output),
          torch.equal(hCell, h_n[0]))

    # two layers, bidirectional
    layer = getattr(nn, kind)(16, 24, num_layers=2, bidirectional=True)
    fill(layer)
    x = torch.tensor(rng.standard_normal((7, 4, 16)), dtype=torch.float32)
    output, h_n = layer(x)
    inp, finals = x, []
    for li in range(2):
        outs = []
        for d, suffix in enumerate(("", "_reverse")):
            cell = getattr(nn, kind + "Cell")(inp.shape[-1], 24)
            cell.load_state_dict({name: getattr(layer, name + f"_l{li}" + suffix)
                                  for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")})
            o, h = unroll(cell, inp, torch.zeros(4, 24), reverse=d == 1)
            outs.append(o)
            finals.append(h)
        inp = torch.cat(outs, -1)
    print(kind, "bidirectional 2-layer equal:", torch.equal(inp, output),
          torch.equal(torch.stack(finals), h_n))
    loss = output.pow(2).mean()
    loss.backward()
    print(kind, "loss", round(loss.item(), 5), "grad norm",
          round(layer.weight_hh_l0.grad.norm().item(), 4))
