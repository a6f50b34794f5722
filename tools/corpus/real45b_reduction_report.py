"""Per-class statistics of a small labelled sample, the way course notebooks summarise a data
set before training: reductions over dims with keepdim, tensor_split into folds, numpy and
pandas views of the result, and the error a reader meets when a reduction gets a bad keyword."""
import numpy as np
import pandas as pd
import torch

features = torch.tensor([[5.1, 3.5, 1.4], [4.9, 3.0, 1.4], [6.2, 2.9, 4.3],
                         [5.9, 3.0, 5.1], [6.3, 3.3, 6.0], [5.8, 2.7, 4.1]])
labels = torch.tensor([0, 0, 1, 2, 2, 1])

for c in labels.unique():
    rows = features[labels == c]
    print(f"class {int(c)}: n={rows.shape[0]} mean={rows.mean(0)} sum={rows.sum(dim=0)}")
    print("   prod of first column:", rows[:, 0].prod().item().__round__(4))

centred = features - features.mean(dim=0, keepdim=True)
print("centred column sums ~0:", torch.allclose(centred.sum(0), torch.zeros(3), atol=1e-5))
print("per-row norms:", centred.pow(2).sum(1).sqrt())

folds = torch.tensor_split(torch.arange(len(labels)), 3)
for k, idx in enumerate(folds):
    print(f"fold {k}: idx={idx.tolist()} label mean={labels[idx].float().mean():.3f}")
print("hsplit columns:", [t.shape for t in features.hsplit(3)])

frame = pd.DataFrame(features.numpy(), columns=["sepal_l", "sepal_w", "petal_l"])
frame["label"] = labels.numpy()
print(frame.groupby("label").mean().round(3))
print("np.mean of numpy view:", np.mean(features.numpy(), axis=0).round(3))

try:
    torch.mean(features, dims=0)
except TypeError as err:
    print("TypeError:", str(err).strip().replace("\n", " | "))
try:
    features.tensor_split()
except TypeError as err:
    print("TypeError:", str(err).strip().replace("\n", " | "))
