"""Train an MLP on scikit-learn's handwritten digits with ferrograd, as one would with PyTorch.

    python3 examples/train_digits.py [--epochs 40] [--out-dir digits_out]

Reads the 8x8 digits bundled with scikit-learn (nothing is downloaded), trains with AdamW and a
cosine learning-rate schedule over a shuffling DataLoader, reports the test accuracy, saves the
weights (safetensors, loadable by PyTorch) and writes the loss curve as a PNG.
"""

import argparse
import os
import time

import matplotlib

matplotlib.use("Agg")  # write files, never open a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from tqdm import tqdm  # noqa: E402

import ferrograd as torch  # noqa: E402
import ferrograd.nn as nn  # noqa: E402
from ferrograd.utils.data import DataLoader, TensorDataset  # noqa: E402


def make_model():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def load_data(seed):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.2, random_state=seed, stratify=digits.target
    )
    as_tensors = lambda x, y: (torch.from_numpy(x), torch.from_numpy(y.astype(np.int64)))  # noqa: E731
    return as_tensors(x_train, y_train), as_tensors(x_test, y_test)


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    model.train()
    return (pred == y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="digits_out")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = load_data(args.seed)
    loader = DataLoader(
        TensorDataset(x_train, y_train),
        batch_size=args.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(args.seed),
    )
    model = make_model()
    print(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    start = time.perf_counter()
    step_losses, epoch_losses, test_accs = [], [], []
    bar = tqdm(range(1, args.epochs + 1), desc="training", unit="epoch")
    for _epoch in bar:
        total, count = 0.0, 0
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            step_losses.append(loss.item())
            total += loss.item() * len(labels)
            count += len(labels)
        scheduler.step()
        epoch_losses.append(total / count)
        test_accs.append(accuracy(model, x_test, y_test))
        bar.set_postfix(loss=f"{epoch_losses[-1]:.4f}", test_acc=f"{test_accs[-1]:.3f}")
    elapsed = time.perf_counter() - start

    test_acc = accuracy(model, x_test, y_test)
    print(f"trained {args.epochs} epochs ({len(step_losses)} steps) in {elapsed:.1f} s")
    print(f"test accuracy: {test_acc:.2%} on {len(y_test)} held-out digits")

    os.makedirs(args.out_dir, exist_ok=True)
    weights = os.path.join(args.out_dir, "digits_mlp.safetensors")
    torch.save(model.state_dict(), weights)
    restored = make_model()
    restored.load_state_dict(torch.load(weights))
    assert accuracy(restored, x_test, y_test) == test_acc
    print(f"saved the model to {weights} (reloaded: same accuracy)")

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(np.arange(1, len(step_losses) + 1) / len(loader), step_losses, alpha=0.35,
                 label="per step")
    ax_loss.plot(np.arange(1, args.epochs + 1), epoch_losses, marker="o", ms=3, label="epoch mean")
    ax_loss.set(xlabel="epoch", ylabel="cross-entropy loss", yscale="log", title="training loss")
    ax_loss.legend()
    ax_acc.plot(np.arange(1, args.epochs + 1), test_accs, marker="o", ms=3, color="tab:green")
    ax_acc.set(xlabel="epoch", ylabel="accuracy", title=f"test accuracy (final {test_acc:.2%})")
    fig.tight_layout()
    plot = os.path.join(args.out_dir, "loss_curve.png")
    fig.savefig(plot, dpi=120)
    print(f"wrote the loss curve to {plot}")
    if test_acc < 0.95:
        raise SystemExit(f"test accuracy {test_acc:.2%} is below the 95% this demo promises")


if __name__ == "__main__":
    main()
