"""pytorch/examples mnist_rnn: each 28x28 image read row by row by a batch_first nn.LSTM, the
last time step classified, Adadelta + StepLR, log_softmax + nll_loss, a test loop with
reduction='sum' and argmax(dim=1, keepdim=True)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=32, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(32)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args['log_interval'] == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader)))


def test(args, model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


args = {'batch_size': 32, 'epochs': 3, 'lr': 0.1, 'gamma': 0.7, 'log_interval': 4}
torch.manual_seed(1)
device = torch.device("cpu")
# Digit-like images: class k lights up row band k.
labels = torch.randint(0, 10, (192,))
images = 0.1 * torch.rand(192, 1, 28, 28)
for k in range(10):
    images[labels == k, 0, 2 * k + 2:2 * k + 6, :] += 1.0
train_loader = DataLoader(TensorDataset(images[:128], labels[:128]), batch_size=args['batch_size'], shuffle=True)
test_loader = DataLoader(TensorDataset(images[128:], labels[128:]), batch_size=64)
model = Net().to(device)
print(model)
optimizer = optim.Adadelta(model.parameters(), lr=args['lr'])
scheduler = StepLR(optimizer, step_size=1, gamma=args['gamma'])
first = test(args, model, device, test_loader)[0]
for epoch in range(1, args['epochs'] + 1):
    train(args, model, device, train_loader, optimizer, epoch)
    scheduler.step()
loss, correct = test(args, model, device, test_loader)
print(loss < first, type(correct).__name__)
print(sum(p.numel() for p in model.rnn.parameters()), [n for n, _ in model.rnn.named_parameters()])
print(nn.Dropout2d(0.5).eval()(torch.ones(2, 3)))
