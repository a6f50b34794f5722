"""DefuLi/Pytorch-Tutorial (pytorch_tutorial/lesson03-16): the course's tensor lessons, each
example block run in turn as the course runs them (one after another, uncommented), its mistakes
included: norms of an integer tensor, an optimizer given a tensor instead of a list, requiring
grad on an integer tensor, vars() of a BatchNorm layer, torch.tensor of a column with a gap.
Adapted for the corpus: the random draws (torch.rand/randn) are fixed numpy values, so the
output does not depend on a random stream; every torch call is as the lessons write it.
"""
import numpy as np
import torch
from torch.nn import functional as F

rs = np.random.RandomState(3)


def randn(*shape):
    return torch.from_numpy(rs.standard_normal(shape).astype(np.float32))


def rand(*shape):
    return torch.from_numpy(rs.random_sample(shape).astype(np.float32))


def block(title, fn):
    print(f"=== {title}")
    try:
        fn()
    except Exception as e:      # the lessons show the error the call raises
        print("EXC", type(e).__name__, str(e).splitlines()[0])


def data_types():                       # lesson03
    a = randn(2, 3)
    print(a.type(), isinstance(a, torch.FloatTensor))
    print(torch.tensor(1.), torch.tensor(1.3), torch.tensor(2.2).shape, len(torch.tensor([2.2]).shape))
    c = torch.from_numpy(np.ones(2))
    print(c, c.shape, c.size())
    a = rand(2, 3, 28, 28)
    print(a.shape[2], a.numel(), a.dim(), list(a.shape))


def creation():                         # lesson04
    print(torch.from_numpy(np.array([2, 3.3])))
    print(torch.tensor([2., 3.2]), torch.Tensor(2, 3).shape, torch.IntTensor(3, 3).dtype)
    print(torch.full([2, 3], 7))
    print(torch.arange(0, 10, 2), torch.linspace(0, 10, steps=4))
    print(torch.logspace(0, 1, steps=10))
    print(torch.eye(3, 3))


def indexing():                         # lesson04
    a = rand(4, 3, 28, 28)
    print(a[:2, -1:, :, :].shape, a[:2, -1, :, :].shape, a[:, :, ::2, ::2].shape)
    print(a.index_select(0, torch.tensor([0, 2])).shape, a[..., :2].shape)
    a = randn(3, 4)
    mask = a.ge(0.5)
    print(mask)
    print(torch.masked_select(a, mask))
    print(torch.take(torch.tensor([[4, 3, 5], [6, 7, 8]]), torch.tensor([0, 2, 5])))


def shapes():                           # lesson05
    d = rand(32).unsqueeze(1).unsqueeze(2).unsqueeze(0)
    print(d.shape, d.squeeze().shape, d.squeeze(1).shape, d.squeeze(3).shape)
    print(d.expand(4, 32, 14, 14).shape, d.expand(-1, 32, -1, -1).shape, d.repeat(4, 32, 1, 1).shape)
    e = rand(4, 3, 28, 32)
    print(e.transpose(1, 3).transpose(1, 2).shape, e.permute(0, 2, 3, 1).shape)
    print(torch.all(torch.eq(e.transpose(1, 3).transpose(1, 2), e.permute(0, 2, 3, 1))))


def merge_split():                      # lesson07
    print(torch.cat([rand(4, 32, 8), rand(5, 32, 8)], dim=0).shape)
    print(torch.stack([rand(32, 8), rand(32, 8), rand(32, 8)], dim=1).shape)
    b1, b2 = rand(3, 32, 8).split([2, 1], dim=0)
    c1, c2 = rand(2, 32, 8).chunk(2, dim=0)
    print(b1.shape, b2.shape, c1.shape, c2.shape)


def arithmetic():                       # lesson08
    a, b = rand(3, 4), rand(4)
    eq = torch.eq(a + b, torch.add(a, b))
    eq[1, 3] = torch.tensor(0)
    print(eq, torch.all(eq))
    a = torch.full([2, 2], 3)
    print(a.pow(2), a.pow(2).sqrt(), torch.exp(torch.ones(2, 2)), torch.log(torch.ones(2, 2)))
    t = torch.tensor(3.14)
    print(t.floor(), t.ceil(), t.trunc(), t.frac(), torch.tensor(3.499).round())
    grad = rand(2, 3) * 15
    print(grad.clamp(10), grad.clamp(0, 10))


def integer_norm():                     # lesson09: full() of an int is an integer tensor
    a = torch.full([8], 1)
    print(a.view(2, 4))
    print(a.norm(1))


def float_norm():
    a = torch.full([8], 1.)
    b, c = a.view(2, 4), a.view(2, 2, 2)
    print(a.norm(1), b.norm(2), c.norm(2), b.norm(1, dim=0), b.norm(1, dim=1), c.norm(1, dim=0))


def statistics():                       # lesson09
    a = torch.arange(8).view(2, 4).float()
    print(a.min(), a.max(), a.mean(), a.prod(), a.sum(), a.argmax())
    b = randn(4, 10)
    print(b.argmax(), b.argmax(dim=1), b.max(dim=1), b.max(dim=1, keepdim=True)[0].shape)
    print(b.topk(3, dim=1))
    print(b.topk(3, dim=1, largest=False))
    print(b.kthvalue(8, dim=1))
    print(b > 0, torch.gt(b, 0).sum(), torch.equal(b, b), torch.eq(torch.ones(2, 3), b[:2, :3]))


def where_gather():                     # lesson10
    cond = torch.ByteTensor([[1, 1], [1, 0]])
    a, b = torch.tensor([[1, 2], [3, 4]]), torch.tensor([[5, 6], [7, 8]])
    print(torch.where(cond, a, b))


def gather():
    prob = rand(4, 10)
    idx = prob.topk(dim=1, k=3)
    label = torch.arange(10) + 100
    print(idx[1], torch.gather(label.expand(4, 10), dim=1, index=idx[1].long()))


def autograd_grad():                    # lesson11
    x = torch.ones(1)
    w = torch.full([1], 2, requires_grad=True)     # an integer fill: PyTorch refuses
    print(F.mse_loss(torch.ones(1), x * w))


def requires_grad_late():
    x = torch.ones(1)
    w = torch.full([1], 2)
    w.requires_grad_()                             # integer again, by the method this time
    print(w)


def float_grads():
    x = torch.ones(1)
    w = torch.full([1], 2.)
    w.requires_grad_()
    mse = F.mse_loss(torch.ones(1), x * w)
    print(mse, torch.autograd.grad(mse, [w]))
    a = rand(3).requires_grad_()
    p = F.softmax(a, dim=0)
    print(p, sum(p))
    print(torch.autograd.grad(p[1], [a], retain_graph=True), torch.autograd.grad(p[2], [a]))


def chain_rule():                       # lesson12
    x, b1, b2 = torch.tensor(1.), torch.tensor(1.), torch.tensor(1.)
    w1, w2 = torch.tensor(2., requires_grad=True), torch.tensor(2., requires_grad=True)
    y1 = x * w1 + b1
    y2 = y1 * w2 + b2
    dy2_dy1 = torch.autograd.grad(y2, [y1], retain_graph=True)[0]
    dy1_dw1 = torch.autograd.grad(y1, [w1], retain_graph=True)[0]
    print(dy2_dy1 * dy1_dw1, torch.autograd.grad(y2, [w1], retain_graph=True)[0])


def himmelblau_adam():                  # lesson12, fewer steps
    def himmelblau(x):
        return (x[0] ** 2 + x[1] - 11) ** 2 + (x[0] + x[1] ** 2 - 7) ** 2
    x_y = torch.tensor([0., 0.], requires_grad=True)
    optimizer = torch.optim.Adam([x_y], lr=1e-3)
    for step in range(3000):
        pred = himmelblau(x_y)
        optimizer.zero_grad()
        pred.backward()
        optimizer.step()
        if step % 1000 == 0:
            print('step{}: x={}, f(x)={}'.format(step, [round(v, 4) for v in x_y.tolist()],
                                                   round(pred.item(), 3)))


def entropy_and_cross_entropy():        # lesson13
    p = torch.full([4], 1 / 4)
    print(-(p * torch.log2(p)).sum())
    logits = randn(1, 784) @ (randn(10, 784) * 0.05).t()
    pred = F.softmax(logits, dim=1)
    print(pred.shape, pred[0].shape, sum(pred[0]))
    print(F.nll_loss(torch.log(pred), torch.tensor([3])), F.cross_entropy(logits, torch.tensor([3])))


def optimizer_given_a_tensor():         # lesson15: the course passes a tensor
    parameters = randn(1, 20)
    torch.optim.SGD(parameters, lr=1e-3, weight_decay=0.01)


def layers():                           # lesson14, 16
    torch.manual_seed(0)
    x = rand(1, 784)
    layer = torch.nn.Linear(784, 200)
    print(F.relu(layer(x), inplace=True).shape)
    conv = torch.nn.Conv2d(1, 3, kernel_size=3, stride=2, padding=1)
    print(conv(rand(1, 1, 28, 28)).shape, conv.weight.shape, conv.bias.shape)
    out = rand(1, 16, 14, 14)
    print(torch.nn.MaxPool2d(2, stride=2)(out).shape, F.max_pool2d(out, 2, stride=2).shape)
    print(F.interpolate(out, scale_factor=2, mode='nearest').shape)
    bn = torch.nn.BatchNorm1d(16)
    bn(rand(100, 16, 784))
    print(bn.running_mean, bn.running_var)
    bn2 = torch.nn.BatchNorm2d(16)
    bn2(rand(1, 16, 7, 7))
    print(list(vars(bn2)))


def column_with_a_gap():                # a CSV column read with a missing value
    torch.tensor([3.3, None, 5.5], dtype=torch.float32)


for title, fn in [("data types", data_types), ("creation", creation), ("indexing", indexing),
                  ("shapes", shapes), ("merge and split", merge_split),
                  ("arithmetic", arithmetic), ("integer norm", integer_norm),
                  ("float norm", float_norm), ("statistics", statistics),
                  ("where", where_gather), ("gather", gather), ("autograd.grad", autograd_grad),
                  ("requires_grad_ later", requires_grad_late), ("float grads", float_grads),
                  ("chain rule", chain_rule), ("himmelblau", himmelblau_adam),
                  ("entropy", entropy_and_cross_entropy),
                  ("optimizer given a tensor", optimizer_given_a_tensor), ("layers", layers),
                  ("column with a gap", column_with_a_gap)]:
    block(title, fn)
