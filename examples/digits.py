"""make demo: a small convolutional network learns scikit-learn's handwritten digits (1797 8x8 images that
ship inside the scikit-learn wheel) with AdamW and cross-entropy, on the best adapter. It prints the
held-out accuracy, the time per epoch and the CPU fallbacks taken.

    python examples/digits.py [--device vulkan|cpu] [--epochs N] [--batch-size B] [--model cnn|mlp]
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import vkt
from vkt import nn
from vkt.utils.data import DataLoader, TensorDataset


def cnn():
    """Two 3x3 convolutions, a 2x2 max pool and two linear layers: 8x8 -> 4x4 x 16 channels -> 10."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 64), nn.ReLU(),
        nn.Linear(64, 10),
    )


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def digits(device, seed=0):
    """The digits as (N, 1, 8, 8) float32 standardised pixels and int64 labels, split 80/20 at random (seeded)."""
    data = load_digits()
    x = ((data.images - data.images.mean()) / data.images.std()).astype(np.float32)[:, None]
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    train, test = order[:cut], order[cut:]
    to = lambda a: vkt.tensor(a, device=device)  # noqa: E731
    return TensorDataset(to(x[train]), to(y[train])), (to(x[test]), to(y[test]))


def accuracy(model, x, y):
    model.eval()
    with vkt.no_grad():
        correct = (model(x).argmax(dim=1) == y).sum().item()
    model.train()
    return correct / len(y)


def train(device="vulkan", epochs=8, batch_size=32, lr=3e-3, model="cnn", seed=0, progress=True):
    """Trains the model and returns (held-out accuracy, seconds per epoch, CPU fallbacks taken)."""
    vkt.manual_seed(seed)
    train_set, (x_test, y_test) = digits(device, seed)
    net = (cnn if model == "cnn" else mlp)().to(device)
    opt = vkt.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    sched = vkt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, generator=vkt.Generator().manual_seed(seed))
    if device.startswith("vulkan"):
        vkt.vulkan.reset_fallback_stats()
    t0 = time.perf_counter()
    for epoch in range(epochs):
        bar = tqdm(loader, desc=f"epoch {epoch + 1}/{epochs}", leave=False, disable=not progress)
        for x, y in bar:
            loss = loss_fn(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if progress:
            tqdm.write(f"epoch {epoch + 1:2d}: loss {loss.item():.4f}, held-out accuracy "
                       f"{accuracy(net, x_test, y_test):.2%}")
    acc = accuracy(net, x_test, y_test)
    per_epoch = (time.perf_counter() - t0) / epochs
    fallbacks = vkt.vulkan.fallback_stats() if device.startswith("vulkan") else {}
    return acc, per_epoch, fallbacks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="vulkan" if vkt.vulkan.is_available() else "cpu")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    args = ap.parse_args()
    if args.device.startswith("vulkan"):
        i = vkt.vulkan.current_device()
        print(f"device: vulkan:{i} {vkt.vulkan.get_device_name(i)} - {vkt.vulkan.choice_reason()}")
    else:
        print("device: cpu")
    acc, per_epoch, fallbacks = train(args.device, args.epochs, args.batch_size, args.lr, args.model)
    print(f"{args.model} on the digits: held-out accuracy {acc:.2%} after {args.epochs} epochs, "
          f"{per_epoch:.2f} s per epoch ({per_epoch * args.epochs:.1f} s in all)")
    print("CPU fallbacks taken:", fallbacks or "none")


if __name__ == "__main__":
    main()
