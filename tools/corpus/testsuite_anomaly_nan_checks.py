# NaN / inf checks and anomaly detection in tests
import warnings
import torch
import torch.nn as nn

x = torch.tensor([1.0, 0.0, -1.0], requires_grad=True)
y = torch.sqrt(x)
print(y, torch.isnan(y).any().item(), torch.isnan(y).sum().item())
print(torch.isfinite(torch.tensor([1.0, float("inf"), float("nan")])))
print(torch.isinf(torch.tensor([1.0, float("inf"), -float("inf")])))
print(torch.isposinf(torch.tensor([1.0, float("inf"), -float("inf")])), torch.isneginf(torch.tensor([-float("inf")])))
print(torch.nan_to_num(torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0])))
print(torch.nan_to_num(torch.tensor([float("nan"), float("inf")]), nan=0.0, posinf=1e4))

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with torch.autograd.detect_anomaly():
        a = torch.tensor([0.0, 1.0], requires_grad=True)
        out = (a / a).sum()
        try:
            out.backward()
        except RuntimeError as e:
            print("anomaly:", e)
        b = torch.tensor([4.0], requires_grad=True)
        torch.sqrt(b).backward()
        print("grad ok:", b.grad)
print("anomaly enabled:", torch.is_anomaly_enabled())
torch.autograd.set_detect_anomaly(True)
print("anomaly enabled:", torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
torch.autograd.set_detect_anomaly(False)
print("anomaly enabled:", torch.is_anomaly_enabled())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with torch.autograd.detect_anomaly(check_nan=False):
        a = torch.tensor([0.0], requires_grad=True)
        (a / a).backward()
        print("no check:", a.grad)

m = nn.Linear(3, 1)
with torch.no_grad():
    m.weight.fill_(float("nan"))
m(torch.ones(2, 3)).sum().backward()
bad = [n for n, p in m.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
print("params with non-finite grads:", bad)
try:
    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("clip:", e)
n = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
print("norm:", n)

# hook that checks grads
def check_hook(g):
    assert not torch.isnan(g).any(), "nan gradient!"
    return g
z = torch.tensor([1.0, 2.0], requires_grad=True)
z.register_hook(check_hook)
(z * 3).sum().backward()
print(z.grad)
w = torch.tensor([0.0], requires_grad=True)
w.register_hook(check_hook)
try:
    torch.log(w).mul(0).sum().backward()
except AssertionError as e:
    print("AssertionError:", e)
print(torch.tensor([float("nan")]) == torch.tensor([float("nan")]))
print(torch.tensor(float("nan")).isnan(), torch.tensor([1.0, float('nan')]).nansum(), torch.tensor([1.0, float('nan'), 3.0]).nanmean())
