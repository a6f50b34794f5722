"""pytorch/examples-style VAE: reparameterization with randn_like, BCE + KLD loss, Adam."""
# Copied from tools/corpus/examples_vae.py with `import tapegrad as torch`: an ordinary script that
# tools/typecheck.sh type-checks (0 errors expected).

import tapegrad as torch
import tapegrad.utils.data
from tapegrad import nn, optim
from tapegrad.nn import functional as F

torch.manual_seed(1)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Binary 'images': four prototypes with pixels flipped at random.
protos = (torch.rand(4, 784) > 0.5).float()
idx = torch.randint(0, 4, (256,))
flip = (torch.rand(256, 784) < 0.05).float()
data = (protos[idx] - flip).abs()
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data, idx), batch_size=64, shuffle=True)


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc21 = nn.Linear(128, 8)
        self.fc22 = nn.Linear(128, 8)
        self.fc3 = nn.Linear(8, 128)
        self.fc4 = nn.Linear(128, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    return train_loss / len(train_loader.dataset)


losses = [train(epoch) for epoch in range(1, 5)]
print('====> loss decreased:', losses[-1] < losses[0])
print('====> final average loss below 400:', losses[-1] < 400)

model.eval()
with torch.no_grad():
    sample = torch.randn(16, 8).to(device)
    sample = model.decode(sample).cpu()
    print(sample.view(16, 1, 28, 28).shape, bool(((sample >= 0) & (sample <= 1)).all()))
    recon, mu, logvar = model(data[:8])
    n = min(data.size(0), 8)
    comparison = torch.cat([data[:n].view(8, 1, 28, 28), recon.view(8, 1, 28, 28)[:n]])
    print(comparison.shape)
    print(F.binary_cross_entropy(torch.tensor([0.25, 0.75]), torch.tensor([0.0, 1.0])).item())
