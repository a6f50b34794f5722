"""The autograd examples of the seed document, printing what PyTorch prints."""
from __future__ import annotations as _annotations

import tapegrad as torch


def grad_of_square() -> None:
    """2.1: x.grad is None before backward, dy/dx after."""
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    print(x.grad)
    y.backward()
    print(x.grad)


def argmax_is_not_differentiable() -> None:
    """2.2: backward through argmax raises."""
    x = torch.tensor([1.], requires_grad=True)
    y = x.argmax()
    try:
        y.backward()
    except RuntimeError as e:
        print(f"RuntimeError: {e}")


def retain_grad_of_non_leaf() -> None:
    """2.3: retain_grad() keeps a non-leaf's gradient; other non-leaves keep None."""
    import warnings
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    y.retain_grad()
    z = 3*y
    z.backward()
    print(x.grad)
    print(y.grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # PyTorch warns on reading a non-leaf's .grad
        print(z.grad)


def stopping_gradients() -> None:
    """2.4: requires_grad=False, detach() and no_grad() each stop gradient flow."""
    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    x.requires_grad = False
    print(x.requires_grad, y.requires_grad)

    x = torch.tensor([1.], requires_grad=True)
    y = x**2
    x = x.detach()
    print(x.requires_grad, y.requires_grad)

    x = torch.tensor([1.], requires_grad=True)
    with torch.no_grad():
        y = x**2
    print(y.requires_grad)
    y = x**2
    print(y.requires_grad)


def main() -> None:
    for example in (grad_of_square, argmax_is_not_differentiable, retain_grad_of_non_leaf,
                    stopping_gradients):
        print(f"# {example.__doc__.splitlines()[0]}")
        example()


if __name__ == "__main__":
    main()
