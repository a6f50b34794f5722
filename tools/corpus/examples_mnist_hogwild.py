"""pytorch/examples mnist_hogwild: model.share_memory(), torch.multiprocessing with the spawn-safe
__main__ guard, each worker seeding itself and training the shared parameters with SGD."""
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = x.view(-1, 64)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


def make_dataset():
    g = torch.Generator().manual_seed(7)
    protos = torch.randn(4, 64, generator=g)
    labels = torch.arange(160) % 4
    return TensorDataset(protos[labels] + 0.3 * torch.randn(160, 64, generator=g), labels)


def train(rank, args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args['seed'] + rank)
    train_loader = DataLoader(dataset, **dataloader_kwargs)
    optimizer = optim.SGD(model.parameters(), lr=args['lr'], momentum=args['momentum'])
    for epoch in range(1, args['epochs'] + 1):
        train_epoch(epoch, args, model, device, train_loader, optimizer)


def train_epoch(epoch, args, model, device, data_loader, optimizer):
    model.train()
    for batch_idx, (data, target) in enumerate(data_loader):
        optimizer.zero_grad()
        output = model(data.to(device))
        loss = F.nll_loss(output, target.to(device))
        loss.backward()
        optimizer.step()


def test_epoch(model, device, data_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in data_loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction='sum').item()
            pred = output.max(1)[1]
            correct += pred.eq(target.to(device)).sum().item()
    return test_loss / len(data_loader.dataset), correct / len(data_loader.dataset)


if __name__ == '__main__':
    args = {'seed': 1, 'lr': 0.05, 'momentum': 0.5, 'epochs': 3, 'num_processes': 2, 'batch_size': 16}
    device = torch.device("cpu")
    dataloader_kwargs = {'batch_size': args['batch_size'], 'shuffle': True}
    torch.manual_seed(args['seed'])
    mp.set_start_method('spawn', force=True)
    model = Net().to(device)
    model.share_memory()
    print(all(p.is_shared() for p in model.parameters()))
    dataset = make_dataset()
    before = test_epoch(model, device, DataLoader(dataset, batch_size=64))
    processes = []
    for rank in range(args['num_processes']):
        p = mp.Process(target=train, args=(rank, args, model, device, dataset, dataloader_kwargs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    print([p.exitcode for p in processes])
    after = test_epoch(model, device, DataLoader(dataset, batch_size=64))
    print('shared weights trained:', after[0] < before[0], after[1] > 0.9)
    t = torch.zeros(3)
    print(t.is_shared(), t.share_memory_() is t, t.is_shared())
