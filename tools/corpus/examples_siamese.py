"""pytorch/examples siamese_network: twin CNN towers sharing weights, features concatenated,
a sigmoid head trained with BCELoss on same/different pairs from a custom Dataset, StepLR."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.tower = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=3), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
            nn.MaxPool2d(2), nn.Flatten())
        self.fc_in_features = 4 * 5 * 5
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, 1),
        )
        self.sigmoid = nn.Sigmoid()
        self.tower.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.tower(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        output = self.sigmoid(output)
        return output


class APP_MATCHER(Dataset):
    def __init__(self, n, train):
        super(APP_MATCHER, self).__init__()
        self.protos = torch.rand(3, 1, 12, 12, generator=torch.Generator().manual_seed(0))
        g = torch.Generator().manual_seed(0 if train else 1)
        self.labels = torch.randint(0, 3, (n,), generator=g)
        self.noise = 0.1 * torch.randn(n, 1, 12, 12, generator=g)
        self.rng = random.Random(0 if train else 1)

    def __len__(self):
        return self.labels.shape[0]

    def __getitem__(self, index):
        image_1 = self.protos[self.labels[index]] + self.noise[index]
        if self.rng.random() < 0.5:
            j = self.rng.choice((self.labels == self.labels[index]).nonzero().view(-1).tolist())
            target = torch.tensor(1, dtype=torch.float)
        else:
            j = self.rng.choice((self.labels != self.labels[index]).nonzero().view(-1).tolist())
            target = torch.tensor(0, dtype=torch.float)
        image_2 = self.protos[self.labels[j]] + self.noise[j]
        return image_1, image_2, target


def train(model, device, train_loader, optimizer, criterion):
    model.train()
    total = 0.0
    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def test(model, device, test_loader, criterion):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()
            pred = torch.where(outputs > 0.5, 1, 0)
            correct += pred.eq(targets.view_as(pred)).sum().item()
    return correct / len(test_loader.dataset)


torch.manual_seed(1)
device = torch.device("cpu")
train_dataset = APP_MATCHER(128, train=True)
test_dataset = APP_MATCHER(64, train=False)
a, b, t = train_dataset[0]
print(a.shape, b.shape, t, t.dtype)
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
test_loader = DataLoader(test_dataset, batch_size=64)
model = SiameseNetwork().to(device)
print(model.fc[0].bias[:3])
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
criterion = nn.BCELoss()
losses = []
for epoch in range(1, 9):
    losses.append(train(model, device, train_loader, optimizer, criterion))
    scheduler.step()
print(round(scheduler.get_last_lr()[0], 5), optimizer.param_groups[0]['lr'])
print(losses[-1] < losses[0])
print(test(model, device, test_loader, criterion) > 0.6)
print(torch.where(torch.tensor([0.2, 0.7, 0.5]) > 0.5, 1, 0), nn.BCELoss()(torch.tensor([0.9, 0.2]), torch.tensor([1., 0.])))
