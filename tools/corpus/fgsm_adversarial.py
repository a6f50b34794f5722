"""Adversarial example generation tutorial (FGSM): a LeNet-style net in eval mode, the input's
gradient via requires_grad, sign(), clamp, accuracy per epsilon."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(42)
epsilons = [0, .05, .1, .3]
use_cuda = False
device = torch.device("cuda" if use_cuda and torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(8 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


# Two classes of 14x14 images: a bright left half or a bright right half.
images = torch.rand(200, 1, 14, 14) * 0.5
labels = torch.randint(0, 2, (200,))
images[labels == 0, :, :, :7] += 0.5
images[labels == 1, :, :, 7:] += 0.5
loader = DataLoader(TensorDataset(images, labels), batch_size=20, shuffle=True)
model = Net().to(device)
opt = optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    for data, target in loader:
        opt.zero_grad()
        F.nll_loss(model(data), target).backward()
        opt.step()
model.eval()


def fgsm_attack(image, epsilon, data_grad):
    sign_data_grad = data_grad.sign()
    perturbed_image = image + epsilon * sign_data_grad
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


def denorm(batch, mean=[0.1307], std=[0.3081]):
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)
    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def test(model, device, test_loader, epsilon):
    correct = 0
    adv_examples = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        data.requires_grad = True
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        data_denorm = denorm(data)
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)
        perturbed_data_normalized = (perturbed_data - 0.1307) / 0.3081
        output = model(perturbed_data_normalized)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
        if len(adv_examples) < 2:
            adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
            adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
    final_acc = correct / float(len(test_loader))
    return final_acc, adv_examples


test_loader = DataLoader(TensorDataset(images[:60], labels[:60]), batch_size=1, shuffle=False)
accuracies = []
for eps in epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    print(type(acc).__name__, len(ex), ex[0][2].shape if ex else None, ex[0][2].dtype if ex else None)
print(accuracies[0] > 0.9, accuracies[-1] <= accuracies[0])

x = torch.tensor([[0.2, 0.9], [0.5, 0.0]], requires_grad=True)
y = (x * torch.tensor([[1.0, -2.0], [0.0, 3.0]])).sum()
y.backward()
print(x.grad.sign(), fgsm_attack(x.detach(), 0.25, x.grad))
print(denorm(torch.zeros(1, 1, 1, 2)))
