"""The k-sampler's random stream of ``HardNegativesLoss`` under several processes."""

from __future__ import annotations

import torch


class RankStreams:
    """One ``torch.Generator`` per device, reseeded at every call from one draw of the global CPU RNG
    and the process rank. The trainer seeds the global RNG alike on every rank, so without the rank all
    processes would draw the same k columns for their local anchors (correlated negatives); with it they
    draw independently. Being a function of the global RNG, the draws resume exactly from the RNG
    states the trainer checkpoints per process."""

    def __init__(self):
        self._generators: dict[torch.device, torch.Generator] = {}

    def __call__(self, device: torch.device) -> torch.Generator:
        from qt_hard.negatives import world

        rank = world()[0]
        base = int(torch.randint(0, 2**62, (1,)).item())
        gen = self._generators.get(device)
        if gen is None:
            gen = self._generators[device] = torch.Generator(device=device)
        # Golden-ratio stride: distinct ranks get well-separated seeds of the generator.
        gen.manual_seed((base + (rank + 1) * 0x9E3779B97F4A7C15) % 2**63)
        return gen
