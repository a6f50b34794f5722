# RotatE with self-adversarial negative sampling (KnowledgeGraphEmbedding-style)
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

nentity, nrelation, hidden_dim = 10, 3, 4
gamma, epsilon = 6.0, 2.0
adversarial_temperature = 1.0

embedding_range = (gamma + epsilon) / hidden_dim
entity_embedding = nn.Parameter(torch.zeros(nentity, hidden_dim * 2))
relation_embedding = nn.Parameter(torch.zeros(nrelation, hidden_dim))
with torch.no_grad():
    entity_embedding.copy_(torch.sin(torch.arange(nentity * hidden_dim * 2.0)).reshape(nentity, -1) * embedding_range)
    relation_embedding.copy_(torch.cos(torch.arange(nrelation * hidden_dim * 1.0) * 1.3).reshape(nrelation, -1) * embedding_range)
print("embedding_range", embedding_range)


def rotate(head, relation, tail, mode):
    pi = 3.14159265358979323846
    re_head, im_head = torch.chunk(head, 2, dim=2)
    re_tail, im_tail = torch.chunk(tail, 2, dim=2)
    phase_relation = relation / (embedding_range / pi)
    re_relation = torch.cos(phase_relation)
    im_relation = torch.sin(phase_relation)
    if mode == 'head-batch':
        re_score = re_relation * re_tail + im_relation * im_tail
        im_score = re_relation * im_tail - im_relation * re_tail
        re_score = re_score - re_head
        im_score = im_score - im_head
    else:
        re_score = re_head * re_relation - im_head * im_relation
        im_score = re_head * im_relation + im_head * re_relation
        re_score = re_score - re_tail
        im_score = im_score - im_tail
    score = torch.stack([re_score, im_score], dim=0)
    score = score.norm(dim=0)
    return gamma - score.sum(dim=2)


def forward(sample, mode='single'):
    if mode == 'single':
        head = torch.index_select(entity_embedding, dim=0, index=sample[:, 0]).unsqueeze(1)
        relation = torch.index_select(relation_embedding, dim=0, index=sample[:, 1]).unsqueeze(1)
        tail = torch.index_select(entity_embedding, dim=0, index=sample[:, 2]).unsqueeze(1)
    elif mode == 'tail-batch':
        head_part, tail_part = sample
        batch_size, negative_sample_size = tail_part.size(0), tail_part.size(1)
        head = torch.index_select(entity_embedding, dim=0, index=head_part[:, 0]).unsqueeze(1)
        relation = torch.index_select(relation_embedding, dim=0, index=head_part[:, 1]).unsqueeze(1)
        tail = torch.index_select(entity_embedding, dim=0, index=tail_part.view(-1)).view(batch_size, negative_sample_size, -1)
    return rotate(head, relation, tail, mode)


positive = torch.tensor([[0, 0, 1], [1, 1, 2], [2, 2, 3], [3, 0, 4], [4, 1, 5], [5, 2, 6]])
negative = (positive[:, 2:3] + torch.arange(1, 5).unsqueeze(0)) % nentity
subsampling_weight = torch.sqrt(1 / torch.tensor([4.0, 5.0, 3.0, 6.0, 4.0, 2.0]))
optimizer = torch.optim.Adam([entity_embedding, relation_embedding], lr=0.01)

for step in range(5):
    optimizer.zero_grad()
    negative_score = forward((positive, negative), mode='tail-batch')
    negative_score = (F.softmax(negative_score * adversarial_temperature, dim=1).detach()
                      * F.logsigmoid(-negative_score)).sum(dim=1)
    positive_score = forward(positive)
    positive_score = F.logsigmoid(positive_score).squeeze(dim=1)
    positive_sample_loss = - (subsampling_weight * positive_score).sum() / subsampling_weight.sum()
    negative_sample_loss = - (subsampling_weight * negative_score).sum() / subsampling_weight.sum()
    loss = (positive_sample_loss + negative_sample_loss) / 2
    regularization = 0.0001 * (entity_embedding.norm(p=3) ** 3 + relation_embedding.norm(p=3).norm(p=3) ** 3)
    loss = loss + regularization
    loss.backward()
    optimizer.step()
    log = {
        'positive_sample_loss': positive_sample_loss.item(),
        'negative_sample_loss': negative_sample_loss.item(),
        'loss': loss.item(),
    }
    print(step, {k: round(v, 4) for k, v in log.items()})

# complex-number version of the same score with torch.polar
with torch.no_grad():
    h = torch.complex(*torch.chunk(entity_embedding[positive[:, 0]], 2, dim=-1))
    t = torch.complex(*torch.chunk(entity_embedding[positive[:, 2]], 2, dim=-1))
    phase = relation_embedding[positive[:, 1]] / (embedding_range / math.pi)
    r = torch.polar(torch.ones_like(phase), phase)
    dist = (h * r - t).abs().sum(-1)
    print(h.dtype, r.dtype, dist.dtype)
    print(gamma - dist)
    print(forward(positive).squeeze(1))
    print(torch.allclose(gamma - dist, forward(positive).squeeze(1), atol=1e-4))
    print(r.abs()[0], torch.angle(r)[0])
