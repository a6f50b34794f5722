"""The MIT 6.S191 "Intro to PyTorch" lab idioms: tensors from ints, floats and range(), ndim
and shape in f-strings, a hand-written dense layer with nn.Parameter, the same layer from
nn.Sequential and from an nn.Module subclass with an `isidentity` switch, a y = x**2 gradient,
and gradient descent that rebuilds its leaf every step with torch.tensor([x]) from the previous
step's one-element tensor.  All weights are fixed, so nothing depends on the random stream."""
import torch
import torch.nn as nn

integer = torch.tensor(1234)
decimal = torch.tensor(3.14159265359)
print(f"`integer` is a {integer.ndim}-d Tensor: {integer} {integer.dtype}")
print(f"`decimal` is a {decimal.ndim}-d Tensor: {decimal} {decimal.dtype}")
fibonacci = torch.tensor([1, 1, 2, 3, 5, 8])
count_to_50 = torch.tensor(range(50))
print(f"`fibonacci` is a {fibonacci.ndim}-d Tensor with shape: {fibonacci.shape}")
print(f"`count_to_50`: {count_to_50.ndim}-d, {count_to_50.shape}, {count_to_50.dtype}, last {count_to_50[-3:]}")
images = torch.zeros(10, 3, 64, 64)
assert images.shape == (10, 3, 64, 64)
print(f"images is a {images.ndim}-d Tensor with shape: {images.shape}")
matrix = torch.tensor([[1.5, 2.0, -3.0], [4.0, 0.5, 6.25]])
print(f"row {matrix[1]} column {matrix[:, 1]} scalar {matrix[0, 1]} {matrix[0, 1].shape}")


def func(a, b):
    c = torch.add(a, b)
    d = torch.subtract(b, 1)
    return torch.multiply(c, d)


print(f"e_out: {func(1.5, 2.5)}", f"e_out: {func(torch.tensor(1.5), torch.tensor(2.5))}")
print(torch.add(torch.tensor(15), torch.tensor(61)), torch.tensor(15) + 61)


class OurDenseLayer(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(OurDenseLayer, self).__init__()
        self.W = nn.Parameter(torch.linspace(-1.0, 1.0, num_inputs * num_outputs).reshape(num_inputs, num_outputs))
        self.bias = nn.Parameter(torch.tensor([0.1, -0.2, 0.3])[:num_outputs])

    def forward(self, x):
        return torch.sigmoid(torch.matmul(x, self.W) + self.bias)


layer = OurDenseLayer(2, 3)
x_input = torch.tensor([[1, 2.]])
y = layer(x_input)
print(f"input shape: {x_input.shape}\noutput shape: {y.shape}\noutput result: {y}")
print(layer, [n for n, _ in layer.named_parameters()])

model = nn.Sequential(nn.Linear(2, 3), nn.Sigmoid())
with torch.no_grad():
    model[0].weight.copy_(layer.W.t())
    model[0].bias.copy_(layer.bias)
print(model, torch.equal(model(x_input), y))


class LinearButSometimesIdentity(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super(LinearButSometimesIdentity, self).__init__()
        self.linear = nn.Linear(num_inputs, num_outputs)
        nn.init.constant_(self.linear.weight, 0.5)
        nn.init.zeros_(self.linear.bias)

    def forward(self, inputs, isidentity=False):
        return inputs if isidentity else self.linear(inputs)


m = LinearButSometimesIdentity(2, 3)
print("Network linear output: {}; network identity output: {}".format(m(x_input), m(x_input, isidentity=True)))

x = torch.tensor(3.0, requires_grad=True)
y = x ** 2
y.backward()
print("dy_dx of y=x^2 at x=3.0 is: ", x.grad, x.grad == 6.0)

# gradient descent towards x_f, a new leaf every step built from last step's (1,) tensor
x = torch.tensor([-0.75])
learning_rate, x_f, history = 1e-2, 4, []
for i in range(200):
    x = torch.tensor([x], requires_grad=True)
    loss = (x - x_f) ** 2
    loss.backward()
    x = x.item() - learning_rate * x.grad
    history.append(x.item())
print(x, x.shape, x.requires_grad, f"{history[0]:.6f} {history[99]:.6f} {history[-1]:.6f}", len(history))
nested = torch.tensor([torch.tensor([1.5]), torch.tensor([2.5])])
print(nested, nested.shape, torch.tensor([torch.tensor(2)]).dtype)
