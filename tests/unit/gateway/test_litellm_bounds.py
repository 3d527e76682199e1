"""LiteLLM answers are bounded as a whole (issue #40, items 9 and 14): an exchange ends within the
client's timeout however slowly LiteLLM trickles its headers or body, and an answer is read up to
MAX_ANSWER bytes, a size whose parse keeps the sync well under the gateway's 384Mi memory limit
whatever the answer's shape (measured in a fresh process, as the sync runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.listing import MAX_ENTRIES
from gateway.litellm import MAX_ANSWER, MAX_PARSED, LiteLLM, LiteLLMUnavailable
from tests.support.answers import SHAPES, Answer, AnswerServer, generated_info
from tests.support.wait import wait_until

KEY = "sk-master-bounds-0123456789"
TIMEOUT = 1.0
LIMIT_MIB = 384  # kustomize/gateway/deployment.yaml
# The peak a model_info() call may reach: half the limit leaves the rest of a pass its room.
PEAK_MIB = LIMIT_MIB // 2
LONG = json.dumps({"data": [{"model_name": f"m{i}"} for i in range(400)]}).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[AnswerServer]:
    started = AnswerServer().start()
    yield started
    started.stop()


def _outcome(client: LiteLLM) -> list[str]:
    """What model_info() ended with, from a thread (so an endless read fails the wait)."""
    out: list[str] = []

    def run() -> None:
        try:
            out.append(f"{len(client.model_info())} entries")
        except LiteLLMUnavailable as err:
            out.append(str(err))

    threading.Thread(target=run, daemon=True).start()
    wait_until(lambda: out, timeout=TIMEOUT + 15, what="model_info() to end")
    return out


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    after=st.sampled_from([0, 20, 120, len(LONG) // 2]),  # status line, headers, body
    pace=st.sampled_from([0.01, 0.05, 0.2]),
)
def test_a_trickled_answer_ends_at_the_total_deadline(
    server: AnswerServer, after: int, pace: float
) -> None:
    """Each byte comes well within the per-read timeout; the whole answer would take more than
    TIMEOUT: the exchange ends at the deadline with one error, wherever the trickle starts."""
    server.answers = {"/model/info": Answer(200, LONG, trickle=pace, trickle_after=after)}

    assert _outcome(LiteLLM(server.url, KEY, timeout=TIMEOUT)) == [
        f"{server.url}/model/info: no whole answer within {TIMEOUT:g} s"
    ]


def test_an_answer_within_the_deadline_is_read_whole(server: AnswerServer) -> None:
    server.answers = {"/model/info": Answer(200, LONG)}

    assert _outcome(LiteLLM(server.url, KEY, timeout=TIMEOUT)) == ["400 entries"]


@pytest.mark.parametrize("shape", SHAPES)
def test_an_answer_past_the_cap_is_refused(server: AnswerServer, shape: str) -> None:
    body = generated_info(MAX_ANSWER + 2**16, shape)
    server.answers = {"/model/info": Answer(200, body + b" " * (MAX_ANSWER + 1 - len(body)))}

    assert _outcome(LiteLLM(server.url, KEY)) == [
        f"{server.url}/model/info: the answer exceeds {MAX_ANSWER} bytes"
    ]


def test_other_answers_keep_the_smaller_cap(server: AnswerServer) -> None:
    body = json.dumps({"data": [{"id": "m"}]}).encode()
    server.answers = {"/v1/models": Answer(200, body + b" " * MAX_PARSED)}

    with pytest.raises(LiteLLMUnavailable) as raised:
        LiteLLM(server.url, KEY).public_models()

    assert str(raised.value) == f"{server.url}/v1/models: the answer exceeds {MAX_PARSED} bytes"


def test_a_listing_of_more_entries_than_kept_is_refused(server: AnswerServer) -> None:
    many = [{"model_name": f"m{i}"} for i in range(MAX_ENTRIES + 1)]
    server.answers = {"/model/info": Answer(200, json.dumps({"data": many}).encode())}

    assert _outcome(LiteLLM(server.url, KEY)) == [
        f"{server.url}/model/info: more than {MAX_ENTRIES} entries in the answer"
    ]


PEAK = """
import sys
import gateway.run  # everything the sync imports, the Kubernetes client included
from gateway.litellm import LiteLLM, LiteLLMUnavailable
try:
    LiteLLM(sys.argv[1], "k").model_info()
except LiteLLMUnavailable as err:  # past listing.MAX_ENTRIES: refused after reading it all
    assert "more than" in str(err), err
status = open("/proc/self/status").read().split("VmHWM:")[1].split()
print(int(status[0]) // 1024)
"""


@pytest.mark.parametrize("shape", SHAPES)
def test_reading_an_answer_at_the_cap_stays_well_under_the_memory_limit(
    server: AnswerServer, shape: str
) -> None:
    """The peak resident memory of a fresh process reading one answer of MAX_ANSWER bytes."""
    server.answers = {"/model/info": Answer(200, generated_info(MAX_ANSWER, shape))}

    done = subprocess.run(
        [sys.executable, "-c", PEAK, server.url],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
        check=True,
    )

    assert int(done.stdout) < PEAK_MIB
