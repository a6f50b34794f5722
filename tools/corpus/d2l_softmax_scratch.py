"""d2l.ai-style softmax regression from scratch: softmax, fancy-index cross-entropy, Accumulator."""
import torch

X = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(X.sum(0, keepdim=True), X.sum(1, keepdim=True))


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdim=True)
    return X_exp / partition


X_prob = softmax(torch.tensor([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]]))
print(X_prob, X_prob.sum(1))

y = torch.tensor([0, 2])
y_hat = torch.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
print(y_hat[[0, 1], y])


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[range(len(y_hat)), y])


print(cross_entropy(y_hat, y))


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


print(accuracy(y_hat, y) / len(y))


class Accumulator:
    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


torch.manual_seed(0)
num_inputs, num_outputs = 16, 4
centers = torch.randn(num_outputs, num_inputs) * 3
labels = torch.randint(0, num_outputs, (600,))
feats = centers[labels] + torch.randn(600, num_inputs)
W = torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)
b = torch.zeros(num_outputs, requires_grad=True)


def net(X):
    return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)


def updater(batch_size, lr=0.1):
    with torch.no_grad():
        for param in [W, b]:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


for epoch in range(5):
    metric = Accumulator(3)
    for i in range(0, 600, 50):
        Xb, yb = feats[i:i + 50], labels[i:i + 50]
        y_hat = net(Xb)
        l = cross_entropy(y_hat, yb)
        l.sum().backward()
        updater(Xb.shape[0])
        metric.add(float(l.sum()), accuracy(y_hat, yb), yb.numel())
    train_acc = metric[1] / metric[2]
print('train accuracy above 0.9:', train_acc > 0.9)
print('train loss below 0.5:', metric[0] / metric[2] < 0.5)
