"""LRU (Orvieto et al., a common PyTorch port): exp-parametrised complex eigenvalues, complex B/C
parameters, per-step recurrence, Adam on complex parameters; then every optimizer on a complex
parameter, clip_grad_norm_/clip_grad_value_ on complex gradients, view_as_real/complex. numpy values."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
import numpy as np
_rng = np.random.default_rng(0)
def nrandn(*shape, scale=1.0, dtype=None):
    a = _rng.standard_normal(shape) * scale
    t = torch.tensor(a.astype(np.float32))
    return t if dtype is None else t.to(dtype)
def nrand(*shape):
    return torch.tensor(_rng.random(shape).astype(np.float32))
def npinit(model, scale=0.3):
    with torch.no_grad():
        for p in model.parameters():
            if p.is_complex():
                re = _rng.standard_normal(tuple(p.shape)) * scale
                im = _rng.standard_normal(tuple(p.shape)) * scale
                p.copy_(torch.complex(torch.tensor(re.astype(np.float32)), torch.tensor(im.astype(np.float32))).to(p.dtype))
            else:
                p.copy_(torch.tensor((_rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)).to(p.dtype))
# LRU: Linear Recurrent Unit (Orvieto et al.)
class LRU(nn.Module):
    def __init__(self, in_features, out_features, state_features, rmin=0.0, rmax=1.0, max_phase=6.283):
        super().__init__()
        self.out_features = out_features
        self.D = nn.Parameter(torch.randn([out_features, in_features]) / math.sqrt(in_features))
        u1 = torch.rand(state_features)
        u2 = torch.rand(state_features)
        self.nu_log = nn.Parameter(torch.log(-0.5 * torch.log(u1 * (rmax + rmin) * (rmax - rmin) + rmin ** 2)))
        self.theta_log = nn.Parameter(torch.log(max_phase * u2))
        Lambda_mod = torch.exp(-torch.exp(self.nu_log))
        self.gamma_log = nn.Parameter(torch.log(torch.sqrt(torch.ones_like(Lambda_mod) - torch.square(Lambda_mod))))
        B_re = torch.randn([state_features, in_features]) / math.sqrt(2 * in_features)
        B_im = torch.randn([state_features, in_features]) / math.sqrt(2 * in_features)
        self.B = nn.Parameter(torch.complex(B_re, B_im))
        C_re = torch.randn([out_features, state_features]) / math.sqrt(state_features)
        C_im = torch.randn([out_features, state_features]) / math.sqrt(state_features)
        self.C = nn.Parameter(torch.complex(C_re, C_im))
        self.state = torch.complex(torch.zeros(state_features), torch.zeros(state_features))

    def forward(self, input):
        self.state = self.state.to(self.B.device)
        Lambda_mod = torch.exp(-torch.exp(self.nu_log))
        Lambda_re = Lambda_mod * torch.cos(torch.exp(self.theta_log))
        Lambda_im = Lambda_mod * torch.sin(torch.exp(self.theta_log))
        Lambda = torch.complex(Lambda_re, Lambda_im)
        gammas = torch.exp(self.gamma_log).unsqueeze(-1).to(self.B.device)
        output = torch.empty([i for i in input.shape[:-1]] + [self.out_features], device=self.B.device)
        if input.dim() == 3:
            for i, batch in enumerate(input):
                out_seq = torch.empty(input.shape[1], self.out_features)
                for j, step in enumerate(batch):
                    self.state = (Lambda * self.state + gammas * self.B @ step.to(dtype=self.B.dtype))
                    out_step = (self.C @ self.state).real + self.D @ step
                    out_seq[j] = out_step
                self.state = torch.complex(torch.zeros_like(self.state.real), torch.zeros_like(self.state.real))
                output[i] = out_seq
        return output

lru = LRU(3, 2, 6)
with torch.no_grad():
    lru.nu_log.copy_(torch.log(-0.5 * torch.log(0.5 + 0.4 * nrand(6))))
    lru.theta_log.copy_(torch.log(6.283 * nrand(6)))
    lru.gamma_log.copy_(torch.log(torch.sqrt(1 - torch.exp(-torch.exp(lru.nu_log)) ** 2)))
    lru.B.copy_(torch.complex(nrandn(6, 3, scale=0.4), nrandn(6, 3, scale=0.4)))
    lru.C.copy_(torch.complex(nrandn(2, 6, scale=0.4), nrandn(2, 6, scale=0.4)))
    lru.D.copy_(nrandn(2, 3, scale=0.5))
print(lru.B.dtype, lru.B.shape, lru.B.is_complex(), lru.nu_log.is_complex())
x = nrandn(2, 5, 3)
y = lru(x)
print(y.shape, y.dtype)
print(y.detach().numpy().round(4))
y.sum().backward()
for n, p in lru.named_parameters():
    print(n, p.grad.dtype, p.grad.shape, np.round(p.grad.abs().sum().item(), 4))
print(lru.B.grad[:2])

opt = torch.optim.Adam(lru.parameters(), lr=1e-2)
target = nrandn(2, 5, 2)
for it in range(10):
    opt.zero_grad()
    loss = F.mse_loss(lru(x), target)
    loss.backward()
    opt.step()
    if it % 3 == 0:
        print(it, round(loss.item(), 5))
print(lru.B.dtype, lru.B.detach()[0])

# -- complex parameters in optimizers and clipping --
def make():
    w = nn.Parameter(torch.complex(nrandn(4, 3), nrandn(4, 3)))
    return w
target = torch.complex(nrandn(4, 3), nrandn(4, 3))
for name, cls, kw in [("SGD", torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                      ("SGDwd", torch.optim.SGD, dict(lr=0.1, weight_decay=0.1, nesterov=True, momentum=0.5)),
                      ("Adam", torch.optim.Adam, dict(lr=0.05)),
                      ("AdamW", torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1)),
                      ("Adamams", torch.optim.Adam, dict(lr=0.05, amsgrad=True)),
                      ("RMSprop", torch.optim.RMSprop, dict(lr=0.01)),
                      ("Adagrad", torch.optim.Adagrad, dict(lr=0.1)),
                      ("Adadelta", torch.optim.Adadelta, dict(lr=1.0)),
                      ("Adamax", torch.optim.Adamax, dict(lr=0.05)),
                      ("NAdam", torch.optim.NAdam, dict(lr=0.05)),
                      ("RAdam", torch.optim.RAdam, dict(lr=0.05))]:
    _rng = np.random.default_rng(1)
    w = make()
    opt = cls([w], **kw)
    for i in range(5):
        opt.zero_grad()
        loss = (w - target).abs().pow(2).sum()
        loss.backward()
        opt.step()
    st = opt.state[w]
    print(name, round(loss.item(), 4), w.dtype, sorted(k for k in st.keys()),
          [ (k, v.dtype) for k, v in sorted(st.items()) if torch.is_tensor(v)])
w = make()
w2 = nn.Parameter(nrandn(3))
((w.abs() ** 2).sum() + w2.sum()).backward()
print(w.grad.dtype, w.grad[0])
n = torch.nn.utils.clip_grad_norm_([w, w2], 1.0)
print(n.dtype, round(n.item(), 4), w.grad.abs().max().item() <= 1.0)
try:
    torch.nn.utils.clip_grad_value_([w], 0.1)
except NotImplementedError as e:
    print('NotImplementedError', e)
print(w.grad[0])
wr = torch.view_as_real(w)
print(wr.shape, wr.dtype, wr.requires_grad, wr.is_leaf)
g = torch.view_as_real(w.grad)
print(g.shape, g.stride())
print(torch.view_as_complex(torch.tensor([[1., 2.], [3., 4.]])))
try:
    torch.view_as_complex(torch.ones(3, 3))
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
try:
    torch.view_as_complex(torch.ones(2, 4)[:, ::2])
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
try:
    torch.view_as_complex(torch.ones(2, 2, dtype=torch.int64))
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
try:
    torch.view_as_complex(torch.arange(7.)[1:].view(3, 2))   # odd storage offset
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
print(torch.view_as_complex(torch.arange(8.)[2:].view(3, 2)))
try:
    torch.view_as_real(torch.ones(3))
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
z = torch.complex(nrandn(3), nrandn(3)).requires_grad_()
try:
    z.sum().backward()
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
pol = torch.polar(torch.tensor([1.0, 2.0]), torch.tensor([0.0, math.pi / 2]))
print(pol)
a = nrandn(3).requires_grad_()
th = nrandn(3).requires_grad_()
p = torch.polar(a.abs(), th)
(p.real.sum() + p.imag.pow(2).sum()).backward()
print(a.grad, th.grad)
zz = torch.complex(nrandn(3), nrandn(3)).requires_grad_()
(zz.angle().sum() + zz.abs().sum() + (zz * zz.conj()).real.sum()).backward()
print(zz.grad)

