"""Helpers shared by the benchmark scripts."""


def peak_rss_mb():
    """This process's peak resident memory (VmHWM) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def torch_adamw(model, learning_rate, eps=1e-8, weight_decay=0.01):
    """torch AdamW with BERT's exclusions: no weight decay on biases and
    LayerNorm parameters (the reference side of the accuracy benchmarks)."""
    import torch

    def excluded(name):
        return "bias" in name or "LayerNorm" in name

    named = list(model.named_parameters())
    return torch.optim.AdamW(
        [{"params": [p for n, p in named if not excluded(n)],
          "weight_decay": weight_decay},
         {"params": [p for n, p in named if excluded(n)],
          "weight_decay": 0.0}],
        lr=learning_rate, eps=eps)
