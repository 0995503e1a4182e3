#!/usr/bin/env python3
"""A real Hugging Face Trainer run for batch_sweep's tests: a tiny GPT-2 built
from its config (no weights downloaded) trained on random tokens on the CPU
for a fixed number of steps. At its end the Trainer prints its speed as
transformers 5.x does, values quoted:

    {'train_runtime': '1.09', 'train_samples_per_second': '36.7', 'train_steps_per_second': '9.17', ...}

    hf_train.py --batch-size N [--steps 10] [--seq-len 32]

tests/captured/ holds what it printed with the library versions named there.
"""
import argparse
import os
import tempfile

# One thread: steadier step times on a shared machine. Offline: nothing to download.
for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(variable, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments  # noqa: E402


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, samples, seq_len, vocab):
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (samples, seq_len), generator=generator)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seq-len", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    config = GPT2Config(vocab_size=256, n_positions=args.seq_len, n_embd=64, n_layer=2, n_head=2, bos_token_id=0,
                        eos_token_id=0)
    data = RandomTokens(args.batch_size * args.steps, args.seq_len, config.vocab_size)
    with tempfile.TemporaryDirectory() as output:
        training = TrainingArguments(output_dir=output, per_device_train_batch_size=args.batch_size,
                                     max_steps=args.steps, logging_steps=max(1, args.steps // 2), save_strategy="no",
                                     report_to=[], use_cpu=True, dataloader_num_workers=0)
        Trainer(model=GPT2LMHeadModel(config), args=training, train_dataset=data).train()


if __name__ == "__main__":
    main()
