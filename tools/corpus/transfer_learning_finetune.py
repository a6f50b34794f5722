"""Transfer learning tutorial: a small 'pretrained' backbone (saved and reloaded), finetuning
the whole net vs. using it as a fixed feature extractor (requires_grad = False, replaced fc
head), lr_scheduler.StepLR, train/val phases with set_grad_enabled, copy.deepcopy of the best
state_dict, running_corrects with torch.sum(preds == labels.data)."""
import copy
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset


class TinyResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer1(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


torch.manual_seed(0)
pretrained = TinyResNet()
weights = copy.deepcopy(pretrained.state_dict())
class_names = ['ants', 'bees']
images = torch.rand(48, 3, 8, 8)
labels = torch.arange(48) % 2
images[labels == 1, 0] += 1.0
dataloaders = {'train': DataLoader(TensorDataset(images[:32], labels[:32]), batch_size=8, shuffle=True),
               'val': DataLoader(TensorDataset(images[32:], labels[32:]), batch_size=8)}
dataset_sizes = {x: len(dataloaders[x].dataset) for x in ['train', 'val']}
print(dataset_sizes, class_names)
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def train_model(model, criterion, optimizer, scheduler, num_epochs=5):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    history = []
    for epoch in range(num_epochs):
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()
            else:
                model.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            history.append((phase, epoch_loss))
            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())
    time_elapsed = time.time() - since
    print(f'Training complete in {time_elapsed // 60:.0f}m', type(best_acc).__name__ if isinstance(best_acc, float) else best_acc.dtype)
    model.load_state_dict(best_model_wts)
    return model, history


model_ft = TinyResNet()
model_ft.load_state_dict(weights)
num_ftrs = model_ft.fc.in_features
model_ft.fc = nn.Linear(num_ftrs, 2)
model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
model_ft, history = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=4)
print(len(history), history[0][0], history[1][0], history[-2][1] < history[0][1])

model_conv = TinyResNet()
model_conv.load_state_dict(weights)
for param in model_conv.parameters():
    param.requires_grad = False
num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, 2)
print([name for name, p in model_conv.named_parameters() if p.requires_grad])
optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.01, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=2, gamma=0.1)
frozen_before = model_conv.conv1.weight.clone()
model_conv, history = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, num_epochs=4)
print(torch.equal(frozen_before, model_conv.conv1.weight), model_conv.conv1.weight.grad is None)
print(optimizer_conv.param_groups[0]['lr'], exp_lr_scheduler.get_last_lr())
print(model_conv.bn1.num_batches_tracked.dtype, torch.equal(model_conv.bn1.running_mean, weights['bn1.running_mean']))
was_training = model_conv.training
model_conv.eval()
with torch.no_grad():
    outputs = model_conv(images[:4])
    _, preds = torch.max(outputs, 1)
    print([class_names[p] in class_names for p in preds], was_training, model_conv.training)
print(torch.sum(torch.tensor([1, 0, 1]) == torch.tensor([1, 1, 1])).double() / 3)
