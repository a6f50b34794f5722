"""einsum as attention code and tutorials write it, checked against the explicit ops it replaces."""
import torch

a = torch.arange(6.0).reshape(2, 3)
b = torch.arange(12.0).reshape(3, 4)
v = torch.tensor([1.0, 2.0, 3.0])
w = torch.tensor([0.5, -1.0, 2.0])

print('transpose', torch.einsum('ij->ji', a))
print('sum', torch.einsum('ij->', a))
print('column sum', torch.einsum('ij->j', a))
print('row sum', torch.einsum('ij->i', a))
print('matvec', torch.einsum('ij,j->i', a, v))
print('matmul', torch.einsum('ij,jk->ik', a, b))
print('matmul equal', torch.equal(torch.einsum('ij,jk->ik', a, b), a @ b))
print('dot', torch.einsum('i,i->', v, w), torch.dot(v, w))
print('outer', torch.einsum('i,j->ij', v, w))
print('outer equal', torch.equal(torch.einsum('i,j->ij', v, w), torch.outer(v, w)))
print('hadamard', torch.einsum('ij,ij->ij', a, a))
sq = torch.arange(9.0).reshape(3, 3)
print('trace', torch.einsum('ii', sq), torch.trace(sq))
print('diagonal', torch.einsum('ii->i', sq))
print('implicit output', torch.einsum('ij,jk', a, b).shape)
print('spaces allowed', torch.einsum('i j , j k -> i k', a, b).shape)

q = torch.arange(24.0).reshape(2, 3, 4) / 10
k = torch.arange(32.0).reshape(2, 4, 4) / 10
print('bmm', torch.allclose(torch.einsum('bij,bjk->bik', q, k), torch.bmm(q, k)))
scores = torch.einsum('bqd,bkd->bqk', q, k)
print('attention scores', scores.shape, scores[0, 0])
heads = torch.arange(2 * 2 * 3 * 4.0).reshape(2, 2, 3, 4)
print('multihead', torch.einsum('bhqd,bhkd->bhqk', heads, heads).shape)
print('ellipsis', torch.einsum('...ij,...jk->...ik', q, k).shape)
print('ellipsis batch diag', torch.einsum('...ii->...i', torch.arange(18.0).reshape(2, 3, 3)))
print('list operands', torch.einsum('ij,jk->ik', [a, b]).shape)
print('three operands', torch.einsum('i,ij,j->', v, sq, w))
print('bilinear', torch.einsum('bn,anm,bm->ba', torch.ones(2, 3), torch.ones(4, 3, 5), torch.ones(2, 5)))
print('tensordot', torch.tensordot(a, b, dims=([1], [0])).shape, torch.tensordot(a, a, dims=2))

x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
y = torch.tensor([[0.5, -1.0], [2.0, 1.0]], requires_grad=True)
out = torch.einsum('ij,jk->ik', x, y).sum()
out.backward()
print('grad x', x.grad)
print('grad y', y.grad)
x.grad = None
torch.einsum('ii->', x).backward()
print('trace grad', x.grad)

ints = torch.arange(6).reshape(2, 3)
print('integer einsum', torch.einsum('ij->i', ints), torch.einsum('ij->i', ints).dtype)
try:
    torch.einsum('ij,jk->ik', a, a)
except RuntimeError:
    print('mismatched sizes: RuntimeError')
try:
    torch.einsum('ij->i', v)
except RuntimeError:
    print('wrong number of indices: RuntimeError')
