#!/usr/bin/env python3
"""A real PyTorch Lightning training run for batch_sweep's tests: a small MLP
on random data, trained on the CPU for a fixed number of steps with either of
Lightning's progress bars, which is all it prints about speed:

    rich: Epoch 0/-2 ━━━━━━━━━━━━━━━━━━━━ 20/20 0:00:00 • 0:00:00 444.53it/s
    tqdm: Epoch 0: 100%|██████████| 20/20 [00:00<00:00, 37.56it/s]

    lightning_train.py --batch-size N [--steps 20] [--bar rich|tqdm] [--hidden 256]

tests/captured/ holds what it printed with the library versions named there.
"""
import argparse
import os
import warnings

# One thread: steadier step times on a shared machine.
for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import torch  # noqa: E402
import lightning as L  # noqa: E402
from lightning.pytorch.callbacks import RichProgressBar, TQDMProgressBar  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


class Mlp(L.LightningModule):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(hidden, classes))

    def training_step(self, batch, _):
        features, labels = batch
        loss = torch.nn.functional.cross_entropy(self.net(features), labels)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--bar", choices=("rich", "tqdm"), default="rich")
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    # Lightning's advice to add DataLoader workers is not what the test reads.
    warnings.filterwarnings("ignore", ".*does not have many workers.*")

    samples = args.batch_size * args.steps
    data = TensorDataset(torch.randn(samples, args.features), torch.randint(0, 10, (samples,)))
    bar = RichProgressBar() if args.bar == "rich" else TQDMProgressBar(refresh_rate=1)
    # max_steps, as a sweep's trial gives it, leaves max_epochs at -1: the rich bar says "Epoch 0/-2".
    trainer = L.Trainer(max_steps=args.steps, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_model_summary=False, callbacks=[bar])
    trainer.fit(Mlp(args.features, args.hidden, 10), DataLoader(data, batch_size=args.batch_size))


if __name__ == "__main__":
    main()
