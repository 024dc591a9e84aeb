"""The parts of a learned key that pytest cut short around ``...``, and the words that are not.

A key's parts are told from words by what they show of the key: a digit, or 12 characters.
"""

from __future__ import annotations

import pytest

from pytest_agentfaults._redact import LearnedSecrets
from pytest_agentfaults.testing._scrub import _cut_keys

KEY = "agent_live_8f2a9c1d4e7b3a6c_setting"


def learned(*values: str) -> LearnedSecrets:
    secrets = LearnedSecrets()
    secrets.learn(values)
    return secrets


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a key across the cut: both parts go, a short one too when the other shows a digit
        ("'zzzagent_live_8f2a...7b3a6c_settingww'", "'zzz[REDACTED]...[REDACTED]ww'"),
        ("'zzzagen...1d4e7b3a6c_settingww'", "'zzz[REDACTED]...[REDACTED]ww'"),
        ("'zzzagent_live_8f2a9c1d4e7b...ww'", "'zzz[REDACTED]...ww'"),
        ("'zz...c1d4e7b3a6c_settingww'", "'zz...[REDACTED]ww'"),
        # 12 characters of words are a key's too
        ("'zzzagent_live_8...ww'", "'zzz[REDACTED]...ww'"),
        ("'zzagent_l...settingww'", "'zz[REDACTED]...[REDACTED]ww'"),
        # a word the key starts or ends with, in an unrelated text: left as written
        ("'pytest_agent...ting._clients'", "'pytest_agent...ting._clients'"),
        ("'an agent_live...'", "'an agent_live...'"),
        ("Loading...setting up", "Loading...setting up"),
        ("'pytest_agent_l...ng._clients'", "'pytest_agent_l...ng._clients'"),
    ],
)
def test_a_cut_keys_parts_are_redacted_and_a_words_are_not(text, shown):
    assert _cut_keys(text, learned(KEY)) == shown
