import torch
from torch.ao.quantization import HistogramObserver, MinMaxObserver
from torch.ao.quantization.observer import default_histogram_observer
obs = HistogramObserver(bins=256)
mm = MinMaxObserver()
for i in range(6):
    x = torch.cat([torch.linspace(-1, 1, 200) * (i + 1) * 0.5, torch.tensor([10.0 * (i % 2)])])
    obs(x)
    mm(x)
print(obs.min_val, obs.max_val)
print(obs.histogram.sum(), obs.histogram.shape)
print(obs.calculate_qparams())
print(mm.calculate_qparams())
sym = HistogramObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
sym(torch.linspace(-3, 1, 1000) ** 3)
print(sym.calculate_qparams())
d = default_histogram_observer()
d(torch.arange(100.0))
print(d.calculate_qparams(), d.quant_min, d.quant_max)
r = HistogramObserver(reduce_range=True)
r(torch.exp(torch.linspace(-4, 2, 500)))
s, z = r.calculate_qparams()
print(s, z)
q = torch.quantize_per_tensor(torch.tensor([0.0, 0.5, 1.0, 7.0]), s.item(), z.item(), torch.quint8)
print(q.int_repr(), q.dequantize())
e = HistogramObserver()
print(e.calculate_qparams())
try:
    HistogramObserver(qscheme=torch.per_channel_affine)
except NotImplementedError as err:
    print("NotImplementedError", "per_tensor_symmetric" in str(err))
