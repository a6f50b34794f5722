# SoftSort (Prillo & Eisenschlos 2020) reference-style implementation
import torch
import torch.nn as nn

class SoftSort(nn.Module):
    def __init__(self, tau=1.0, hard=False, pow=1.0):
        super(SoftSort, self).__init__()
        self.hard = hard
        self.tau = tau
        self.pow = pow

    def forward(self, scores: torch.Tensor):
        scores = scores.unsqueeze(-1)
        sorted = scores.sort(descending=True, dim=1)[0]
        pairwise_diff = (scores.transpose(1, 2) - sorted).abs().pow(self.pow).neg() / self.tau
        P_hat = pairwise_diff.softmax(-1)
        if self.hard:
            P = torch.zeros_like(P_hat, device=P_hat.device)
            P.scatter_(-1, P_hat.topk(1, -1)[1], value=1)
            P_hat = (P - P_hat).detach() + P_hat
        return P_hat

torch.manual_seed(0)
x = torch.sin(torch.arange(12, dtype=torch.float32)).view(2, 6) * 3
x.requires_grad_(True)
for hard in [False, True]:
    ss = SoftSort(tau=0.5, hard=hard)
    P = ss(x)
    print(P.shape, P.dtype)
    print(P.sum(-1))
    print(torch.round(P, decimals=3))
    sorted_x = P @ x.unsqueeze(-1)
    print(sorted_x.squeeze(-1))
    loss = (sorted_x.squeeze(-1) * torch.arange(6.)).sum()
    loss.backward()
    print(x.grad)
    x.grad = None
print(ss)
print(torch.sort(x.detach(), descending=True, dim=1))
