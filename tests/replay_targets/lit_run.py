"""A real `lightning.Trainer` run for the zero-code replay tests: a small regressor that
log-transforms its features (a common preprocessing step inside the model), trained with
`lightning_callback(every=1)`, one checkpoint, and a planted batch holding a negative
feature, whose log is NaN in `features` (op `log`).
"""
from __future__ import annotations

from pathlib import Path

import lightning as L
import torch
from torch import nn
from torch.nn import functional as F

WIDTH, BATCH = 8, 4


class LogFeatures(nn.Module):
    def forward(self, x):
        return torch.log(x)


class LitRegressor(L.LightningModule):
    def __init__(self, width: int = WIDTH, lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.features = LogFeatures()
        self.net = nn.Sequential(nn.Linear(4, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(self.features(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1.0 + 0.05 * step))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def data(n_batches: int, bad_batch: int | None) -> torch.utils.data.TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n_batches * BATCH, 4, generator=g) + 0.5
    if bad_batch is not None:
        x[bad_batch * BATCH, 2] = -1.0  # log(-1) = NaN
    y = torch.log(x.clamp_min(1e-3)).sum(dim=1, keepdim=True)
    return torch.utils.data.TensorDataset(x, y)


def train(out: Path, *, steps: int, bad_step: int | None, save_at: int) -> Path:
    """Train into OUT (capture folder, lightning_logs/ CSV, save_at.ckpt holding save_at steps)."""
    from spikelens.replay import lightning_callback

    class SaveAt(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if trainer.global_step == save_at:
                trainer.save_checkpoint(out / f"step{save_at}.ckpt")

    L.seed_everything(0, verbose=False)
    model = LitRegressor()
    loader = torch.utils.data.DataLoader(data(steps, bad_step), batch_size=BATCH, shuffle=False)
    trainer = L.Trainer(max_steps=steps, accelerator="cpu", devices=1, gradient_clip_val=1.0,
                        logger=L.pytorch.loggers.CSVLogger(out, name="logs"), log_every_n_steps=1,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[SaveAt(), lightning_callback(out / "spikelens-captures", every=1, before=0,
                                                                after=0)])
    trainer.fit(model, loader)
    return out
