"""Point-cloud toolkit in the style of inferno333/Efficient-SupWMA's PointNetfeat (1x1 Conv1d
encoder, BatchNorm1d, max over points) and the plain-PyTorch helpers point-cloud repositories
carry: farthest point sampling by a Python loop with masked writes, kNN by topk on a pairwise
distance built from bmm, grouping by gather and by batched advanced indexing, a ball query that
sorts masked indices, and chamfer distance by torch.cdist + min.  Synthetic clouds and numpy
starting weights; a few SGD steps of classification plus a chamfer autoencoder step."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(7)
B, N, K = 4, 48, 3
clouds = torch.from_numpy(rng.uniform(-1, 1, (B, N, 3)).astype(np.float32))
labels = torch.tensor([0, 1, 2, 1])


def farthest_point_sample(xyz, npoint):
    b, n, _ = xyz.shape
    centroids = torch.zeros(b, npoint, dtype=torch.long)
    distance = torch.ones(b, n) * 1e10
    farthest = torch.zeros(b, dtype=torch.long)
    batch_indices = torch.arange(b, dtype=torch.long)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(b, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def index_points(points, idx):
    view_shape = [idx.shape[0]] + [1] * (idx.dim() - 1)
    repeat_shape = [1] + list(idx.shape[1:])
    batch = torch.arange(points.shape[0]).view(view_shape).repeat(repeat_shape)
    return points[batch, idx, :]


def square_distance(src, dst):
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(src.shape[0], -1, 1)
    dist += torch.sum(dst ** 2, -1).view(src.shape[0], 1, -1)
    return dist


def query_ball_point(radius, nsample, xyz, new_xyz):
    b, n, _ = xyz.shape
    s = new_xyz.shape[1]
    group_idx = torch.arange(n, dtype=torch.long).view(1, 1, n).repeat([b, s, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = n
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(b, s, 1).repeat([1, 1, nsample])
    mask = group_idx == n
    group_idx[mask] = group_first[mask]
    return group_idx


def chamfer(x, y):
    d = torch.cdist(x, y)
    return d.min(dim=2).values.mean(1) + d.min(dim=1).values.mean(1)


fps = farthest_point_sample(clouds, 6)
print("fps", fps.tolist(), fps.dtype)
centres = index_points(clouds, fps)
print("centres", centres.shape, [round(v, 4) for v in centres[0, 1].tolist()])
ball = query_ball_point(0.6, 5, clouds, centres)
print("ball", ball.shape, ball[0].tolist())
grouped = index_points(clouds, ball) - centres.unsqueeze(2)
print("grouped", grouped.shape, round(grouped.abs().max().item(), 4))
knn_d, knn_i = square_distance(centres, clouds).topk(4, dim=-1, largest=False)
print("knn", knn_i[1].tolist(), [round(v, 4) for v in knn_d[1, 0].tolist()])
gathered = torch.gather(clouds.unsqueeze(1).expand(-1, 6, -1, -1), 2,
                        knn_i.unsqueeze(-1).expand(-1, -1, -1, 3))
print("gathered equal", torch.equal(gathered, index_points(clouds, knn_i)))


class PointNetCls(nn.Module):
    def __init__(self, k=K):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.fc = nn.Linear(32, k)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        x = torch.max(x, 2, keepdim=True)[0].view(-1, 32)
        return F.log_softmax(self.fc(x), dim=1)


model = PointNetCls()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(4):
    opt.zero_grad()
    out = model(clouds.transpose(2, 1))
    loss = F.nll_loss(out, labels)
    loss.backward()
    opt.step()
    correct = out.max(1)[1].eq(labels).sum()
    print(step, "loss %.4f" % loss.item(), "correct", correct.item())
model.eval()
with torch.no_grad():
    print("eval", model(clouds.transpose(2, 1)).argmax(1).tolist(),
          [round(v, 4) for v in model.bn2.running_mean[:4].tolist()])

# a chamfer "autoencoder": learnable offsets pulling a sampled sub-cloud onto the full cloud
offsets = torch.zeros(B, 6, 3, requires_grad=True)
opt2 = torch.optim.Adam([offsets], lr=0.05)
for step in range(5):
    opt2.zero_grad()
    cd = chamfer(centres + offsets, clouds).mean()
    cd.backward()
    opt2.step()
    print("chamfer %d %.4f" % (step, cd.item()))
print("cdist p=1", round(torch.cdist(centres, clouds, p=1).mean().item(), 4),
      "pdist", round(F.pdist(centres[0]).sum().item(), 4))
