"""ElectricPow/vit-pytorch-from-scratch (src/attention.py, mlp.py, encoder.py, patch_embedding.py,
transformer.py, engine.py, utils.py, train.py, evaluate.py, tests/): a small Vision Transformer
for CIFAR-10 trained with AdamW, gradient clipping (error_if_nonfinite), label smoothing and
CosineAnnealingLR, evaluated under @torch.inference_mode(), checkpointed with model, optimizer
and scheduler state and resumed.  CIFAR-10 is replaced by uint8 images drawn from numpy and
normalised per channel with tensor ops (random crop and flip by slicing), the parameters are set
from numpy, dropout is 0 and the sizes are small, so the printed values do not depend on
torch's random stream."""
import random
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Subset, TensorDataset


# ---- src/attention.py

class MultiHeadSelfAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int,
                 attention_dropout: float = 0.0, 
                 projection_dropout: float = 0.0):
        super().__init__()

        self.embed_dim = embed_dim #D
        self.num_heads = num_heads #H
        self.head_dim = embed_dim // num_heads #d = D/H

        self.scale = self.head_dim ** -0.5 #1/sqrt(d)

        if embed_dim % num_heads != 0:
            raise ValueError(f"Embedding dimension ({embed_dim}) must be divisible by number of heads ({num_heads})")

        self.qkv = nn.Linear(embed_dim, embed_dim * 3) #Q,K,V (B,N,D) -> (B,N,3D)
        self.attention_dropout = nn.Dropout(attention_dropout)

        self.projection = nn.Linear(embed_dim, embed_dim) #(B,N,D) -> (B,N,D)
        self.projection_dropout = nn.Dropout(projection_dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B,N,D)
        B, N, D = x.shape

        # Compute Q, K, V
        qkv = self.qkv(x) #(B,N,3D)
        qkv = qkv.reshape(B, N, 3, self.num_heads, self.head_dim) #(B,N,3,H,d)
        qkv = qkv.permute(2, 0, 3, 1, 4) #(3,B,H,N,d)
        q, k, v = qkv.unbind(0) #(B,H,N,d)

        # Compute attention scores
        attn_scores = torch.matmul(q, k.transpose(-2, -1)) #(B,H,N,N)
        attn_scores = attn_scores * self.scale #(B,H,N,N)

        attention = torch.softmax(attn_scores, dim=-1) #(B,H,N,N)
        attention = self.attention_dropout(attention) #(B,H,N,N)

        # Compute weighted sum of values
        x = torch.matmul(attention, v) #(B,H,N,d)
        x = x.transpose(1, 2).reshape(B, N, D) #(B,N,D)

        # Projection
        x = self.projection(x) #(B,N,D)
        x = self.projection_dropout(x) #(B,N,D)

        return x

# ---- src/mlp.py

class MLP(nn.Module):
    def __init__(self, embed_dim: int, mlp_dim: int, dropout: float = 0.0):
        super().__init__()

        self.fc1 = nn.Linear(embed_dim, mlp_dim) #(B,N,D) -> (B,N,mlp_dim)
        self.act = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)

        self.fc2 = nn.Linear(mlp_dim, embed_dim) #(B,N,mlp_dim) -> (B,N,D)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B,N,D)
        x = self.fc1(x) #(B,N,D) -> (B,N,mlp_dim)
        x = self.act(x) #(B,N,mlp_dim)
        x = self.dropout1(x) #(B,N,mlp_dim)

        x = self.fc2(x) #(B,N,mlp_dim) -> (B,N,D)
        x = self.dropout2(x) #(B,N,D)

        return x

# ---- src/encoder.py


class Encoder1Block(nn.Module):
    def __init__(self, 
                 embed_dim: int, num_heads: int, mlp_dim: int,
                 attention_dropout: float = 0.0, projection_dropout: float = 0.0,
                 mlp_dropout: float = 0.0):
        super().__init__()

        self.norm1 = nn.LayerNorm(embed_dim) #(B,N,D) -> (B,N,D)
        self.attention = MultiHeadSelfAttention(embed_dim, num_heads,
                                                attention_dropout,
                                                projection_dropout) #(B,N,D) -> (B,N,D)
        self.norm2 = nn.LayerNorm(embed_dim) #(B,N,D) -> (B,N,D)
        self.mlp = MLP(embed_dim, mlp_dim, mlp_dropout) #(B,N,D) -> (B,N,D) 

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B,N,D)
        x = x + self.attention(self.norm1(x)) #(B,N,D)
        x = x + self.mlp(self.norm2(x)) #(B,N,D)
        return x


class Encoder(nn.Module):
    def __init__(self, 
                 num_layers: int, embed_dim: int, num_heads: int, mlp_dim: int,
                 attention_dropout: float = 0.0, projection_dropout: float = 0.0,
                 mlp_dropout: float = 0.0):
        super().__init__()

        if num_layers < 1:
            raise ValueError(f"Number of layers ({num_layers}) must be at least 1")
        
        blocks =[]
        for _ in range(num_layers):
            block = Encoder1Block(embed_dim, num_heads, mlp_dim,
                                attention_dropout, projection_dropout,
                                mlp_dropout)
            blocks.append(block)
        self.blocks = nn.ModuleList(blocks)

        #Layernorm after the last block (B,N,D) -> (B,N,D)
        self.norm = nn.LayerNorm(embed_dim) 

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: (B,N,D)
        for block in self.blocks:
            x = block(x) #(B,N,D)
        x = self.norm(x) #(B,N,D)
        return x

# ---- src/patch_embedding.py

class PatchEmbedding(nn.Module):
    def __init__(self, image_size: int, patch_size: int, 
                 in_channels: int, embed_dim: int):
            super().__init__()

            # Input image:(B,C,H,W)

            self.image_size = image_size
            self.patch_size = patch_size
            self.in_channels = in_channels
            self.embed_dim = embed_dim

            self.grid_size = image_size // patch_size
            if image_size % patch_size != 0:
                raise ValueError(f"Image size ({image_size}) must be divisible by patch size ({patch_size})")
            self.num_patches = self.grid_size ** 2

            #(B,C,H,W) -> (B,D,H/P,W/P)
            self.Conv = nn.Conv2d(in_channels=self.in_channels,
                                  out_channels=self.embed_dim,
                                  kernel_size=self.patch_size,
                                  stride=self.patch_size,
                                  padding=0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
             # x: (B,C,H,W)
            x = self.Conv(x) #(B,D,H/P,W/P)
            x = x.flatten(2) #(B,D,N)
            x = x.transpose(1,2) #(B,N,D)

            return x

# ---- src/transformer.py


class VisionTransformer(nn.Module):
    def __init__(self, 
                 image_size: int, patch_size: int, in_channels: int,
                 num_layers: int, embed_dim: int, 
                 num_heads: int, mlp_dim: int,
                 embed_dropout: float = 0.0, attention_dropout: float = 0.0, projection_dropout: float = 0.0,
                 mlp_dropout: float = 0.0,
                 classifier: str = "token",
                 num_classes: int = 10):
        super().__init__()
        self.patch_embedding = PatchEmbedding(
            image_size=image_size,
            patch_size=patch_size,
            in_channels=in_channels,
            embed_dim=embed_dim
        )
        self.encoder = Encoder(
            num_layers=num_layers,
            embed_dim=embed_dim,
            num_heads=num_heads,
            mlp_dim=mlp_dim,
            attention_dropout=attention_dropout,
            projection_dropout=projection_dropout,
            mlp_dropout=mlp_dropout
        )

        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) #(1,1,D)

        self.pos_embedding = nn.Parameter(torch.zeros(1, self.patch_embedding.num_patches + 1, embed_dim)) #(1,N+1,D)
        self.embed_dropout = nn.Dropout(embed_dropout)

        nn.init.trunc_normal_(self.cls_token, std=0.02)
        nn.init.trunc_normal_(self.pos_embedding, std=0.02)

        # Keep the output mode and the trainable classification layer separate.
        # Otherwise assigning nn.Linear to self.classifier would overwrite the
        # string used by forward() to choose the output branch.
        if classifier not in ["token", "cls"]:
            raise ValueError(f"Invalid classifier type: {classifier}. Must be 'token' or 'cls'.")

        self.classifier = classifier
        self.head = (
            nn.Linear(embed_dim, num_classes)
            if classifier == "cls"
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # image: (B,C,H,W)
        x = self.patch_embedding(x) #(B,N,D)

        B, N, D = x.shape
        cls_tokens = self.cls_token.expand(B, -1, -1) #(B,1,D)
        x = torch.cat([cls_tokens, x], dim=1) #(B,N+1,D)

        #Broadcast the position embedding to match the batch size
        x = x + self.pos_embedding #(B,N+1,D)
        x = self.embed_dropout(x) #(B,N+1,D)

        x = self.encoder(x) #(B,N+1,D)

        if self.classifier == "token":
            return x  # (B,N+1,D)

        x = x[:, 0]  # (B,D), take the class token
        x = self.head(x)  # (B,num_classes)
        return x

# ---- src/engine.py


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    criterion: nn.Module,
    optimizer: torch.optim.Optimizer,
    device: torch.device,
    grad_clip: float | None = None,
) -> dict[str, float]:
    model.train()

    loss_sum = 0.0
    correct_sum = 0
    sample_count = 0

    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)

        optimizer.zero_grad(set_to_none=True)

        logits = model(images)
        loss = criterion(logits, labels)

        if not torch.isfinite(loss):
            raise RuntimeError(f"Non-finite loss: {loss.item()}")

        loss.backward()

        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(
                model.parameters(),
                max_norm=grad_clip,
                error_if_nonfinite=True,
            )

        optimizer.step()

        batch_size = labels.shape[0]
        loss_sum += loss.item() * batch_size
        correct_sum += (
            logits.argmax(dim=1) == labels
        ).sum().item()
        sample_count += batch_size

    return {
        "loss": loss_sum / sample_count,
        "accuracy": correct_sum / sample_count,
    }

@torch.inference_mode()
def evaluate_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    criterion: nn.Module,
    device: torch.device,
) -> dict[str, float]:
    model.eval()

    loss_sum = 0.0
    correct_sum = 0
    sample_count = 0

    for images, labels in loader:
        images = images.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)

        logits = model(images)
        loss = criterion(logits, labels)

        batch_size = labels.shape[0]
        loss_sum += loss.item() * batch_size
        correct_sum += (
            logits.argmax(dim=1) == labels
        ).sum().item()
        sample_count += batch_size

    return {
        "loss": loss_sum / sample_count,
        "accuracy": correct_sum / sample_count,
    }

# ---- utils.py



def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def count_parameters(model: torch.nn.Module) -> int:
    return sum(
        parameter.numel()
        for parameter in model.parameters()
        if parameter.requires_grad
    )

def save_checkpoint(
    path: str | Path,
    epoch: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler,
    best_val_accuracy: float,
) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    torch.save(
        {
            "epoch": epoch,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": (
                scheduler.state_dict()
                if scheduler is not None
                else None
            ),
            "best_val_accuracy": best_val_accuracy,
        },
        path,
    )

def load_checkpoint(
    path: str | Path,
    model: torch.nn.Module,
    device: torch.device,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler=None,
) -> tuple[int, float]:
    checkpoint = torch.load(
        path,
        map_location=device,
        weights_only=True,
    )

    model.load_state_dict(checkpoint["model"])

    if optimizer is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])

    if scheduler is not None and checkpoint["scheduler"] is not None:
        scheduler.load_state_dict(checkpoint["scheduler"])

    start_epoch = checkpoint["epoch"] + 1
    best_val_accuracy = checkpoint["best_val_accuracy"]
    return start_epoch, best_val_accuracy


# ---- train.py / evaluate.py on synthetic CIFAR-like data
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)
rng = np.random.RandomState(0)
raw = rng.randint(0, 256, size=(40, 16, 16, 3)).astype(np.uint8)
lab = rng.randint(0, 10, size=40)
def to_tensor_normalize(imgs):
    x = torch.from_numpy(imgs).permute(0, 3, 1, 2).float() / 255.0
    mean = torch.tensor(CIFAR10_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR10_STD).view(1, 3, 1, 1)
    return (x - mean) / std
def random_crop_flip(x, pad=2):
    out = torch.empty_like(x)
    padded = F.pad(x, (pad, pad, pad, pad))
    for i in range(x.shape[0]):
        a, b = rng.randint(0, 2 * pad + 1, size=2)
        img = padded[i, :, a:a + x.shape[2], b:b + x.shape[3]]
        if rng.rand() < 0.5:
            img = img.flip(-1)
        out[i] = img
    return out
X = to_tensor_normalize(raw)
print("X", X.shape, X.dtype, round(X.mean().item(), 4), round(X.std().item(), 4))
Y = torch.from_numpy(lab).long()
full_train = TensorDataset(random_crop_flip(X), Y)
full_eval = TensorDataset(X, Y)
indices = rng.permutation(40).tolist()
train_set, val_set = Subset(full_train, indices[8:]), Subset(full_eval, indices[:8])
pin_memory = torch.cuda.is_available()
train_loader = DataLoader(train_set, batch_size=8, shuffle=False, num_workers=0, pin_memory=pin_memory, drop_last=False, persistent_workers=False)
val_loader = DataLoader(val_set, batch_size=16, shuffle=False, pin_memory=pin_memory)

def init_np(model, seed):
    r = np.random.RandomState(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(torch.from_numpy((r.randn(*p.shape) * 0.05).astype(np.float32)))

seed_everything(42)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = VisionTransformer(image_size=16, patch_size=4, in_channels=3, num_layers=2, embed_dim=24, num_heads=3, mlp_dim=48,
                          embed_dropout=0.0, attention_dropout=0.0, projection_dropout=0.0, mlp_dropout=0.0,
                          classifier="cls", num_classes=10).to(device)
init_np(model, 1)
print(f"device: {device}")
print(f"trainable parameters: {count_parameters(model):,}")
print(model.patch_embedding)
print(model.encoder.blocks[0].attention)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4, eta_min=1e-6)
best = 0.0
with tempfile.TemporaryDirectory() as d:
    ck = Path(d) / "ck"
    for epoch in range(3):
        current_lr = optimizer.param_groups[0]["lr"]
        tm = train_one_epoch(model=model, loader=train_loader, criterion=criterion, optimizer=optimizer, device=device, grad_clip=1.0)
        vm = evaluate_one_epoch(model=model, loader=val_loader, criterion=criterion, device=device)
        scheduler.step()
        print(f"epoch {epoch + 1:03d}/003 lr={current_lr:.6g} train_loss={tm['loss']:.4f} train_acc={tm['accuracy']:.4f} "
              f"val_loss={vm['loss']:.4f} val_acc={vm['accuracy']:.4f}")
        is_best = vm["accuracy"] > best
        if is_best:
            best = vm["accuracy"]
        save_checkpoint(path=ck / "last.pt", epoch=epoch, model=model, optimizer=optimizer, scheduler=scheduler, best_val_accuracy=best)
    model2 = VisionTransformer(image_size=16, patch_size=4, in_channels=3, num_layers=2, embed_dim=24, num_heads=3, mlp_dim=48, classifier="cls")
    opt2 = torch.optim.AdamW(model2.parameters(), lr=3e-3, weight_decay=0.05)
    sch2 = torch.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=4, eta_min=1e-6)
    start_epoch, bva = load_checkpoint(ck / "last.pt", model2, device, opt2, sch2)
    print("resume", start_epoch, bva, sch2.last_epoch, [round(x, 8) for x in sch2.get_last_lr()], opt2.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"])
    print("sched state", sorted(sch2.state_dict().keys()))
    st = opt2.state_dict()["state"][0]
    print("opt state", sorted(st.keys()), st["step"], st["exp_avg"].shape)
    vm2 = evaluate_one_epoch(model=model2, loader=val_loader, criterion=nn.CrossEntropyLoss(), device=device)
    print(f"test_loss={vm2['loss']:.4f}")
    print(f"test_accuracy={vm2['accuracy']:.4f}")
    # one more epoch after resume on both, should agree
    tm2 = train_one_epoch(model=model2, loader=train_loader, criterion=criterion, optimizer=opt2, device=device, grad_clip=1.0)
    print("after resume", round(tm2["loss"], 4))

# tests/*
x = torch.from_numpy(rng.randn(2, 5, 24).astype(np.float32))
attn = MultiHeadSelfAttention(24, 3)
print(attn(x).shape)
try:
    MultiHeadSelfAttention(10, 3)
except ValueError as e:
    print("ValueError", e)
try:
    PatchEmbedding(15, 4, 3, 8)
except ValueError as e:
    print("ValueError", e)
try:
    Encoder(0, 8, 2, 16)
except ValueError as e:
    print("ValueError", e)
tok = VisionTransformer(image_size=16, patch_size=4, in_channels=3, num_layers=1, embed_dim=24, num_heads=3, mlp_dim=48, classifier="token")
print(tok(X[:2]).shape, tok.head)
print(abs(tok.cls_token).max().item() <= 0.04, tok.pos_embedding.shape)
# non-finite loss handling
model.head.weight.data[0, 0] = float("nan")
try:
    train_one_epoch(model=model, loader=train_loader, criterion=criterion, optimizer=optimizer, device=device, grad_clip=1.0)
except RuntimeError as e:
    print("RuntimeError", str(e)[:60])
p = nn.Parameter(torch.ones(3)); p.grad = torch.tensor([1.0, float("inf"), 0.0])
try:
    torch.nn.utils.clip_grad_norm_([p], max_norm=1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print("RuntimeError", str(e)[:80])
print(torch.nn.utils.clip_grad_norm_([p], max_norm=1.0))
