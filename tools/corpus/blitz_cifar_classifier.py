"""60-minute blitz, part 4: train a CIFAR-shaped classifier (synthetic, separable images)."""
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
classes = ('plane', 'car', 'bird', 'cat')


def make_images(n, gen):
    # Each class has its own dominant colour channel and a bright quadrant: easy to separate.
    labels = torch.randint(0, len(classes), (n,), generator=gen)
    images = torch.rand(n, 3, 32, 32, generator=gen) * 0.5
    for i, label in enumerate(labels.tolist()):
        images[i, label % 3] += 0.5
        r, c = divmod(label, 2)
        images[i, :, r * 16:(r + 1) * 16, c * 16:(c + 1) * 16] += 0.5
    return (images - 0.5) / 0.5, labels


g = torch.Generator().manual_seed(1)
train_x, train_y = make_images(256, g)
test_x, test_y = make_images(128, g)
trainloader = DataLoader(TensorDataset(train_x, train_y), batch_size=16, shuffle=True)
testloader = DataLoader(TensorDataset(test_x, test_y), batch_size=16, shuffle=False)

dataiter = iter(trainloader)
images, labels = next(dataiter)
print(images.shape, labels.shape, labels.dtype)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, len(classes))

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

epoch_losses = []
for epoch in range(4):
    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        inputs, labels = data
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    epoch_losses.append(running_loss / len(trainloader))
    print(f'[{epoch + 1}] batches: {i + 1}')
print('Finished Training')
print('loss decreased:', epoch_losses[-1] < epoch_losses[0])

PATH = os.path.join(tempfile.mkdtemp(), 'cifar_net.pth')
torch.save(net.state_dict(), PATH)
net = Net()
net.load_state_dict(torch.load(PATH, weights_only=True))

correct = 0
total = 0
with torch.no_grad():
    for data in testloader:
        images, labels = data
        outputs = net(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
print(f'Accuracy of the network on the {total} test images >= 90%: {100 * correct // total >= 90}')

correct_pred = {classname: 0 for classname in classes}
total_pred = {classname: 0 for classname in classes}
with torch.no_grad():
    for data in testloader:
        images, labels = data
        outputs = net(images)
        _, predictions = torch.max(outputs, 1)
        for label, prediction in zip(labels, predictions):
            if label == prediction:
                correct_pred[classes[label]] += 1
            total_pred[classes[label]] += 1
for classname, correct_count in correct_pred.items():
    accuracy = 100 * float(correct_count) / total_pred[classname]
    print(f'Accuracy for class: {classname:5s} is above 75%: {accuracy > 75}')
