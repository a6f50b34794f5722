"""In-place operations and autograd: CopySlices through a view, in-place writes to saved
values and the version-counter errors they raise (x.mul_(x), x /= x, a gathered or masked
input written afterwards, sigmoid/exp/tanh outputs), multi-output views, .data writes, and
in-place updates under no_grad."""
import torch
x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
y = x.clone()
y[1:3] = 0
print(y.grad_fn.name())
y.sum().backward()
print(x.grad)
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a * 2
v = b[:2]
v.mul_(3)
print(b.grad_fn.name(), v.grad_fn.name(), b._version, v._version)
b.sum().backward()
print(a.grad)
c = torch.ones(2, 3, requires_grad=True)
d = c * 1
d.t_() if False else None
e = d.transpose(0, 1)
e[0, 0] = 10
print(d.grad_fn.name(), e.grad_fn.name())
(d * d).sum().backward()
print(c.grad)
f = torch.zeros(3, requires_grad=True)
g = f.exp()
g2 = g.exp_()
print(g2 is g, g.grad_fn.name())
try:
    g.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
h = torch.tensor([0.5, -0.5], requires_grad=True)
k = h.relu()
try:
    k.relu_()
    k.sum().backward()
    print("relu_ after relu ok", h.grad)
except RuntimeError as e:
    print("RuntimeError:", e)

m = torch.tensor([1.0, 2.0], requires_grad=True)
try:
    n = m.tanh()
    n.add_(1)
    n.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
p = torch.tensor([1.0, 2.0], requires_grad=True)
q = p.exp()
r = q * 2
q.zero_()
try:
    r.sum().backward()
    print(p.grad)
except RuntimeError as e:
    print("RuntimeError:", e)
s = torch.tensor([1.0, 2.0], requires_grad=True)
t = s.sigmoid()
u = t[0]
t.mul_(2)
try:
    u.backward()
except RuntimeError as e:
    print("RuntimeError:", e)
w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
z = w.clone()
for row in z.unbind(0):
    pass
try:
    z.unbind(0)[0].add_(1)
except RuntimeError as e:
    print("RuntimeError:", e)
zz = w.clone()
ch = zz.chunk(2)
try:
    ch[0].mul_(2)
except RuntimeError as e:
    print("RuntimeError:", e)
with torch.no_grad():
    nv = w[0]
print(nv.requires_grad)
ww = w.detach().requires_grad_()
x2 = ww.pow(2)
ww.data.add_(1)
x2.sum().backward()
print(ww.grad)
y3 = torch.ones(3, requires_grad=True)
with torch.no_grad():
    y3 *= 2
print(y3, y3.is_leaf, y3.grad_fn)
y4 = torch.ones(2, requires_grad=True)
y5 = y4 + 0
y5 += 1
y5 *= y5
print(y5.grad_fn.name(), y5._version)
try:
    y5.sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
print(y4.grad)
def run(name, f):
    y4 = torch.tensor([1.0, 2.0], requires_grad=True)
    y5 = y4 * 1
    try:
        out = f(y5)
        out.sum().backward()
        print(name, "ok", y4.grad)
    except RuntimeError as e:
        print(name, "RuntimeError:", str(e)[:160])
run("mul_ self", lambda t: t.mul_(t))
run("imul self", lambda t: t.__imul__(t))
run("add_ self", lambda t: t.add_(t))
run("div_ self", lambda t: t.div_(t))
run("pow_ self", lambda t: t.pow_(t))
run("sub_ self", lambda t: t.sub_(t))
run("atan2_ self", lambda t: t.atan2_(t))
run("addcmul_ self", lambda t: t.addcmul_(t, t))
run("mul_ view", lambda t: t.mul_(t[0]))
run("mul_ expand", lambda t: t.mul_(t.view(2)))
run("copy_ self", lambda t: t.copy_(t))
run("torch.mul out", lambda t: torch.mul(t, t, out=t))
run("maximum_ ", lambda t: torch.maximum(t, t, out=t) )
run("lerp_", lambda t: t.lerp_(t, 0.5))
run("mul other later", lambda t: (lambda o: (o.mul_(t), t.add_(1), o)[2])(t * 2))
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 1
g = y.gather(0, torch.tensor([0, 2]))
y.add_(1)
try:
    g.sum().backward()
except RuntimeError as e:
    print(e)
y = x * 1
g = y.masked_select(torch.tensor([True, False, True]))
y.mul_(2)
try:
    g.sum().backward()
except RuntimeError as e:
    print(e)
y = x * 1
y.mul_(y)
try:
    y.sum().backward()
except RuntimeError as e:
    print(e)
y = (x * 1).double()
y /= y
try:
    y.sum().backward()
except RuntimeError as e:
    print(e)
