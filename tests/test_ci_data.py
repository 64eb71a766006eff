"""The one helper for tests that need a real dataset: skip where it is missing, fail under CI."""

import _data
import pytest
from _pytest.outcomes import Failed, Skipped


@pytest.mark.parametrize("ci, outcome", [("", Skipped), ("false", Skipped), ("true", Failed), ("1", Failed)])
def test_missing_dataset_skips_or_fails_under_ci(monkeypatch, tmp_path, ci, outcome):
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path))
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no senteval/CR under the data root"):
        _data.dataset("senteval", "CR")


def test_present_dataset_is_returned_under_ci(monkeypatch, tmp_path):
    (tmp_path / "senteval" / "CR").mkdir(parents=True)
    monkeypatch.setenv("QT_HARD_DATA", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    assert _data.dataset("senteval", "CR") == tmp_path / "senteval" / "CR"
