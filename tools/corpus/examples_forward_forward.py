"""pytorch/examples mnist_forward_forward: Hinton's forward-forward algorithm; labels overlaid
on the first pixels, positive and negative data, per-layer goodness (mean of squares), each
layer trained locally with its own Adam and a softplus-style loss, prediction by max goodness."""
import torch
import torch.nn as nn
from torch.optim import Adam


def overlay_y_on_x(x, y, classes=4):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0
        self.num_epochs = 60

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1])]

    def predict(self, x):
        goodness_per_label = []
        for label in range(4):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            h_pos, h_neg = layer.train(h_pos, h_neg)


print(overlay_y_on_x(torch.tensor([[0.5, 0.2, 0.9, 0.1, 0.3, 0.7]]), torch.tensor([2])))
torch.manual_seed(1234)
protos = torch.rand(4, 40)
y = torch.arange(120) % 4
x = protos[y] + 0.05 * torch.randn(120, 40)
net = Net([40, 32, 32])
x_pos = overlay_y_on_x(x, y)
rnd = torch.randperm(x.size(0))
x_neg = overlay_y_on_x(x, (y + 1 + torch.randint(0, 3, y.shape)) % 4)
print(x_pos.shape, len(net.layers), isinstance(net.layers[0], nn.Linear))
net.train(x_pos, x_neg)
acc = net.predict(x).eq(y).float().mean().item()
print('train accuracy above 0.5:', acc > 0.5)
print(net.layers[1])
