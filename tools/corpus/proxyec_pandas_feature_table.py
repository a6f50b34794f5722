"""A pandas table turned into model tensors the way tabular tutorials do it: columns read with
torch.tensor(df[col]) (a Series, each value keeping its dtype), .values and .to_numpy(), NaN
imputation with nanmedian/nanmean and torch.where, standardisation, category codes to one-hot,
per-category rates with scatter_reduce checked against pandas' groupby, weighted histograms,
and the results put back into a DataFrame.

Written for tapegrad's proxy corpus (data wrangling domain); data from a seeded numpy
generator, which both libraries read identically.
"""
import numpy as np
import pandas as pd
import torch

rng = np.random.default_rng(0)
df = pd.DataFrame({
    "age": rng.integers(18, 80, 12).astype(float),
    "income": rng.normal(50000, 15000, 12).round(0),
    "visits": rng.integers(0, 5, 12).astype(np.int32),
    "city": rng.choice(["NY", "SF", "LA"], 12),
    "clicked": rng.integers(0, 2, 12),
})
df.loc[[2, 7], "age"] = np.nan

age = torch.tensor(df["age"])
visits = torch.tensor(df["visits"])
print(age.dtype, visits.dtype, torch.as_tensor(df["clicked"]).dtype)
print("missing", torch.isnan(age).sum().item())
num = torch.tensor(df[["age", "income"]].values, dtype=torch.float32)
med = num.nanmedian(dim=0).values
num = torch.where(num.isnan(), med, num)
print("medians", med)
z = (num - num.mean(0)) / num.std(0)
print("z mean ~0:", bool(z.mean(0).abs().max() < 1e-5), "std", z.std(0))
print("age filled", torch.nan_to_num(age, nan=age.nanmean().item()))

codes = torch.tensor(df["city"].astype("category").cat.codes)
print("codes", codes, codes.dtype)
cats = list(df["city"].astype("category").cat.categories)
oh = torch.nn.functional.one_hot(codes.long(), num_classes=len(cats)).float()
y = torch.tensor(df["clicked"])
X = torch.cat([z, oh, visits.unsqueeze(1)], dim=1)
print("X", X.shape, X.dtype)

rate = torch.zeros(len(cats)).scatter_reduce(0, codes.long(), y.float(), "mean", include_self=False)
print("rate", rate.tolist())
print("pandas", df.groupby("city")["clicked"].mean().round(6).tolist())
print("visits per city", torch.zeros(len(cats), dtype=torch.int32).index_add_(0, codes.long(), visits))

h = torch.histogram(torch.tensor(df["income"], dtype=torch.float32), bins=4,
                    weight=torch.tensor(df["visits"], dtype=torch.float32))
print("income hist", h.hist.tolist(), h.bin_edges.round(decimals=1).tolist())
print("density", torch.histogram(num[:, 1], bins=3, density=True).hist.tolist())

try:
    torch.tensor(df["city"])
except ValueError as e:
    print("ValueError", e)
try:
    torch.tensor(pd.Series([1.5, None], dtype="Float64"))
except RuntimeError as e:
    print("RuntimeError", e)

out = pd.DataFrame(X.numpy(), columns=["age", "income"] + cats + ["visits"])
print(out.round(3).head(4).to_string())
print(pd.Series(codes.numpy()).value_counts().sort_index().tolist(), torch.bincount(codes.long()).tolist())
