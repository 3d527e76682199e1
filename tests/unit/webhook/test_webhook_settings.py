"""The webhook's whole-number settings from RUNWAY_* variables (what gunicorn workers read):
whatever a variable holds, empty, text, a sign, a number past any bound or 5,000 digits long,
the answer is the value within its bounds or a SettingsError naming the variable, never
another exception and never a value out of bounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.settings import Settings, SettingsError

# variable -> (field, low, high), as Settings.from_env bounds them
BOUNDS = {
    "RUNWAY_PORT": ("port", 0, 65535),
    "RUNWAY_WORKERS": ("workers", 1, 64),
    "RUNWAY_THREADS": ("threads", 1, 1024),
    "RUNWAY_MAX_BODY_BYTES": ("max_body_bytes", 1024, 1 << 30),
    "RUNWAY_STALE_SECONDS": ("stale_seconds", 1, 3600),
    "RUNWAY_VERBOSE": ("verbose", 0, 2),
}
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**6), 10**6).map(str),
    st.sampled_from(["", " 1", "1 ", "+1", "0x10", "1e3", "1_000", "٣", "9" * 5000, "-0"]),
)


@given(name=st.sampled_from(sorted(BOUNDS)), raw=VALUES)
def test_any_value_is_a_bounded_setting_or_an_error_naming_the_variable(
    name: str, raw: str
) -> None:
    field, low, high = BOUNDS[name]
    try:
        value = getattr(Settings.from_env({name: raw}), field)
    except SettingsError as err:
        assert str(err).startswith(f"{name}: ")
        assert len(str(err)) < 200  # a 5,000-digit value is not echoed back
        return
    assert low <= value <= high


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("3", "RUNWAY_VERBOSE: must be between 0 and 2"),
        ("loud", "RUNWAY_VERBOSE: must be a whole number, not 'loud'"),
    ],
)
def test_runway_verbose_names_itself(raw: str, message: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"RUNWAY_VERBOSE": raw})

    assert str(caught.value) == message
    assert Settings.from_env({"RUNWAY_VERBOSE": "1"}).verbose == 1
    assert Settings.from_env({}).verbose == 0
