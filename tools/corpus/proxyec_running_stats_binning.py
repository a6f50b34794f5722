"""Running statistics and binning of a price series, as analysis notebooks write them with
tensors: running max/min (cummax/cummin) for drawdowns, cumulative returns, quantile bin edges
with bucketize, histograms and histc, weighted bincount sums, nan-aware summaries, sort/topk/
kthvalue/mode, and the gradient of a drawdown loss through cummax.

Written for tapegrad's proxy corpus (data wrangling domain); data from numpy's seeded
RandomState, which both libraries read identically.
"""
import numpy as np
import torch

rs = np.random.RandomState(7)
ret = torch.from_numpy(rs.normal(0.0005, 0.01, 5000).astype(np.float32))
price = 100 * torch.cumprod(1 + ret, 0)
print("last price", price[-1].item())
peak = torch.cummax(price, 0)
drawdown = price / peak.values - 1
print("max drawdown", drawdown.min().item(), "at", drawdown.argmin().item(),
      "peak idx", peak.indices[drawdown.argmin()].item())
trough = torch.cummin(price, 0)
print("new lows", torch.unique(trough.indices).numel(), "new highs", torch.unique(peak.indices).numel())
print("log cum", torch.logcumsumexp(torch.log1p(ret[:10]), 0).tolist())

edges = torch.quantile(ret, torch.tensor([0.2, 0.4, 0.6, 0.8]))
print("edges", edges.tolist())
bucket = torch.bucketize(ret, edges)
print("bucket counts", torch.bincount(bucket).tolist())
print("bucket sums", torch.bincount(bucket, weights=ret).tolist())
print("right", torch.bincount(torch.bucketize(ret, edges, right=True)).tolist())
print("searchsorted", torch.searchsorted(edges, torch.tensor([-0.01, 0.0, 0.01])).tolist())
print("histc", torch.histc(ret, bins=6, min=-0.03, max=0.03).tolist())
h = torch.histogram(ret[:200], bins=5, weight=ret[:200].abs())
print("hist", h.hist.tolist())
print("density", torch.histogram(ret, bins=5, density=True).hist.tolist())

vol = ret.unfold(0, 20, 20).std(1)
vol[::7] = float("nan")
print("nan vol", torch.isnan(vol).sum().item(), vol.nanmean().item(), vol.nanmedian().item(),
      torch.nansum(vol).item(), torch.nanquantile(vol, 0.9).item())
print("top days", torch.topk(ret, 3).indices.tolist(), "3rd worst", torch.kthvalue(ret, 3).values.item())
sign = torch.sign(ret).long()
print("mode sign", torch.mode(sign).values.item(), "median", ret.median().item())
print("sorted head", torch.sort(sign[:12], stable=True).indices.tolist())
print("month table", torch.mode(sign[:4800].view(-1, 20), dim=1).values[:8].tolist())

r = ret[:50].double().requires_grad_()
p = torch.cumprod(1 + r, 0)
dd = (p / torch.cummax(p, 0).values - 1)
loss = -dd.min()
loss.backward()
print("loss", round(loss.item(), 8), "grad nonzero", int((r.grad != 0).sum()), "grad sum", round(r.grad.sum().item(), 6))
