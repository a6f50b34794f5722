"""Tabular regression the way pandas tutorials feed PyTorch: columns of a DataFrame turned into
tensors with torch.tensor(df[col]) (each keeps its dtype: float64, int32, int8 category codes),
a shuffled split whose index is no longer 0..n-1, and the refusals PyTorch gives for a frame."""
import numpy as np
import pandas as pd
import torch

rng = np.random.default_rng(0)
n = 40
df = pd.DataFrame({
    "area": rng.uniform(30.0, 120.0, n).round(1),
    "rooms": rng.integers(1, 5, n).astype("int32"),
    "city": pd.Categorical(rng.choice(["north", "south", "east"], n)),
})
df["price"] = 1.5 * df["area"] + 10.0 * df["rooms"] + df["city"].cat.codes * 5.0

area = torch.tensor(df["area"])
rooms = torch.tensor(df["rooms"])
codes = torch.tensor(df["city"].cat.codes)
price = torch.as_tensor(df["price"])
print("dtypes:", area.dtype, rooms.dtype, codes.dtype, price.dtype)
print("first rows:", area[:3], rooms[:3], codes[:3])

onehot = torch.nn.functional.one_hot(codes.long(), 3).to(torch.float64)
X = torch.cat([area.unsqueeze(1) / 100.0, rooms.unsqueeze(1).to(torch.float64), onehot], dim=1)
y = price.unsqueeze(1)
print("X:", X.shape, X.dtype)

# least squares in float64, solved exactly, then checked by gradient descent steps
w = torch.linalg.lstsq(X, y).solution
print("lstsq weights:", [round(v, 6) + 0.0 for v in w.squeeze(1).tolist()])
print("exact fit:", (X @ w - y).abs().max().item() < 1e-9)

w_gd = torch.zeros(X.shape[1], 1, dtype=torch.float64, requires_grad=True)
opt = torch.optim.SGD([w_gd], lr=0.01)
for step in range(201):
    opt.zero_grad()
    loss = ((X @ w_gd - y) ** 2).mean()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step:3d} loss {loss.item():.4f} grad norm {w_gd.grad.norm().item():.4f}")

shuffled = df.sample(frac=1.0, random_state=1)
print("shuffled index starts:", list(shuffled.index[:4]))
print("values in row order:", torch.tensor(shuffled["area"])[:4])
print("through .values:", torch.tensor(shuffled["area"].values)[:4].dtype)
test = shuffled.iloc[30:]
for label, data in [("test split", test["area"]), ("frame", df[["area", "rooms"]]),
                    ("row", df.iloc[0])]:
    try:
        torch.tensor(data)
    except Exception as e:
        print(label, "->", type(e).__name__, e)
print("frame values:", torch.tensor(df[["area", "price"]].values).dtype,
      torch.FloatTensor(df[["area", "price"]].values).shape)
print("list of columns:", torch.tensor([df["area"][:3], df["price"][:3]]))
