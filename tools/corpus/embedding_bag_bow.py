"""nn.Embedding and nn.EmbeddingBag as the text-classification tutorial and bag-of-words models use them."""
import torch
import torch.nn as nn
import torch.nn.functional as F

weight = torch.arange(20.0).reshape(5, 4) / 10
emb = nn.Embedding.from_pretrained(weight)
print(emb, emb.weight.requires_grad)
print(emb(torch.tensor([[0, 2], [4, 4]])))
emb_trainable = nn.Embedding.from_pretrained(weight, freeze=False)
print(emb_trainable.weight.requires_grad)

pad = nn.Embedding(6, 3, padding_idx=0)
print(pad, pad.weight[0])
out = pad(torch.tensor([[0, 1, 2], [3, 0, 0]]))
out.sum().backward()
print('padding row gets no gradient:', pad.weight.grad[0], pad.weight.grad[1])
print(nn.Embedding(10, 3, max_norm=1.0))
print(F.embedding(torch.tensor([1, 3]), weight))

bag_sum = nn.EmbeddingBag.from_pretrained(weight, mode='sum')
bag_mean = nn.EmbeddingBag.from_pretrained(weight, mode='mean')
bag_max = nn.EmbeddingBag.from_pretrained(weight, mode='max')
print(bag_mean)
text = torch.tensor([1, 2, 4, 0, 3, 3])
offsets = torch.tensor([0, 3])
print('sum ', bag_sum(text, offsets))
print('mean', bag_mean(text, offsets))
print('max ', bag_max(text, offsets))
print('2-D input', bag_mean(torch.tensor([[1, 2], [3, 4]])))
print('per_sample_weights', bag_sum(text, offsets, per_sample_weights=torch.tensor([1.0, 0.5, 0.0, 2.0, 1.0, 1.0])))
print('empty bag', bag_sum(torch.tensor([1, 2]), torch.tensor([0, 0, 2])))
print('include_last_offset', nn.EmbeddingBag.from_pretrained(weight, mode='sum', include_last_offset=True)(text, torch.tensor([0, 3, 6])))
print('functional', F.embedding_bag(text, weight, offsets, mode='mean'))

vocab = {'good': 0, 'great': 1, 'fine': 2, 'bad': 3, 'awful': 4, 'poor': 5, 'movie': 6, 'the': 7}
reviews = [('the movie good great', 1), ('bad awful movie', 0), ('great fine', 1),
           ('the poor bad', 0), ('good movie', 1), ('awful the poor movie', 0)]


def collate(batch):
    labels, tokens, offsets = [], [], [0]
    for sentence, label in batch:
        ids = torch.tensor([vocab[w] for w in sentence.split()], dtype=torch.int64)
        tokens.append(ids)
        offsets.append(ids.size(0))
        labels.append(label)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    return torch.tensor(labels), torch.cat(tokens), offsets


class TextClassifier(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            self.embedding.weight.copy_(torch.linspace(-0.5, 0.5, 8 * 4).reshape(8, 4).flip(0))
            self.fc.weight.copy_(torch.linspace(-0.3, 0.3, 8).reshape(2, 4))
            self.fc.bias.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


labels, tokens, offs = collate(reviews)
print(labels, tokens, offs)
model = TextClassifier(len(vocab), 4, 2)
print(model)
optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
criterion = nn.CrossEntropyLoss()
for epoch in range(30):
    optimizer.zero_grad()
    loss = criterion(model(tokens, offs), labels)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    if epoch % 10 == 0:
        print(f'epoch {epoch} loss {loss.item():.4f}')
with torch.no_grad():
    pred = model(tokens, offs).argmax(1)
print('accuracy', (pred == labels).sum().item() / len(labels))
test_labels, test_tokens, test_offs = collate([('good great movie', 1), ('bad poor', 0)])
print('test', model(test_tokens, test_offs).argmax(1).tolist())
