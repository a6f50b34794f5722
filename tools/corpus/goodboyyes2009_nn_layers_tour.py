"""A Chinese learner's tour of nn layers and autograd: a hand-written Affine layer and perceptron
against nn.Linear, BatchNorm1d with weights assigned through .data, RNN/LSTM shapes and state,
nn.Embedding with pretrained rows assigned through .data (an integer tensor is refused), an
EmbeddingBag's mean bags, Conv1d output length; then custom autograd Functions (saved tensors,
grad_fn.apply), a second derivative, hooks on a non-leaf, and gradient accumulation.

Source: goodboyyes2009/Pytorch_Study, base/nn_layers.py, base/autograd_base.py and
base/autograd_function.py.  Adapted: the test functions called in turn; random initial values
replaced by deterministic ones (sines of a ramp) so both libraries print the same numbers; the
timeit comparison and gradcheck on float32 dropped.
"""
import torch
import torch.nn as nn
from torch.autograd import Function


def ramp(*shape, scale=1.0):
    n = 1
    for s in shape:
        n *= s
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 0.7 + 0.3) * scale).view(*shape)


def fill_(module, scale=0.5):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(ramp(*p.shape, scale=scale) + 0.01 * i)
    return module


class Affine(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = nn.Parameter(ramp(in_features, out_features))
        self.b = nn.Parameter(ramp(out_features, scale=0.1))

    def forward(self, x):
        x = x.mm(self.w)
        return x + self.b.expand_as(x)


class Perceptron(nn.Module):
    def __init__(self, input_features, hidden_features, output_features):
        nn.Module.__init__(self)
        self.layer1 = Affine(input_features, hidden_features)
        self.layer2 = Affine(hidden_features, output_features)

    def forward(self, input):
        return self.layer2(self.layer1(input))


print("== Affine vs nn.Linear")
affine = Affine(3, 4)
x = ramp(2, 3).requires_grad_()
linear = fill_(nn.Linear(3, 4))
print("output: {}\nlinear_output: {}".format(affine(x), linear(x)))
perceptron = Perceptron(3, 4, 2)
for name, parameter in perceptron.named_parameters():
    print("name:{}, type:{}".format(name, parameter.size()))
print("output:{}".format(perceptron(ramp(5, 3))))

print("== BatchNorm1d")
bn1d = nn.BatchNorm1d(4)
bn1d.weight.data = torch.ones(4) * 4
bn1d.bias.data = torch.zeros(4)
bn_out = bn1d(ramp(2, 4))
print("bn_out: {}".format(bn_out))
print("bn_out mean(0): {}\nbn_out.var(): {:.4f}".format(bn_out.mean(0).abs().max() < 1e-5,
                                                        bn_out.var(unbiased=False).item()))
print(bn1d.running_mean, bn1d.running_var, bn1d.num_batches_tracked)

print("== RNN / LSTM")
rnn = fill_(nn.RNN(input_size=10, hidden_size=5, num_layers=1, batch_first=True,
                   nonlinearity="relu"), 0.3)
output, h_n = rnn(ramp(3, 4, 10), torch.zeros(1, 3, 5))
print("output size:{}\nh_n size:{}".format(output.size(), h_n.size()))
print(torch.equal(output[:, -1, :], h_n[0]))
for name, parameter in rnn.named_parameters():
    print("name:{}, parameter size:{}".format(name, parameter.shape))
lstm = fill_(nn.LSTM(input_size=4, batch_first=True, hidden_size=5, num_layers=1), 0.4)
output, (h_n, c_n) = lstm(ramp(2, 3, 4), (ramp(1, 2, 5), ramp(1, 2, 5, scale=0.5)))
print("last_out: {}".format(output[:, -1, :]))
print("out_last :{}".format(h_n / torch.tanh(c_n)))
print("h_n: {}\nc_n: {}".format(h_n, c_n))

print("== Embedding")
embedding = nn.Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)
try:
    embedding.weight.data = torch.arange(0, 30).view(10, 3)
except RuntimeError as e:
    print("RuntimeError:", e)
embedding.weight.data = torch.arange(0, 30).view(10, 3).float()
print("output: {}".format(embedding(torch.arange(7, 0, -1).long())))
embedding = nn.Embedding(5, 3)
out = embedding(torch.LongTensor([[1, 2, 3, 4], [0, 1, 2, 4]]))
print("out shape:{}".format(out.shape))
bag = nn.EmbeddingBag(num_embeddings=10, embedding_dim=3)
bag.weight.data = ramp(10, 3)
print("embedding_mean: {}".format(bag(torch.LongTensor([1, 2, 4, 5, 4, 3, 2, 9]),
                                      torch.LongTensor([0, 2, 5]))))
conv1 = nn.Conv1d(in_channels=16, out_channels=10, kernel_size=3, stride=1, padding=3)
print("conv1_out shape: {}".format(conv1(input=ramp(3, 16, 20)).shape))

print("== autograd basics")
x = torch.ones(1)
b = torch.tensor([0.25], requires_grad=True)
w = torch.tensor([0.75], requires_grad=True)
y = w.matmul(x)
z = y + b
print(x.is_leaf, w.is_leaf, y.is_leaf, z.grad_fn.name(), y.grad_fn.name())
print([type(f).__name__ if f is not None else None for f, _ in y.grad_fn.next_functions])
z.backward(retain_graph=True)
z.backward()
print("w.grad :{}".format(w.grad))


def f(x):
    result = 1
    for ii in x:
        if ii > 0:
            result = ii * result
    return result


x = torch.arange(-2.0, 5.0, requires_grad=True)
y = f(x)
y.backward()
print("x.grad:{}\ny: {}".format(x.grad, y))

x = torch.ones(3, requires_grad=True)
w = torch.tensor([0.5, 1.5, 2.5], requires_grad=True)
y = w * x
hook_handle = y.register_hook(lambda grad: print("y grad: {}".format(grad)))
y.sum().backward()
hook_handle.remove()
x = torch.arange(0, 3, dtype=torch.float, requires_grad=True)
y = x ** 2 + x * 2
y.sum().backward(retain_graph=True)
y.backward(torch.Tensor([1, 1, 1]))
print("x.grad: {}".format(x.grad))

print("== custom Functions")


class MultiplyAdd(Function):
    @staticmethod
    def forward(ctx, w, x, b):
        ctx.save_for_backward(w, x)
        return w * x + b

    @staticmethod
    def backward(ctx, grad_output):
        w, x = ctx.saved_tensors
        return grad_output * x, grad_output * w, grad_output * 1


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        output = 1 / (1 + torch.exp(-x))
        ctx.save_for_backward(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        output, = ctx.saved_tensors
        return output * (1 - output) * grad_output


x = torch.ones(1)
w = torch.tensor([0.3], requires_grad=True)
b = torch.tensor([0.6], requires_grad=True)
z = MultiplyAdd.apply(w, x, b)
z.backward(retain_graph=True)
print("x.grad:{}, w.grad:{}, b.grad:{}".format(x.grad, w.grad, b.grad))
print("apply_result: {}".format(z.grad_fn.apply(torch.ones(1))))
print(type(z.grad_fn).__name__)
x = torch.tensor([5], dtype=torch.float64, requires_grad=True)
grad_x = torch.autograd.grad(x ** 2, x, create_graph=True)
print("dy/dx = {}".format(grad_x))
print("d2y/dx2 = {}".format(torch.autograd.grad(grad_x[0], x)))
test_input = ramp(3, 4).double().requires_grad_()
print(torch.autograd.gradcheck(Sigmoid.apply, (test_input,), eps=1e-6))
xx = ramp(10, 10, scale=2.0).requires_grad_()
Sigmoid.apply(xx).backward(torch.ones(xx.size()))
custom = xx.grad.clone()
xx.grad = None
torch.sigmoid(xx).backward(torch.ones(xx.size()))
print(torch.allclose(custom, xx.grad), xx.grad.sum())
