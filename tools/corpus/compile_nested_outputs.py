"""torch.compile on modules and functions whose outputs nest: an nn.LSTM compiled and called
directly (`out, (h, c) = lstm(x)`), a batch-first GRU, a HuggingFace-style forward returning a
dict of tensors (with None entries), torch.return_types from max/topk, and a tensor returned
twice.  A few training steps each; the printout is values, types and shapes (fixed weights and
data, so it does not depend on the random stream)."""
import torch
import torch.nn as nn


def fill(module, scale):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(torch.linspace(-scale, scale, p.numel()).reshape(p.shape).cos() * scale
                    * (1 + 0.1 * i))


lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True)
fill(lstm, 0.5)
compiled_lstm = torch.compile(lstm, backend="eager")
opt = torch.optim.SGD(lstm.parameters(), lr=0.1)
x = torch.linspace(-1, 1, 2 * 5 * 3).reshape(2, 5, 3)
for step in range(3):
    opt.zero_grad()
    out, (h, c) = compiled_lstm(x * (1 + step))
    loss = out.square().mean() + h.sum() * 0.1 - c.abs().mean()
    loss.backward()
    opt.step()
    print(step, type(out).__name__, tuple(out.shape), tuple(h.shape), tuple(c.shape),
          f"{loss.item():.5f}", f"{lstm.weight_hh_l0.grad.abs().sum().item():.5f}")

gru = nn.GRU(3, 4, batch_first=True)
fill(gru, 0.4)
compiled_gru = torch.compile(gru, backend="eager")
h0 = torch.full((1, 2, 4), 0.1)
for step in range(3):
    xs = (x + step).requires_grad_()
    out, h = compiled_gru(xs, h0)
    (out.sin().sum() + h.square().sum()).backward()
    print("gru", step, tuple(out.shape), f"{out.sum().item():.5f}", f"{xs.grad.sum().item():.5f}")


class TinyEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 6)
        self.head = nn.Linear(6, 2)

    def forward(self, x, labels=None):
        hidden = torch.tanh(self.embed(x))
        logits = self.head(hidden)
        loss = None if labels is None else nn.functional.cross_entropy(
            logits.reshape(-1, 2), labels.reshape(-1))
        return {"loss": loss, "logits": logits, "hidden_states": (x, hidden), "attentions": None}


enc = TinyEncoder()
fill(enc, 0.3)
compiled_enc = torch.compile(enc, backend="eager")
labels = (torch.arange(10).reshape(2, 5) % 2)
eopt = torch.optim.Adam(enc.parameters(), lr=0.01)
for step in range(3):
    eopt.zero_grad()
    outputs = compiled_enc(x + 0.5 * step, labels=labels)
    outputs["loss"].backward()
    eopt.step()
    print("enc", step, sorted(outputs), outputs["attentions"], len(outputs["hidden_states"]),
          f"{outputs['loss'].item():.5f}", f"{outputs['logits'].mean().item():.5f}")


@torch.compile(backend="eager")
def summarize(t):
    s = t.tanh()
    return torch.max(s, dim=1), s.topk(2, dim=-1), (s, s)


for step in range(3):
    t = torch.linspace(-2, 2, 12).reshape(3, 4) * (step + 1)
    top, k2, (a, b) = summarize(t)
    print("max", type(top).__name__, top.values.tolist(), top.indices.tolist(),
          [round(v, 4) for v in k2.values.flatten().tolist()], a is b)
