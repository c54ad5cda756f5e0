"""The collectives of a distributed evaluation, on the current ``torch.distributed`` process group,
with the bytes they move counted (:class:`Traffic`).

Two collectives suffice: :meth:`ProcessGroup.all_gather` (each rank's byte payload to every rank;
payloads differ in size, so the sizes travel first and the payloads are padded to the largest)
and :meth:`ProcessGroup.all_sum` (a sum of int64 counts, exact).  Under ``gloo`` the tensors stay
on the CPU; under ``nccl`` they go to the rank's current CUDA device.

What is counted (per rank, algorithm-independent, padding included):

* all-gather of ``W`` payloads padded to ``P`` bytes: sent ``P (W - 1)`` (this rank's payload,
  to every other rank), received ``P (W - 1)``;
* all-reduce of ``S`` bytes: sent and received ``2 S (W - 1) / W`` each (a ring all-reduce's
  volume, the lower bound for any algorithm that moves the counts and not a copy per rank).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

import numpy as np
from retrieval_conformance.implementations.distributed.payloads import decode_payload, encode_payload


@dataclass
class Traffic:
    """Bytes this rank moved through collectives (see the module docstring for the model).

    Attributes
    ----------
    bytes_sent, bytes_received : int
        Payload bytes (padding included) sent to and received from the other ranks.
    collectives : int
        Collective calls made (each is one synchronisation of every rank).
    """

    bytes_sent: int = 0
    bytes_received: int = 0
    collectives: int = 0

    def add(self, sent: int, received: int) -> None:
        self.bytes_sent += int(sent)
        self.bytes_received += int(received)
        self.collectives += 1


class ProcessGroup:
    """The current default ``torch.distributed`` process group, as this module uses it.

    Raises a ``RuntimeError`` that says what to do when ``torch.distributed`` is unavailable or
    no process group has been initialised.
    """

    def __init__(self) -> None:
        try:
            import torch
            import torch.distributed as dist
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                f"distributed=True needs torch with torch.distributed ({exc}); "
                "pip install 'retrieval-conformance[torch]'"
            ) from None
        if not dist.is_available():
            raise RuntimeError("distributed=True: this torch build has no torch.distributed")
        if not dist.is_initialized():
            raise RuntimeError(
                "distributed=True: no process group; call torch.distributed.init_process_group("
                "backend='gloo' or 'nccl', ...) on every rank first"
            )
        self._torch, self._dist = torch, dist
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        backend = str(dist.get_backend())
        self.device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
        self.traffic = Traffic()

    def all_gather(self, payload: bytes) -> List[bytes]:
        """Every rank's ``payload``, in rank order (this rank's included)."""
        torch = self._torch
        size = torch.tensor([len(payload)], dtype=torch.int64, device=self.device)
        sizes = [torch.zeros_like(size) for _ in range(self.world)]
        self._dist.all_gather(sizes, size)
        lengths = [int(s.item()) for s in sizes]
        self.traffic.add(8 * (self.world - 1), 8 * (self.world - 1))
        width = max(max(lengths), 1)
        mine = np.zeros(width, np.uint8)
        mine[: len(payload)] = np.frombuffer(payload, np.uint8)
        tensor = torch.from_numpy(mine).to(self.device)
        gathered = [torch.empty_like(tensor) for _ in range(self.world)]
        self._dist.all_gather(gathered, tensor)
        self.traffic.add(width * (self.world - 1), width * (self.world - 1))
        return [t.cpu().numpy()[:n].tobytes() for t, n in zip(gathered, lengths)]

    def all_gather_objects(self, value: Any) -> List[Any]:
        """Every rank's ``value`` (dicts, lists, tuples, numbers, strings, numpy arrays), in rank order.

        The values travel as :mod:`.payloads` (JSON and ``.npz``, never pickle), so nothing a rank
        receives can run code; another type raises ``TypeError`` on the sending rank.
        """
        return [decode_payload(p) for p in self.all_gather(encode_payload(value))]

    def all_sum(self, counts: np.ndarray) -> np.ndarray:
        """The element-wise sum over ranks of int64 ``counts`` (same shape on every rank)."""
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        if counts.size == 0 or self.world == 1:
            return counts.copy()
        tensor = self._torch.from_numpy(counts.copy()).to(self.device)
        self._dist.all_reduce(tensor, op=self._dist.ReduceOp.SUM)
        volume = 2 * counts.nbytes * (self.world - 1) // self.world
        self.traffic.add(volume, volume)
        return tensor.cpu().numpy()
