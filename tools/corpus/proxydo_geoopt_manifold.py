import functools
import io

import torch
import torch.nn as nn

class Manifold:
    name = "base"
    def projx(self, x):
        raise NotImplementedError
    def proju(self, x, u):
        raise NotImplementedError
    def retr(self, x, u):
        return self.projx(x + u)
    def __repr__(self):
        return self.name + " manifold"

class Sphere(Manifold):
    name = "Sphere"
    def projx(self, x):
        return x / x.norm(dim=-1, keepdim=True)
    def proju(self, x, u):
        return u - (x * u).sum(-1, keepdim=True) * x

def _rebuild_manifold_tensor(*args, build_fn):
    tensor = build_fn(*args[:-4])
    return args[-3](tensor, manifold=args[-2], requires_grad=args[-1])


class ManifoldTensor(torch.Tensor):
    def __new__(cls, *args, manifold=None, requires_grad=False, **kwargs):
        if len(args) == 1 and isinstance(args[0], torch.Tensor):
            data = args[0].data
        else:
            data = torch.Tensor(*args, **kwargs)
        if kwargs.get("device") is not None:
            data.data = data.data.to(kwargs.get("device"))
        with torch.no_grad():
            manifold.projx(data)
        instance = torch.Tensor._make_subclass(cls, data, requires_grad)
        instance.manifold = manifold
        return instance

    def __reduce_ex__(self, proto):
        build, proto = super(ManifoldTensor, self).__reduce_ex__(proto)
        new_build = functools.partial(_rebuild_manifold_tensor, build_fn=build)
        new_proto = proto + (dict(), self.__class__, self.manifold, self.requires_grad)
        return new_build, new_proto

    def proj_(self):
        return self.copy_(self.manifold.projx(self))

    def __repr__(self):
        return "Tensor on {} containing:\n".format(self.manifold) + torch.Tensor.__repr__(self)

class ManifoldParameter(ManifoldTensor, nn.Parameter):
    def __new__(cls, data=None, manifold=None, requires_grad=True):
        if data is None:
            data = ManifoldTensor(manifold=manifold or Sphere())
        elif not isinstance(data, ManifoldTensor):
            data = ManifoldTensor(data, manifold=manifold or Sphere())
        instance = ManifoldTensor._make_subclass(cls, data, requires_grad)
        instance.manifold = data.manifold
        return instance

    def __repr__(self):
        return "Parameter on {} containing:\n".format(self.manifold) + torch.Tensor.__repr__(self)

class RSGD(torch.optim.Optimizer):
    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if isinstance(p, (ManifoldParameter, ManifoldTensor)):
                    rgrad = p.manifold.proju(p, p.grad)
                    p.copy_(p.manifold.retr(p, -group["lr"] * rgrad))
                else:
                    p.add_(p.grad, alpha=-group["lr"])

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = ManifoldParameter(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), manifold=Sphere())
        self.b = nn.Parameter(torch.zeros(2))
    def forward(self, x):
        return x @ self.w.t() + self.b

m = Model()
print(type(m.w).__name__, isinstance(m.w, nn.Parameter), isinstance(m.w, torch.Tensor))
print(m.w)
print([n for n, _ in m.named_parameters()])
x = torch.linspace(-1, 1, 12).view(4, 3)
y = torch.tensor([[0.0, 1.0]] * 4)
opt = RSGD(m.parameters(), lr=0.1)
for i in range(20):
    opt.zero_grad()
    loss = ((m(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
print(round(loss.item(), 5))
print(m.w.norm(dim=-1))
print(m.w.manifold, m.w.requires_grad, m.w.grad.shape)
t = ManifoldTensor(torch.tensor([3.0, 4.0]), manifold=Sphere())
t.proj_()
print(t)
print(type(t * 2).__name__)
print((t * 2).manifold if hasattr(t * 2, "manifold") else "no manifold")

buf = io.BytesIO()
torch.save(m, buf)
buf.seek(0)
m2 = torch.load(buf, weights_only=False)
print(type(m2.w).__name__, m2.w.manifold, m2.w.requires_grad)
print(m2.w)
print({k: type(v).__name__ for k, v in m2.state_dict().items()})
