"""Learn-the-basics 'Optimizing Model Parameters': hyperparameters, train/test loops, model.train/eval."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

# Three well-separated Gaussian blobs in 20 dimensions.
centers = torch.randn(3, 20) * 4
labels = torch.arange(900) % 3
features = centers[labels] + torch.randn(900, 20)
train_dataloader = DataLoader(TensorDataset(features[:600], labels[:600]), batch_size=64, shuffle=True)
test_dataloader = DataLoader(TensorDataset(features[600:], labels[600:]), batch_size=64)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 3))

    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))


model = NeuralNetwork()
learning_rate = 1e-3
batch_size = 64
epochs = 4
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate * 50)


def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    total = 0.0
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total += loss.item()
        if batch % 5 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss is finite: {loss == loss}  [{current:>5d}/{size:>5d}]")
    return total / len(dataloader)


def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy >= 95%: {(100*correct) >= 95}, Avg loss < 0.5: {test_loss < 0.5} \n")


losses = []
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    losses.append(train_loop(train_dataloader, model, loss_fn, optimizer))
test_loop(test_dataloader, model, loss_fn)
print("Done!", losses[-1] < losses[0])
