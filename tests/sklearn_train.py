#!/usr/bin/env python3
"""A real training loop for batch_sweep's integration test: scikit-learn's
MLPClassifier (two hidden layers, Adam) trained on the CPU with partial_fit,
one optimizer step per mini-batch of random data. Each step prints its time
as `step 3: loss 2.3012, step time 12.345 ms`. Under a memory limit
(prlimit --as) numpy raises MemoryError when a batch does not fit.

    sklearn_train.py --batch-size N [--steps 5] [--features 256] [--hidden 512] [--report-vm]
"""
import argparse
import os

# One BLAS thread: steadier step times on a shared machine, and no per-thread
# buffers in the memory the batch is measured against.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.neural_network import MLPClassifier  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--report-vm", action="store_true", help="print VmPeak at the end")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    classes = np.arange(args.classes)
    model = MLPClassifier(hidden_layer_sizes=(args.hidden, args.hidden), solver="adam",
                          batch_size=args.batch_size, random_state=0)
    print(f"sklearn_train: batch size {args.batch_size}, {args.steps} steps", flush=True)
    for step in range(1, args.steps + 1):
        features = rng.standard_normal((args.batch_size, args.features))
        labels = rng.integers(0, args.classes, args.batch_size)
        start = time.perf_counter()
        model.partial_fit(features, labels, classes=classes)
        seconds = time.perf_counter() - start
        print(f"step {step}: loss {model.loss_:.4f}, step time {seconds * 1e3:.3f} ms", flush=True)
    if args.report_vm:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmPeak:"):
                    print("sklearn_train:", line.strip(), flush=True)


if __name__ == "__main__":
    main()
