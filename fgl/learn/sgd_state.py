"""What a checkpoint of stochastic gradient training holds (``SGDState``,
read and written by ``fgl.learn.checkpoint``; the training in
``fgl.learn.sgd``)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

KIND = "fgl-sgd-checkpoint"   # the ``kind`` of its metadata


@dataclass
class SGDState:
    """An SGD run (what a checkpoint holds, between two epochs): the weights
    as ``v`` times the group ``scale`` (folded into v at every epoch's end,
    so a checkpoint's weights are v), the epochs finished, the instances
    seen (``t``), the rate η_0, each finished epoch's objective estimate,
    the log's rows, the calibration's trials and the seconds spent."""

    v: np.ndarray
    scale: np.ndarray
    group: np.ndarray
    eta0: float
    epoch: int = 0
    t: int = 0
    objectives: list[float] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    calibration: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def weights(self) -> np.ndarray:
        """w = s v."""
        return self.scale[self.group] * self.v

    @property
    def iteration(self) -> int:
        """Epochs finished (a checkpoint's count)."""
        return self.epoch

    @property
    def objective(self) -> float:
        """The last finished epoch's objective estimate (nan before the first)."""
        return self.objectives[-1] if self.objectives else float("nan")

    def fold(self) -> None:
        """The scales folded into v (all 1 after)."""
        self.v *= self.scale[self.group]
        self.scale[:] = 1.0

    def copy(self) -> "SGDState":
        """A copy (the weights' arrays and the lists copied)."""
        return SGDState(self.v.copy(), self.scale.copy(), self.group, self.eta0, self.epoch,
                        self.t, list(self.objectives), list(self.rows), list(self.calibration),
                        self.seconds)

    def meta(self) -> dict:
        """The JSON part of the checkpoint (its weights are v: the scales are 1)."""
        return {"kind": KIND, "version": 1, "eta0": self.eta0, "epoch": self.epoch,
                "t": self.t, "objectives": self.objectives, "rows": self.rows,
                "calibration": self.calibration, "seconds": self.seconds}

    def arrays(self) -> dict[str, np.ndarray]:
        """The checkpoint's arrays besides the weights: none."""
        return {}

    @classmethod
    def restore(cls, weights: np.ndarray, saved: dict, arrays: dict[str, np.ndarray]
                ) -> "SGDState":
        """The state a checkpoint's weights and ``meta()`` hold (one group,
        scale 1, until ``train_sgd`` sets the model's; ValueError or KeyError
        when they are not an intact one)."""
        if saved.get("version") != 1:
            raise ValueError(f"SGD checkpoint version {saved.get('version')!r}: this fgl reads 1")
        eta0 = float(saved["eta0"])
        if not (math.isfinite(eta0) and eta0 > 0):
            raise ValueError("its learning rate is not a positive number")
        epoch, t = int(saved["epoch"]), int(saved["t"])
        if epoch < 0 or t < 0:
            raise ValueError("its epoch or instance count is negative")
        return cls(np.array(weights, dtype=np.float64), np.ones(1),
                   np.zeros(len(weights), dtype=np.int32),
                   eta0, epoch, t, [float(f) for f in saved["objectives"]],
                   [dict(r) for r in saved["rows"]], [dict(r) for r in saved["calibration"]],
                   float(saved["seconds"]))
