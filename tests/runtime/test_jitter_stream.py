"""The jitter stream: per run and replayable under a seed, shared (and fork-safe) without."""

from __future__ import annotations

import os
import sys

import pytest

from pytest_agentfaults.runtime.backoff import jitter_rng, seeded_jitter


def test_a_seeded_stream_is_new_per_run_so_each_run_replays_the_seed() -> None:
    with seeded_jitter(7):
        first, second = jitter_rng(), jitter_rng()
        assert first is not second
        assert [first.random() for _ in range(3)] == [second.random() for _ in range(3)]


def test_without_a_seed_runs_share_one_stream_and_draw_different_values() -> None:
    with seeded_jitter(None):  # the plugin seeds every test: lift that here
        first, second = jitter_rng(), jitter_rng()
    assert first is second  # no OS seeding per run
    assert first.random() != second.random()


@pytest.mark.skipif(sys.platform == "win32" or not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_reseeds_the_shared_stream() -> None:
    with seeded_jitter(None):
        stream = jitter_rng()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its first draw, then leave at once
        os.write(write, repr(stream.random()).encode())
        os._exit(0)
    os.close(write)
    child = float(os.read(read, 64).decode())
    os.close(read)
    os.waitpid(pid, 0)
    assert child != stream.random()
