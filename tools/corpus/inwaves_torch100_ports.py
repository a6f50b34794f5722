"""numpy-100 style exercises answered in torch (inspired by inwaves' torch-100 port): creation and
indexing idioms, counting (bincount with weights and minlength, unique rows with counts,
unique_consecutive, histc, bucketize), nearest values (argmin, searchsorted), sorting by a
column, per-row topk, sliding windows (unfold), group means by scatter_add, masks and nonzero,
kron / outer / einsum identities, dtype limits, and the exceptions numpy habits run into."""
import torch

torch.set_printoptions(precision=4)


def show(title, value):
    print(f"{title}:", value)


def det(*shape, scale=10.0):
    n = 1
    for d in shape:
        n *= d
    return (torch.sin(torch.arange(n, dtype=torch.float32) * 1.7 + 0.3) * scale).reshape(shape)


z = torch.zeros(10)
z[4] = 1
show("null but fifth", z)
show("reversed", torch.arange(10, 20).flip(0))
show("nonzero", torch.tensor([1, 2, 0, 0, 4, 0]).nonzero().flatten())
show("nonzero as_tuple", torch.nonzero(torch.tensor([[0, 3], [5, 0]]), as_tuple=True))
show("below diagonal", torch.diag(1 + torch.arange(4), diagonal=-1))
board = torch.zeros(8, 8, dtype=torch.int64)
board[1::2, ::2] = 1
board[::2, 1::2] = 1
show("checkerboard equal tile", torch.equal(board, torch.tile(torch.tensor([[0, 1], [1, 0]]), (4, 4))))
border = torch.ones(5, 5)
border[1:-1, 1:-1] = 0
show("padded border", torch.nn.functional.pad(border, (1, 1, 1, 1)).sum())
idx = 99
show("unravel 99 in (6,7,8)", (idx // 56, idx // 8 % 7, idx % 8))
show("unravel_index", torch.unravel_index(torch.tensor([99, 5]), (6, 7, 8)))
r = torch.arange(11)
r[(3 < r) & (r < 8)] *= -1
show("negate between", r)

a = torch.tensor([1, 3, 9, 3, 4, 1])
w = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
show("bincount", torch.bincount(a))
show("bincount weights", torch.bincount(a, weights=w, minlength=12))
ones = torch.ones(10)
ones += torch.bincount(torch.tensor([0, 3, 3, 9, 9, 9]), minlength=10)
show("add at repeated", ones)
ones.index_put_((torch.tensor([1, 1, 2]),), torch.tensor(1.0), accumulate=True)
show("index_put accumulate", ones)
show("most frequent", torch.bincount(torch.tensor([2, 7, 7, 1, 7, 2])).argmax())

pixels = (det(6, 3, scale=1.5).abs().round()).to(torch.uint8)
colors, counts = torch.unique(pixels, dim=0, return_counts=True)
show("unique colors", (colors.shape[0], counts))
values, inverse, counts = torch.unique(torch.tensor([5, 3, 5, 1, 3, 5]), return_inverse=True,
                                       return_counts=True)
show("unique inverse counts", (values, inverse, counts))
show("unique_consecutive", torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 2, 1, 3, 3]),
                                                    return_counts=True))

grid = torch.arange(100)
v = 42.7
show("closest value", grid[(grid - v).abs().argmin()])
sorted_vals = torch.tensor([0.5, 1.5, 2.5, 4.0, 8.0])
queries = torch.tensor([0.1, 1.5, 3.0, 9.0])
pos = torch.searchsorted(sorted_vals, queries).clamp(max=len(sorted_vals) - 1)
show("searchsorted", (torch.searchsorted(sorted_vals, queries),
                      torch.searchsorted(sorted_vals, queries, right=True), sorted_vals[pos]))
show("bucketize", torch.bucketize(queries, sorted_vals))
show("histc", torch.histc(det(20), bins=5, min=-10, max=10))

m = (det(4, 3).abs() % 7).floor().to(torch.int64)
show("sort by 2nd column", m[m[:, 1].argsort(stable=True)])
show("null columns", (~m.bool().any(dim=0)).any())
row_topk = torch.topk(det(3, 5), 2, dim=1)
show("topk per row", (row_topk.values, row_topk.indices))
show("kthvalue", torch.kthvalue(det(3, 5), 2, dim=1))

series = torch.arange(20.0)
show("moving average", series.unfold(0, 3, 1).mean(-1)[:6])
cs = series.cumsum(0)
cs[3:] = cs[3:] - cs[:-3]
show("cumsum moving average", cs[2:8] / 3)
show("windows of 4", torch.arange(1, 15).unfold(0, 4, 1)[:3])
blocks = torch.ones(16, 16).unfold(0, 4, 4).unfold(1, 4, 4).sum(dim=(-2, -1))
show("block sums", blocks)

groups = torch.tensor([0, 2, 1, 2, 0, 2])
data = torch.tensor([1.0, 4.0, 2.0, 6.0, 3.0, 5.0])
sums = torch.zeros(3).scatter_add(0, groups, data)
show("group means", sums / torch.bincount(groups))
show("scatter_reduce mean", torch.zeros(3).scatter_reduce(0, groups, data, "mean",
                                                          include_self=False))
show("scatter_reduce amax", torch.full((3,), -1.0).scatter_reduce(0, groups, data, "amax"))

x = torch.tensor([1.0, 2.0, 3.0])
y = torch.tensor([4.0, 5.0])
show("outer", torch.outer(x, y))
show("einsum outer", torch.equal(torch.einsum("i,j->ij", x, y), torch.outer(x, y)))
show("einsum inner/sum/mul", (torch.einsum("i,i", x, x), torch.einsum("i->", x),
                              torch.einsum("i,i->i", x, x)))
A, B = det(3, 3), det(3, 3).t()
show("diag of product", torch.allclose(torch.einsum("ij,ji->i", A, B), torch.diag(A @ B)))
show("kron", torch.kron(torch.eye(2), torch.tensor([[1.0, 2.0], [3.0, 4.0]])))
pts = det(5, 2)
show("pairwise distances", torch.allclose(torch.cdist(pts, pts),
                                          ((pts[:, None] - pts[None]) ** 2).sum(-1).sqrt(),
                                          atol=1e-4))
show("rank", torch.linalg.matrix_rank(torch.outer(x, x) + 0.0))
X, Y = torch.meshgrid(torch.linspace(-1, 1, 5), torch.linspace(-1, 1, 5), indexing="ij")
show("gaussian", torch.exp(-(X * X + Y * Y) / 2.0)[2])

ints = torch.tensor([0, 1, 2, 3, 15, 16, 32, 64, 128])
show("binary", ((ints.reshape(-1, 1) & (2 ** torch.arange(8))) != 0).to(torch.int64).flip(1)[-3:])
rows = torch.tensor([[1, 1, 1], [1, 2, 1], [3, 3, 3], [0, 1, 2]])
show("unequal rows", rows[rows.max(dim=1).values != rows.min(dim=1).values])
multi = torch.tensor([[1.0, 0.0, 3.0, 8.0], [2.0, 0.0, 1.0, 1.0], [1.5, 2.5, 1.0, 0.0]])
show("multinomial rows", multi[(torch.fmod(multi, 1) == 0).all(-1) & (multi.sum(-1) == 4)])

for dt in (torch.int8, torch.int32, torch.int64):
    info = torch.iinfo(dt)
    print(dt, info.min, info.max, info.bits)
for dt in (torch.float16, torch.float32, torch.float64):
    info = torch.finfo(dt)
    print(dt, info.min, info.max, info.eps, info.tiny)
show("nan facts", (torch.nan == torch.nan, torch.tensor(0.0) / 0, torch.tensor(0) * torch.nan))
show("nan compare", (torch.tensor(torch.inf) > torch.nan, torch.isnan(torch.tensor(torch.nan))))
show("int division", (torch.tensor(7) // 2, torch.tensor(-7) // 2, torch.tensor(7) / 2))
z = torch.zeros(3, dtype=torch.int64)
try:
    torch.tensor(1) // torch.tensor(0)
except RuntimeError as e:
    print("int // 0:", e)
for expr in ("z.astype(float)", "torch.zeros(3).flags", "torch.ones(2, 3) @ torch.ones(2, 3)",
             "torch.arange(5)[torch.tensor([5])]", "torch.cat([torch.ones(2), torch.ones(2, 1)])",
             "torch.tensor([1, 2]).reshape(3)", "torch.ones(3).view(2, torch.int64)",
             "torch.stack([torch.ones(2), torch.ones(3)])", "torch.tensor([1, 2]) + torch.ones(3)",
             "torch.bincount(torch.tensor([-1, 2]))", "torch.tensor([[1, 2], [3]])",
             "torch.tensor([1.5]).item() + torch.tensor([1, 2]).item()"):
    try:
        eval(expr)
        print(expr, "ok")
    except Exception as e:
        print(expr, type(e).__name__, str(e).split("\n")[0][:90])
