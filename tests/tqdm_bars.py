"""A tqdm log of epochs, each bar closed at 36/36 with its `s/it` and loss postfix: the fixture the step-time
tests share (tqdm prints `Epoch 3: 100%|##########| 36/36 [00:57<00:00, 1.60s/it, loss=1.2]`)."""
from __future__ import annotations

import numpy as np


def tqdm_log(path, per_it, epochs: int = 120, seed: int = 0):
    """`epochs` bars, `per_it(epoch, rng)` seconds an iteration, a falling loss; the path written."""
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for e in range(epochs):
            sit = per_it(e, rng)
            loss = 2.0 * np.exp(-e / 40) + 0.3 + 0.01 * rng.standard_normal()
            m, s = divmod(int(sit * 36), 60)
            f.write(f"Epoch {e}: 100%|##########| 36/36 [{m:02d}:{s:02d}<00:00, {sit:.2f}s/it, loss={loss:.4f}]\n")
    return path
