"""A script that tabulates ops by name (a dict of activations and comparisons, printed with
f.__name__, as benchmark and ablation scripts do), then reduces with the argument forms a
refactor leaves behind: keepdim without a dim, tensors for dims, foreach ops given a tensor for
a scalar, and calls that lost an argument."""
import torch


def attempt(label, fn):
    try:
        out = fn()
    except Exception as e:
        # (the first line, up to the overloads PyTorch lists)
        print(f'{label}: {type(e).__name__}: {str(e).splitlines()[0].split(", but expected")[0]}')
    else:
        print(f'{label}: {out}')


x = torch.linspace(1.0, 3.0, 6).reshape(2, 3)
# ops picked by their public names, reported by their own
table = [torch.arccosh, torch.acosh, torch.clip, torch.clamp, torch.greater, torch.absolute,
         torch.fix, torch.special.expit, torch.special.psi, torch.linalg.det]
for fn in table:
    print(fn.__name__)
print([m.__name__ for m in (torch.Tensor.arccos, torch.Tensor.clip, torch.Tensor.less_equal,
                            torch.Tensor.moveaxis, torch.Tensor.not_equal)])
print(torch.arccosh(x), torch.clip(x, 1.5, 2.5), torch.greater(x, 2))
attempt('arccosh of a string', lambda: torch.arccosh('x'))
attempt('expit of a list', lambda: torch.special.expit([1.0]))

# reductions: keepdim needs a dim; dim=None with keepdim is every dim
print(x.sum(None, True), x.mean(dim=None, keepdim=True), x.sum(dim=(0, -1), keepdim=True))
attempt('sum keepdim only', lambda: x.sum(keepdim=True))
attempt('mean keepdims only', lambda: torch.mean(x, keepdims=True))
attempt('norm dim as a 0-d tensor', lambda: x.norm(dim=torch.tensor(1)))
print(x.norm(2, torch.tensor(1)), x.norm(dim=torch.tensor([1])))

# moving dims by tensors and bools
print(torch.movedim(x, torch.tensor(0), torch.tensor(1)).shape)
attempt('movedim by a 1-d tensor', lambda: torch.movedim(x, torch.tensor([0]), torch.tensor([1])))
attempt('movedim by a bool', lambda: x.movedim(True, 0))

# foreach ops: one scalar for every tensor
params = [torch.ones(3), torch.arange(3.0)]
print(torch._foreach_add(params, torch.tensor(0.5)), torch._foreach_mul(params, 2))
attempt('foreach add of a 1-d tensor', lambda: torch._foreach_add(params, torch.ones(3)))
attempt('foreach div_ of a 1-d tensor', lambda: torch._foreach_div_(params, torch.ones(1)))
attempt('foreach sub of a 1-d tensor', lambda: torch._foreach_sub(params, torch.ones(3)))
attempt('foreach addcmul packed 0-d', lambda: torch._foreach_addcmul(params, params, params,
                                                                      torch.tensor(0.5)))
print(torch._foreach_addcmul(params, params, params, torch.tensor([0.5, 0.25])))

# calls that lost an argument
attempt('split', lambda: x.split())
attempt('torch.split', lambda: torch.split(x))
attempt('gather', lambda: x.gather())
attempt('repeat_interleave', lambda: x.repeat_interleave())
print(torch.zeros(2, 3).copy_(other=x))
