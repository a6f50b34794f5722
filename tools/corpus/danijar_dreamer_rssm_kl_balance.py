# Dreamer-style RSSM: deterministic GRU state + categorical stochastic state with straight-through
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributions as td

torch.manual_seed(0)

def fill_(module, scale=0.05):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float32).reshape(p.shape) % 7 - 3) * scale / (1 + i))

class RSSM(nn.Module):
    def __init__(self, action_dim=2, embed_dim=8, deter=16, stoch=4, classes=4, hidden=16):
        super().__init__()
        self.stoch, self.classes = stoch, classes
        self.img_in = nn.Linear(stoch * classes + action_dim, hidden)
        self.cell = nn.GRUCell(hidden, deter)
        self.img_out = nn.Sequential(nn.Linear(deter, hidden), nn.ELU(), nn.Linear(hidden, stoch * classes))
        self.obs_out = nn.Sequential(nn.Linear(deter + embed_dim, hidden), nn.ELU(), nn.Linear(hidden, stoch * classes))
        self.deter = deter

    def initial(self, batch):
        return dict(
            logit=torch.zeros(batch, self.stoch, self.classes),
            stoch=torch.zeros(batch, self.stoch, self.classes),
            deter=torch.zeros(batch, self.deter),
        )

    def get_dist(self, logit):
        return td.Independent(td.OneHotCategoricalStraightThrough(logits=logit), 1)

    def img_step(self, prev, action):
        x = torch.cat([prev["stoch"].flatten(1), action], -1)
        x = F.elu(self.img_in(x))
        deter = self.cell(x, prev["deter"])
        logit = self.img_out(deter).reshape(-1, self.stoch, self.classes)
        # unimix: mix 1% uniform into the categorical
        probs = F.softmax(logit, -1)
        probs = 0.99 * probs + 0.01 / self.classes
        logit = torch.log(probs)
        stoch = self.get_dist(logit).mode if False else F.one_hot(logit.argmax(-1), self.classes).float()
        return dict(logit=logit, stoch=stoch, deter=deter)

    def obs_step(self, prev, action, embed):
        prior = self.img_step(prev, action)
        x = torch.cat([prior["deter"], embed], -1)
        logit = self.obs_out(x).reshape(-1, self.stoch, self.classes)
        probs = 0.99 * logit.softmax(-1) + 0.01 / self.classes
        logit = probs.log()
        sample = F.one_hot(torch.argmax(logit, dim=-1), self.classes).float()
        # straight-through
        stoch = sample + probs - probs.detach()
        post = dict(logit=logit, stoch=stoch, deter=prior["deter"])
        return post, prior

def kl_loss(post, prior, free=1.0, balance=0.8):
    dist = lambda l: td.Independent(td.OneHotCategorical(logits=l), 1)
    rep = td.kl_divergence(dist(post["logit"]), dist(prior["logit"].detach()))
    dyn = td.kl_divergence(dist(post["logit"].detach()), dist(prior["logit"]))
    rep_c = torch.clip(rep, min=free)
    dyn_c = torch.maximum(dyn, torch.tensor(free))
    return balance * dyn_c.mean() + (1 - balance) * rep_c.mean(), rep, dyn

model = RSSM()
fill_(model)
B, T = 3, 5
actions = torch.stack([torch.sin(torch.arange(T) * 0.7 + b) for b in range(B)])[..., None].repeat(1, 1, 2)
actions[..., 1] = actions[..., 1] * -0.5
embeds = torch.cos(torch.linspace(0, 3, B * T * 8)).reshape(B, T, 8)
print("actions", actions.shape, actions.dtype)

state = model.initial(B)
posts, priors = [], []
for t in range(T):
    post, prior = model.obs_step(state, actions[:, t], embeds[:, t])
    posts.append(post); priors.append(prior)
    state = post
stack = lambda xs, k: torch.stack([x[k] for x in xs], 1)
post = {k: stack(posts, k) for k in posts[0]}
prior = {k: stack(priors, k) for k in priors[0]}
print("deter", post["deter"].shape, "stoch", post["stoch"].shape)
print("deter[0,-1]", post["deter"][0, -1, :4])
loss, rep, dyn = kl_loss(post, prior)
print("rep kl", rep.shape, f"{rep.mean().item():.4f}")
print("dyn kl", f"{dyn.mean().item():.4f}", torch.allclose(rep, dyn))
print("kl loss", round(loss.item(), 5))
feat = torch.cat([post["stoch"].flatten(2), post["deter"]], -1)
print("feat", feat.shape)
(feat.pow(2).mean() + loss).backward()
gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 100.0)
print("grad norm", float(gn))
print("cell grad", model.cell.weight_hh.grad.abs().sum().item())
dist = td.Independent(td.OneHotCategorical(logits=post["logit"]), 1)
print("entropy", dist.entropy().shape, dist.entropy().mean().item())
print("batch_shape", dist.batch_shape, "event_shape", dist.event_shape)
print("log_prob of mode", dist.log_prob(F.one_hot(post["logit"].argmax(-1), 4).float()).mean().item())
st = td.OneHotCategoricalStraightThrough(logits=post["logit"][0, 0])
s = st.rsample()
print("rsample", s.shape, s.sum(-1), s.requires_grad)
