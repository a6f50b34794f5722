"""Quickstart: device selection, a Flatten+Sequential model, train/test loops with formatted logs."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")

# A synthetic 'FashionMNIST': 10 classes, each a fixed random 28x28 template plus noise.
templates = torch.rand(10, 28, 28)
def make_split(n):
    y = torch.arange(n) % 10
    X = templates[y] + 0.3 * torch.randn(n, 28, 28)
    return TensorDataset(X.unsqueeze(1), y)

training_data, test_data = make_split(600), make_split(200)
batch_size = 64
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)

for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    break


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 128),
            nn.ReLU(),
            nn.Linear(128, 128),
            nn.ReLU(),
            nn.Linear(128, 10)
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)
print(model)

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if batch % 4 == 0:
            current = (batch + 1) * len(X)
            print(f"[{current:>5d}/{size:>5d}]")
    return sum(losses) / len(losses)


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    return correct, test_loss


epochs = 5
history = []
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    history.append(train(train_dataloader, model, loss_fn, optimizer))
    accuracy, test_loss = test(test_dataloader, model, loss_fn)
print("Done!")
print("train loss decreased:", history[-1] < history[0])
print(f"Test Error: \n Accuracy above 90%: {100 * accuracy > 90} \n")

torch.save(model.state_dict(), "/tmp/quickstart_model.pth")
print("Saved PyTorch Model State to model.pth")
model = NeuralNetwork().to(device)
model.load_state_dict(torch.load("/tmp/quickstart_model.pth", weights_only=True))

classes = [f"class{i}" for i in range(10)]
model.eval()
x, y = test_data[3][0], test_data[3][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted, actual = classes[pred[0].argmax(0)], classes[y]
    print(f'Predicted: "{predicted}", Actual: "{actual}"')
