"""default_collate stacks tensors with the one torch.stack: the batch's layout is stack's
(contiguous unless every sample is channels_last) and it records when a sample requires grad.
A numpy-side stack kept the samples' strides: a transposed sample (a numpy image indexed
column-wise) gave a batch whose view(n, -1) raised where PyTorch's works (eriklindernoren's GAN
scripts), and a sample requiring grad lost its history (PyTorch: grad_fn=<StackBackward0>)."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad.utils.data import DataLoader, default_collate


def _samples(lib):
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return [lib.from_numpy(base[k][:, [0, 2, 1, 3]].T.copy().T[None]) for k in range(2)]


def test_transposed_samples_give_a_contiguous_batch_as_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    want = torch_collate(_samples(torch))
    got = default_collate(_samples(tg))
    assert tuple(got.stride()) == tuple(want.stride())
    assert got.is_contiguous() == want.is_contiguous() is True
    np.testing.assert_array_equal(got.view(2, -1).numpy(), want.view(2, -1).numpy())


def test_dataloader_batch_of_transposed_samples_views():
    data = [tg.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4).T[None] + k) for k in range(4)]
    batch = next(iter(DataLoader(data, batch_size=4)))
    assert batch.is_contiguous()
    np.testing.assert_array_equal(batch.view(4, -1).numpy(),
                                  np.stack([d.numpy() for d in data]).reshape(4, -1))


def test_samples_requiring_grad_keep_their_history():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    for lib, collate in ((torch, torch_collate), (tg, default_collate)):
        a = lib.tensor([1., 2.], requires_grad=True)
        out = collate([a, lib.zeros(2)])
        assert type(out.grad_fn).__name__ == "StackBackward0"
        (out * lib.tensor([[3., 4.], [5., 6.]])).sum().backward()
        assert a.grad.tolist() == [3., 4.]


def test_mixed_dtypes_promote_as_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate
    for make in (lambda lib: [lib.ones(2, dtype=lib.int32), lib.zeros(2)],
                 lambda lib: [lib.ones(2, dtype=lib.int64), lib.zeros(2, dtype=lib.bool)]):
        assert str(default_collate(make(tg)).dtype) == str(torch_collate(make(torch)).dtype)


def test_unequal_sizes_raise_as_torch():
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([tg.ones(2), tg.ones(3)])
