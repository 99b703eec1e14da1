"""How a batch meets a model's tensors; the `--batch-size SPEC` value itself is
`loadtests/config/batch_size.py` (a base-layer value type that `Settings` holds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadtests.config.model_spec import ModelSpec, TensorSpec
from loadtests.errors import ModelMismatchError

# --- how a batch maps onto a model's tensors ------------------------------------


def check_batch_size(model: ModelSpec, batch_size: int) -> None:
    """Raise ModelMismatchError if one request of `batch_size` cannot go to `model`."""
    if batch_size < 1:
        raise ModelMismatchError(f"batch size {batch_size} is not positive")
    if not model.batches and batch_size != 1:
        raise ModelMismatchError(f"model {model.name!r} does not batch (max_batch_size 0): use --batch-size 1")
    if model.batches and batch_size > model.max_batch_size:
        raise ModelMismatchError(
            f"batch size {batch_size} is above model {model.name!r} max_batch_size {model.max_batch_size}"
        )


@dataclass(frozen=True)
class SampleLayout:
    """Where one sample's dims sit in a model tensor, batching or not.

    A batching model's tensor shape is the sample's shape; the client adds the batch
    dim. A non-batching model either spells a leading batch-like dim of -1 or 1
    (`lead_dim`: we send 1) or takes the bare sample (`lead_dim` False).

    Example: SampleLayout.of(model, model.input("input_ids"), rank=1).dims == (-1,)
    """

    dims: tuple[int, ...]
    lead_dim: bool

    @classmethod
    def of(cls, model: ModelSpec, tensor: TensorSpec, rank: int) -> SampleLayout | None:
        """The layout if `tensor` holds samples of `rank` dims, else None."""
        shape = tuple(tensor.shape)
        if model.batches:
            return cls(shape, True) if len(shape) == rank else None
        if len(shape) == rank + 1 and shape[0] in (-1, 1):
            return cls(shape[1:], True)
        if len(shape) == rank:
            return cls(shape, False)
        return None

    def stack(self, samples: np.ndarray) -> np.ndarray:
        """`samples` has a leading batch dim; drop it where the model has none."""
        return samples if self.lead_dim else samples[0]
