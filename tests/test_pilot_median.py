"""The bounded-memory median (narrowing histograms) equals statistics.median."""

import statistics
from array import array

from hypothesis import given, settings, strategies as st

import proposalkit.pilot.common as common

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(finite, st.sampled_from([0.0, 5.0, 0.30000000000000004])), min_size=1, max_size=200),
       st.data(), st.sampled_from([0, 1, 10, 65536]))
def test_median_matches_statistics(values, data, sort_at_most):
    start = data.draw(st.integers(0, len(values) - 1))
    saved, common._SORT_AT_MOST = common._SORT_AT_MOST, sort_at_most   # 0 and 1 force narrowing rounds
    try:
        assert common.median(array("d", values), start) == statistics.median(values[start:])
    finally:
        common._SORT_AT_MOST = saved
