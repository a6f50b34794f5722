"""dataflowr/notebooks Module10/sol/10_GAN_double_moon_sol.ipynb: a GAN and a conditional GAN (labels
one-hot encoded with FloatTensor(...).zero_().scatter_) on the two-moons data, Adam on both nets,
losses accumulated through `loss.cpu().data.numpy()`.

Adapted: sklearn's make_moons -> the same construction in numpy (400 points); the plots -> prints;
the random streams (torch.empty(...).normal_() noise, LongTensor(...).random_() labels, parameter
initialisation) -> numpy RandomState draws, so the printed values do not depend on torch's stream;
500/1000 epochs -> 3.
"""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.RandomState(0)


def make_moons(n_samples, noise):
    n_out = n_samples // 2
    n_in = n_samples - n_out
    outer = np.stack([np.cos(np.linspace(0, np.pi, n_out)), np.sin(np.linspace(0, np.pi, n_out))], 1)
    inner = np.stack([1 - np.cos(np.linspace(0, np.pi, n_in)),
                      1 - np.sin(np.linspace(0, np.pi, n_in)) - .5], 1)
    X = np.concatenate([outer, inner]) + rng.normal(scale=noise, size=(n_samples, 2))
    y = np.concatenate([np.zeros(n_out, dtype=np.int64), np.ones(n_in, dtype=np.int64)])
    p = rng.permutation(n_samples)
    return X[p], y[p]


def init_(net):
    with torch.no_grad():
        for p in net.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1])
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))


def noise(n, d):
    return torch.from_numpy(rng.normal(size=(n, d)).astype(np.float32))


X, Y = make_moons(n_samples=400, noise=0.05)
n_samples = X.shape[0]
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
print('Using gpu: %s ' % torch.cuda.is_available())

z_dim = 32
hidden_dim = 128

net_G = nn.Sequential(nn.Linear(z_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 2))
net_D = nn.Sequential(nn.Linear(2, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1), nn.Sigmoid())
net_G = net_G.to(device)
net_D = net_D.to(device)
init_(net_G)
init_(net_D)

batch_size = 50
lr = 1e-3
nb_epochs = 3
optimizer_G = torch.optim.Adam(net_G.parameters(), lr=lr)
optimizer_D = torch.optim.Adam(net_D.parameters(), lr=lr)

loss_D_epoch = []
loss_G_epoch = []
for e in range(nb_epochs):
    rng.shuffle(X)
    real_samples = torch.from_numpy(X).type(torch.FloatTensor)
    loss_G = 0
    loss_D = 0
    for t, real_batch in enumerate(real_samples.split(batch_size)):
        # improving D
        z = noise(batch_size, z_dim).to(device)
        fake_batch = net_G(z)
        D_scores_on_real = net_D(real_batch.to(device))
        D_scores_on_fake = net_D(fake_batch)
        loss = -torch.mean(torch.log(1 - D_scores_on_fake) + torch.log(D_scores_on_real))
        optimizer_D.zero_grad()
        loss.backward()
        optimizer_D.step()
        loss_D += loss.cpu().data.numpy()
        # improving G
        z = noise(batch_size, z_dim).to(device)
        fake_batch = net_G(z)
        D_scores_on_fake = net_D(fake_batch)
        loss = -torch.mean(torch.log(D_scores_on_fake))
        optimizer_G.zero_grad()
        loss.backward()
        optimizer_G.step()
        loss_G += loss.cpu().data.numpy()
    loss_D_epoch.append(loss_D)
    loss_G_epoch.append(loss_G)
    print(e, type(loss_D).__name__, loss_D.dtype, "%.4f %.4f" % (loss_D, loss_G))

z = noise(n_samples, z_dim).to(device)
fake_samples = net_G(z)
fake_data = fake_samples.cpu().data.numpy()
all_data = np.concatenate((X, fake_data), axis=0)
print(all_data.shape, all_data.dtype, np.round(fake_data.mean(0), 4), np.round(fake_data.std(0), 4))

# conditional GAN
label_dim = 2


class generator(nn.Module):
    def __init__(self, z_dim=z_dim, label_dim=label_dim, hidden_dim=hidden_dim):
        super(generator, self).__init__()
        self.net = nn.Sequential(nn.Linear(z_dim + label_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 2))

    def forward(self, input, label_onehot):
        x = torch.cat([input, label_onehot], 1)
        return self.net(x)


class discriminator(nn.Module):
    def __init__(self, z_dim=z_dim, label_dim=label_dim, hidden_dim=hidden_dim):
        super(discriminator, self).__init__()
        self.net = nn.Sequential(nn.Linear(2 + label_dim, hidden_dim), nn.ReLU(),
                                 nn.Linear(hidden_dim, 1), nn.Sigmoid())

    def forward(self, input, label_onehot):
        x = torch.cat([input, label_onehot], 1)
        return self.net(x)


net_CG = generator().to(device)
net_CD = discriminator().to(device)
init_(net_CG)
init_(net_CD)
optimizer_CG = torch.optim.Adam(net_CG.parameters(), lr=lr)
optimizer_CD = torch.optim.Adam(net_CD.parameters(), lr=lr)

# the notebook draws labels with LongTensor(n, 1).random_() % label_dim: check the idiom's range
drawn = torch.LongTensor(1000, 1).random_() % label_dim
print(drawn.dtype, drawn.shape, sorted(set(drawn.view(-1).tolist())))

for e in range(nb_epochs):
    rperm = rng.permutation(X.shape[0])
    np.take(X, rperm, axis=0, out=X)
    np.take(Y, rperm, axis=0, out=Y)
    real_samples = torch.from_numpy(X).type(torch.FloatTensor)
    real_labels = torch.from_numpy(Y).type(torch.LongTensor)
    loss_G = 0
    loss_D = 0
    for real_batch, real_batch_label in zip(real_samples.split(batch_size), real_labels.split(batch_size)):
        z = noise(batch_size, z_dim).to(device)
        label = torch.from_numpy(rng.randint(0, 1 << 20, size=(batch_size, 1))) % label_dim
        label_onehot = torch.FloatTensor(batch_size, label_dim).zero_()
        label_onehot = label_onehot.scatter_(1, label, 1).to(device)
        fake_batch = net_CG(z, label_onehot)
        D_scores_on_fake = net_CD(fake_batch, label_onehot)
        label_onehot = torch.FloatTensor(batch_size, label_dim).zero_()
        label_onehot = label_onehot.scatter_(1, real_batch_label.unsqueeze(1), 1).to(device)
        D_scores_on_real = net_CD(real_batch.to(device), label_onehot)
        loss = -torch.mean(torch.log(1 - D_scores_on_fake) + torch.log(D_scores_on_real))
        optimizer_CD.zero_grad()
        loss.backward()
        optimizer_CD.step()
        loss_D += loss.cpu().data.numpy()

        z = noise(batch_size, z_dim).to(device)
        label = torch.from_numpy(rng.randint(0, 1 << 20, size=(batch_size, 1))) % label_dim
        label_onehot = torch.FloatTensor(batch_size, label_dim).zero_()
        label_onehot = label_onehot.scatter_(1, label, 1).to(device)
        fake_batch = net_CG(z, label_onehot)
        D_scores_on_fake = net_CD(fake_batch, label_onehot)
        loss = -torch.mean(torch.log(D_scores_on_fake))
        optimizer_CG.zero_grad()
        loss.backward()
        optimizer_CG.step()
        loss_G += loss.cpu().data.numpy()
    print("cgan", e, "%.4f %.4f" % (loss_D, loss_G))

z = noise(n_samples, z_dim).to(device)
label = torch.from_numpy(rng.randint(0, 2, size=(n_samples, 1)))
label_onehot = torch.FloatTensor(n_samples, label_dim).zero_()
label_onehot = label_onehot.scatter_(1, label, 1).to(device)
print(label_onehot[:3], label_onehot.sum(0))
fake_samples = net_CG(z, label_onehot)
fake_data = fake_samples.cpu().data.numpy()
print(fake_data.shape, np.round(fake_data[label.squeeze().numpy() == 0].mean(0), 4),
      np.round(fake_data[label.squeeze().numpy() == 1].mean(0), 4))
