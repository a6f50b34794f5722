"""rasbt/deeplearning-models style softmax-regression notebook, trained instead with the
multi-class hinge losses (nn.MultiMarginLoss, F.multilabel_margin_loss) on small integer-valued
features, where many terms sit exactly on the margin, plus a p < 1 norm penalty on weights that
contain exact zeros (torch.linalg.vector_norm, torch.dist, torch.renorm). Weights come from a
fixed pattern: the run is seed-free."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_printoptions(precision=4)

# integer-valued features: logits tie with the margin
features = torch.tensor([[1., 0., 2.], [0., 1., 1.], [2., 2., 0.], [1., 1., 1.],
                         [0., 0., 1.], [2., 0., 0.], [1., 2., 2.], [0., 2., 0.]])
targets = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])


class SoftmaxRegression(nn.Module):
    def __init__(self, num_features, num_classes):
        super().__init__()
        self.linear = nn.Linear(num_features, num_classes)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([[1., 0., 0.], [0., 1., 0.], [0., 0., 0.]]))
            self.linear.bias.zero_()

    def forward(self, x):
        logits = self.linear(x)
        return logits, F.softmax(logits, dim=1)


model = SoftmaxRegression(3, 3)
criterion = nn.MultiMarginLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

logits, _ = model(features)
loss = criterion(logits, targets)
loss.backward()
print('first loss: %.4f' % loss.item())
print('weight grad:\n', model.linear.weight.grad)
print('bias grad:', model.linear.bias.grad)

for epoch in range(5):
    optimizer.zero_grad()
    logits, probas = model(features)
    cost = criterion(logits, targets)
    penalty = torch.linalg.vector_norm(model.linear.weight, 0.5, dim=1).sum()
    (cost + 0.01 * penalty).backward()
    optimizer.step()
    acc = (probas.argmax(1) == targets).float().mean() * 100
    print('Epoch: %03d | Cost: %.4f | Penalty: %.4f | Train ACC: %.2f%%'
          % (epoch + 1, cost.item(), penalty.item(), acc.item()))
print('weights:\n', model.linear.weight.data)

# squared hinge with class weights and a margin
x = torch.tensor([[1., 0.5, 1.], [0., 1., 0.], [0.5, 2., 1.5]], requires_grad=True)
loss = F.multi_margin_loss(x, torch.tensor([0, 1, 1]), p=2, margin=0.5,
                           weight=torch.tensor([1., 2., 3.]), reduction='none')
loss.sum().backward()
print('squared hinge:', loss.detach(), '\n', x.grad)

# multi-label hinge: targets end at the first -1
x = torch.tensor([[1., 0., 1., 2.], [0., 1., 0., 0.]], requires_grad=True)
y = torch.tensor([[0, 3, -1, 1], [2, 1, -1, -1]])
loss = nn.MultiLabelMarginLoss(reduction='sum')(x, y)
loss.backward()
print('multilabel hinge: %.4f' % loss.item(), '\n', x.grad)

# p-norms of rows with zeros
w = torch.tensor([[1., 0., 2.], [0., 0., 3.], [0., 0., 0.]], requires_grad=True)
for p in (0.5, 1.5, 3.0):
    w.grad = None
    n = torch.linalg.vector_norm(w, p, dim=1)
    n.sum().backward()
    print('p=%.1f norms' % p, n.detach(), '\n', w.grad)
w.grad = None
d = torch.dist(w, torch.ones(3, 3), 0.5)
d.backward()
print('dist p=0.5: %.4f' % d.item(), '\n', w.grad)
w.grad = None
r = torch.renorm(w, 0.5, 0, 2.0)
r.sum().backward()
print("renorm p=0.5:\n", r.detach(), "\n", torch.round(w.grad * 1e4) / 1e4)
