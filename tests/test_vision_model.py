"""Backbone, MoCo (queue and momentum encoder), kNN/linear readouts and the image task."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qt_hard.losses import RankingLoss
from qt_hard.vision.augment import SimCLRAugment
from qt_hard.vision.evaluate import knn_accuracy, knn_predict, linear_readout
from qt_hard.vision.methods import MoCo, MoCoStep
from qt_hard.vision.resnet import ResNet, SimCLREncoder, make_backbone
from qt_hard.vision.batches import ImageTask


def _images(n, seed=0, side=32):
    return torch.randint(0, 256, (n, 3, side, side), generator=torch.Generator().manual_seed(seed), dtype=torch.uint8)


def test_resnet_cifar_stem_and_shapes():
    torch.manual_seed(0)
    enc = SimCLREncoder("resnet_tiny", proj_dim=16)
    conv = enc.backbone.stem[0]
    assert conv.kernel_size == (3, 3) and conv.stride == (1, 1)
    assert not any(isinstance(m, torch.nn.MaxPool2d) for m in enc.modules())
    seen = {}
    enc.backbone.layers[-1].register_forward_hook(lambda m, i, o: seen.update(shape=o.shape))
    x = _images(4)
    enc.eval()
    z, h = enc(x), enc.features(x)
    assert z.shape == (4, 16) and h.shape == (4, 128)
    assert seen["shape"][-2:] == (4, 4)  # 32 -> 32 (stem) -> 16 -> 8 -> 4: three stride-2 stages only
    assert torch.allclose(enc.features(x.float() / 255), h, atol=1e-5)  # uint8 and [0, 1] floats agree
    r18 = make_backbone("resnet18")
    assert r18.dim == 512 and sum(isinstance(m, torch.nn.Conv2d) for m in r18.modules()) == 1 + 16 + 3
    with pytest.raises(ValueError, match="unknown backbone"):
        make_backbone("resnet50")
    with pytest.raises(ValueError, match="equal-length"):
        ResNet((1, 1), (8,))


def _tiny_moco(queue_size=32, momentum=0.9):
    torch.manual_seed(0)
    return MoCo(SimCLREncoder("resnet_tiny", proj_dim=8, width=4), 8, queue_size=queue_size, momentum=momentum)


def _batch(n, seed):
    aug = SimCLRAugment(size=32)
    g = torch.Generator().manual_seed(seed)
    return {"images": _images(n, seed), "view1": aug.sample(n, 32, 32, g), "view2": aug.sample(n, 32, 32, g)}, aug


def test_moco_queue_gets_momentum_keys_and_no_query_gradient():
    moco = _tiny_moco()
    batch, aug = _batch(6, 1)
    step = MoCoStep(RankingLoss("uniform", temperature=0.2), aug)
    # What the keys must be: the momentum update first, then the key encoder on view 2.
    expected_key_enc = copy.deepcopy(moco.key_encoder)
    with torch.no_grad():
        for pk, pq in zip(expected_key_enc.parameters(), moco.encoder.parameters()):
            pk.mul_(0.9).add_(0.1 * pq)
        v2 = aug.apply(batch["images"], batch["view2"], float_output=True)
        expected = F.normalize(expected_key_enc.train()(v2), dim=1)
    queue_before = moco.queue.embeddings().clone()
    loss = step(moco, batch)
    loss.backward()
    q = moco.queue.embeddings()
    assert torch.allclose(q[-6:], expected, atol=1e-5)  # newest rows: this step's keys
    assert torch.equal(q[:-6], queue_before[6:])  # FIFO: the oldest 6 dropped
    assert not moco.queue.buffer.requires_grad and moco.queue.buffer.grad is None
    assert all(p.grad is None for p in moco.key_encoder.parameters())
    assert all(p.grad is not None for p in moco.encoder.parameters())
    # The loss used the queue as it was *before* this step's keys (a changed queue changes it).
    moco2 = _tiny_moco()
    moco2.queue.buffer.mul_(-1)
    assert not torch.allclose(step(moco2, batch), loss)


def test_moco_momentum_update_follows_the_optimizer():
    moco = _tiny_moco(momentum=0.5)
    batch, aug = _batch(4, 2)
    step = MoCoStep(RankingLoss("hard", temperature=0.2, beta=0.2), aug)
    opt = torch.optim.SGD(moco.encoder.parameters(), lr=0.5)
    step(moco, batch).backward()
    opt.step()
    k_before = [p.clone() for p in moco.key_encoder.parameters()]
    q_now = [p.clone() for p in moco.encoder.parameters()]
    moco.keys(batch["images"].float() / 255)
    for pk, old, pq in zip(moco.key_encoder.parameters(), k_before, q_now):
        assert torch.allclose(pk, 0.5 * old + 0.5 * pq, atol=1e-6)
    with pytest.raises(ValueError, match="momentum"):
        MoCo(SimCLREncoder("resnet_tiny", width=4), 128, momentum=1.0)


def _knn_reference(bank, labels, query, c, k, t):
    bank = bank / np.linalg.norm(bank, axis=1, keepdims=True)
    query = query / np.linalg.norm(query, axis=1, keepdims=True)
    out = []
    for q in query:
        sims = bank @ q
        top = np.argsort(-sims, kind="stable")[:k]
        votes = np.zeros(c)
        for j in top:
            votes[labels[j]] += np.exp(sims[j] / t)
        out.append(int(np.argmax(votes)))
    return np.array(out)


def test_knn_matches_a_loop_reference_and_weights_matter():
    rng = np.random.default_rng(0)
    bank = rng.normal(size=(60, 5))
    labels = rng.integers(0, 4, size=60)
    query = rng.normal(size=(25, 5))
    for k, t in ((7, 0.5), (60, 0.1), (200, 0.5)):
        ref = _knn_reference(bank, labels, query, 4, min(k, 60), t)
        got = knn_predict(torch.tensor(bank), torch.tensor(labels), torch.tensor(query), 4, k, t).numpy()
        np.testing.assert_array_equal(got, ref)
    # Three far neighbours of class 0 against two very close ones of class 1: the weights decide.
    bank = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0], [0.1, 1.0], [-0.1, 1.0]])
    lab = np.array([1, 1, 0, 0, 0])
    q = np.array([[1.0, 0.005]])
    assert knn_predict(torch.tensor(bank), torch.tensor(lab), torch.tensor(q), 2, 5, 0.1).item() == 1
    assert knn_predict(torch.tensor(bank), torch.tensor(lab), torch.tensor(q), 2, 5, 100.0).item() == 0
    with pytest.raises(ValueError, match="unlabeled"):
        knn_predict(torch.tensor(bank), torch.tensor([-1, 0, 0, 0, 0]), torch.tensor(q), 2)


def test_knn_and_linear_readout_on_separable_features():
    rng = np.random.default_rng(1)
    centers = rng.normal(size=(3, 16)) * 4
    ytr, yte = rng.integers(0, 3, 300), rng.integers(0, 3, 90)
    xtr, xte = centers[ytr] + rng.normal(size=(300, 16)), centers[yte] + rng.normal(size=(90, 16))
    assert knn_accuracy(xtr, ytr, xte, yte, 3) > 95
    assert linear_readout(xtr, ytr, xte, yte, 3, epochs=50, lr=0.01)["acc"] > 95
    assert knn_accuracy(xtr, rng.permutation(ytr), xte, yte, 3) < 70  # labels carry the signal


def test_image_task_is_deterministic_and_shards_the_global_batch():
    imgs, labels = _images(20).numpy(), np.arange(20) % 10
    task = ImageTask(imgs, labels, SimCLRAugment(), batch_size=8, seed=3)
    assert task.batches_per_epoch() == 2
    one = task.local_batch(5, 0, 1)
    again = ImageTask(imgs, labels, SimCLRAugment(), batch_size=8, seed=3).local_batch(5, 0, 1)
    for key in ("images", "labels"):
        assert torch.equal(one[key], again[key])
    for view in ("view1", "view2"):
        for k, v in one[view].items():
            assert torch.equal(v, again[view][k])
            halves = torch.cat([task.local_batch(5, r, 2)[view][k] for r in (0, 1)])
            assert torch.equal(halves, v)
    assert torch.equal(torch.cat([task.local_batch(5, r, 2)["images"] for r in (0, 1)]), one["images"])
    assert not torch.equal(one["view1"]["box"], one["view2"]["box"])  # two different views
    # An epoch visits distinct images; epochs are reshuffled.
    e0 = np.concatenate([task.global_rows(s) for s in range(2)])
    assert len(set(e0.tolist())) == 16
    assert not np.array_equal(e0, np.concatenate([task.global_rows(s) for s in range(2, 4)]))
    with pytest.raises(ValueError, match="fewer than"):
        ImageTask(imgs[:4], labels[:4], SimCLRAugment(), batch_size=8, seed=0)


@pytest.mark.parametrize("negatives", ["uniform", "ring"])
def test_moco_step_is_moco_v2_and_ring_is_alg1_on_the_queue(negatives):
    """uniform: MoCo-v2's cross-entropy over [positive, every queued key]; ring: Ring's Alg. 1 on the
    queue (sorted from farthest to closest, the slice [floor(l M), floor(u M)) kept), positive kept in
    the denominator as in the NCE bound of eq. 2. Both against a float64 sort-based reference."""
    moco = _tiny_moco(queue_size=40)
    batch, aug = _batch(6, 3)
    lower, upper = 30.0, 80.0
    options = {"lower": lower, "upper": upper} if negatives == "ring" else {}
    step = MoCoStep(RankingLoss(negatives, temperature=0.2, **options), aug)
    queue = moco.queue.embeddings().clone().double()
    loss = step(moco, batch)
    with torch.no_grad():
        k = moco.queue.embeddings()[-6:].double()  # this step's keys, enqueued after the loss
        q = F.normalize(moco.encoder(aug.apply(batch["images"], batch["view1"], float_output=True)).double(), dim=1)
    pos = (q * k).sum(1) / 0.2
    neg = (q @ queue.T / 0.2).sort(dim=1).values  # farthest to closest
    if negatives == "ring":
        m = queue.shape[0]
        neg = neg[:, int(lower / 100 * m) : int(upper / 100 * m)]
    expected = (torch.logsumexp(torch.cat([pos[:, None], neg], dim=1), dim=1) - pos).mean()
    assert torch.allclose(loss.double(), expected, atol=1e-5)
