"""Training curves and images drawn straight from tensors, as matplotlib tutorials do: plot,
scatter with c=labels, stem, imshow and hist of tensors, and the error PyTorch gives when a
tensor that requires grad is handed to matplotlib.  Figures go to memory (Agg backend)."""
import io

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

torch.manual_seed(0)
x = torch.linspace(-2, 2, 50).unsqueeze(1)
y = x.pow(3) - x + 0.1 * torch.randn(x.size())
labels = (y > 0).long().squeeze(1)

model = torch.nn.Sequential(torch.nn.Linear(1, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []
for epoch in range(200):
    opt.zero_grad()
    pred = model(x)
    loss = torch.nn.functional.mse_loss(pred, y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print("loss fell tenfold:", losses[-1] < losses[0] / 10)

fig, axes = plt.subplots(2, 3, figsize=(9, 5))
line, = axes[0, 0].plot(x, y)
axes[0, 0].plot(x, pred.detach(), "r-")
print("line data:", type(line.get_xdata()).__name__, line.get_ydata().shape, line.get_ydata().dtype)
sc = axes[0, 1].scatter(x.squeeze(1), y.squeeze(1), c=labels, cmap="coolwarm")
print("scatter colours:", sc.get_array().dtype, sc.get_array()[:8].tolist())
stem = axes[0, 2].stem(torch.arange(5), torch.tensor([0.5, -1.0, 2.0, 0.0, 1.5]))
print("stem heads:", stem.markerline.get_ydata().tolist())
img = axes[1, 0].imshow(torch.arange(12.0).reshape(3, 4))
print("image:", img.get_array().shape, img.get_array().dtype)
counts, edges, _ = axes[1, 1].hist(torch.tensor([0.1, 0.4, 0.45, 0.8, 0.9, 0.95]), bins=3)
print("hist counts:", counts.tolist(), "edges:", np.round(edges, 3).tolist())
axes[1, 2].plot(losses)
axes[1, 2].set_title(f"loss {losses[-1]:.3f}")
try:
    axes[1, 2].plot(x, pred)           # pred still requires grad
except RuntimeError as e:
    print("RuntimeError:", e)
buf = io.BytesIO()
fig.savefig(buf, format="png")
print("png written:", buf.getvalue()[:4] == b"\x89PNG")
plt.close(fig)
