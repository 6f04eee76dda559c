"""tests/aarch64.sh's shares of a run (``DMLOPS_TEST_SHARD``, conftest.shard): n shares
together hold every collected test once, each a spread of the whole, not a block."""

import pytest

from conftest import shard


@pytest.mark.parametrize("n", [1, 2, 3])
def test_shares_hold_every_test_once(n):
    items = list(range(10))
    shares = [shard(items, f"{i}/{n}") for i in range(n)]
    kept = [t for share, _ in shares for t in share]
    assert sorted(kept) == items
    for share, left in shares:
        assert sorted(share + left) == items and not set(share) & set(left)
    if n > 1:     # spread: the first share has tests from both halves
        assert min(shares[0][0]) < 5 <= max(shares[0][0])


@pytest.mark.parametrize("spec", ["2/2", "-1/2", "0/0"])
def test_a_share_outside_the_run_is_refused(spec):
    with pytest.raises(pytest.UsageError):
        shard(list(range(4)), spec)
