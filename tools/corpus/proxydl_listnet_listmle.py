# allRank-style ListNet / ListMLE losses
import torch
import torch.nn.functional as F

PADDED_Y_VALUE = -1
DEFAULT_EPS = 1e-10

def listNet(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
    y_pred = y_pred.clone()
    y_true = y_true.clone()
    mask = y_true == padded_value_indicator
    y_pred[mask] = float('-inf')
    y_true[mask] = float('-inf')
    preds_smax = F.softmax(y_pred, dim=1)
    true_smax = F.softmax(y_true, dim=1)
    preds_smax = preds_smax + eps
    preds_log = torch.log(preds_smax)
    return torch.mean(-torch.sum(true_smax * preds_log, dim=1))

def listMLE(y_pred, y_true, eps=DEFAULT_EPS, padded_value_indicator=PADDED_Y_VALUE):
    # shuffle for randomised tie resolution -- use identity here for determinism
    random_indices = torch.arange(y_pred.shape[-1])
    y_pred_shuffled = y_pred[:, random_indices]
    y_true_shuffled = y_true[:, random_indices]
    y_true_sorted, indices = y_true_shuffled.sort(descending=True, dim=-1)
    mask = y_true_sorted == padded_value_indicator
    preds_sorted_by_true = torch.gather(y_pred_shuffled, dim=1, index=indices)
    preds_sorted_by_true[mask] = float("-inf")
    max_pred_values, _ = preds_sorted_by_true.max(dim=1, keepdim=True)
    preds_sorted_by_true_minus_max = preds_sorted_by_true - max_pred_values
    cumsums = torch.cumsum(preds_sorted_by_true_minus_max.exp().flip(dims=[1]), dim=1).flip(dims=[1])
    observation_loss = torch.log(cumsums + eps) - preds_sorted_by_true_minus_max
    observation_loss[mask] = 0.0
    return torch.mean(torch.sum(observation_loss, dim=1))

def listMLE_lcse(y_pred, y_true):
    y_true_sorted, indices = y_true.sort(descending=True, dim=-1, stable=True)
    p = y_pred.gather(1, indices)
    lse = torch.logcumsumexp(p.flip(-1), dim=-1).flip(-1)
    return (lse - p).sum(-1).mean()

y_pred = (torch.sin(torch.arange(10.)) * 2).view(2, 5).requires_grad_()
y_true = torch.tensor([[3., 1., 0., 2., -1.], [0., 2., 2., 1., 0.]])
l1 = listNet(y_pred, y_true)
print("listnet", l1)
l1.backward()
print(y_pred.grad)
y_pred.grad.zero_()
l2 = listMLE(y_pred, y_true)
print("listmle", l2.item())
l2.backward()
print(y_pred.grad)
y_pred.grad = None
l3 = listMLE_lcse(y_pred, torch.tensor([[3., 1., 0., 2., 1.], [0., 2., 2., 1., 0.]]))
print(l3)
l3.backward()
print(y_pred.grad)
print(torch.logcumsumexp(torch.tensor([0., float('-inf'), 1.]), 0))
print(torch.sort(torch.tensor([2, 1, 2, 0, 1]), stable=True))
