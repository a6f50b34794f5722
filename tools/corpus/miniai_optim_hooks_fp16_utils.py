"""fastai course22p2 (miniai 12_accel_sgd) and course-v3 (08_data_block, 10c_fp16) idioms: an SGD
subclass with momentum and weight decay driven by a callback-style loop, optimizer step and
state-dict hooks, the listing of an optimizer's public names, schedulers; fp16 master weights
flattened with torch._utils and copied back; an image's bytes turned into a tensor with
ByteStorage.from_buffer. Weights and data from numpy: both libraries see the same."""
import numpy as np
import torch
from torch import nn, optim
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from torch.nn.utils import parameters_to_vector
from torch.optim import lr_scheduler

rng = np.random.RandomState(1)
x = torch.tensor(rng.randn(32, 6).astype(np.float32))
y = torch.tensor(rng.randint(0, 3, 32))


def get_model():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.randn(*p.shape).astype(np.float32) * 0.3))
    return model


class SGD:
    def __init__(self, params, lr, wd=0.):
        params = list(params)
        self.params, self.lr, self.wd, self.i = params, lr, wd, 0

    def step(self):
        with torch.no_grad():
            for p in self.params:
                self.reg_step(p)
                self.opt_step(p)
        self.i += 1

    def opt_step(self, p): p -= p.grad * self.lr
    def reg_step(self, p):
        if self.wd != 0: p *= 1 - self.lr * self.wd

    def zero_grad(self):
        for p in self.params: p.grad.data.zero_()


class Momentum(SGD):
    def __init__(self, params, lr, wd=0., mom=0.9):
        super().__init__(params, lr=lr, wd=wd)
        self.mom = mom

    def opt_step(self, p):
        if not hasattr(p, 'grad_avg'): p.grad_avg = torch.zeros_like(p.grad)
        p.grad_avg = p.grad_avg * self.mom + p.grad * (1 - self.mom)
        p -= self.lr * p.grad_avg


def fit(model, opt, epochs, sched=None):
    loss_func = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for i in range(0, 32, 8):
            loss = loss_func(model(x[i:i + 8]), y[i:i + 8])
            loss.backward()
            opt.step()
            opt.zero_grad()
            if sched is not None: sched.step()
        with torch.no_grad():
            acc = (model(x).argmax(1) == y).float().mean()
        print(epoch, f"{loss.item():.4f}", f"{acc.item():.4f}")


model = get_model()
fit(model, Momentum(model.parameters(), lr=0.1, wd=1e-4), 2)

# torch.optim with hooks
model = get_model()
opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=1e-4)
print(' '.join(o for o in dir(opt) if o.startswith('register_')))
log = []
opt.register_step_pre_hook(lambda o, args, kwargs: log.append(f"pre lr={o.param_groups[0]['lr']:.4f}"))
handle = opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))
sched = lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=8)
fit(model, opt, 2, sched)
print(log[:4], len(log))
handle.remove()
opt.register_state_dict_post_hook(lambda o, sd: {**sd, "note": "saved"})
opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "note"})
sd = opt.state_dict()
print(sorted(sd), sorted(sd["state"][0]), [round(g["lr"], 6) for g in sd["param_groups"]])
opt2 = optim.SGD(get_model().parameters(), lr=0.01, momentum=0.9)
opt2.load_state_dict(sd)
print(round(opt2.param_groups[0]["lr"], 6), torch.equal(opt2.state_dict()["state"][1]["momentum_buffer"],
                                                        sd["state"][1]["momentum_buffer"]))

# 10c_fp16: a half-precision model with float32 master weights in one flat buffer
model = get_model().half()
model_params = [p for p in model.parameters() if p.requires_grad]
master = parameters_to_vector([p.data.float() for p in model_params])
master = nn.Parameter(master, requires_grad=True)
print(master.dtype, master.shape, master.is_leaf)
flat = _flatten_dense_tensors([p.data.float() for p in model_params])
print(torch.equal(flat, master.data))
loss = model(x.half()).float().pow(2).mean()
loss.backward()
master.grad = _flatten_dense_tensors([p.grad.float() for p in model_params])
with torch.no_grad():
    master -= 0.1 * master.grad
for p, m in zip(model_params, _unflatten_dense_tensors(master.data, model_params)):
    p.data.copy_(m)
print([tuple(p.shape) for p in model_params], model_params[0].dtype)
print(round(model(x.half()).float().pow(2).mean().item(), 2))

# 08_data_block: the bytes of an RGB image (h, w, 3) as a channels-first byte tensor
img = (np.arange(4 * 5 * 3) % 256).astype(np.uint8).reshape(4, 5, 3)
res = torch.ByteTensor(torch.ByteStorage.from_buffer(img.tobytes()))
t = res.view(4, 5, -1).permute(2, 0, 1)
print(t.shape, t.dtype, t[:, 0, :2].tolist(), torch.equal(t, torch.from_numpy(img).permute(2, 0, 1)))
print(t.float().div_(255.)[1, 1])
