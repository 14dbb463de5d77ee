"""Short variant of the policy mutation check (the full one is `make mutation`): two policies from different
areas, each broken in a copy of the template, must make the suite fail."""

from __future__ import annotations

import policy_mutation


def test_broken_policies_are_caught_by_behavioural_tests():
    outcomes = [policy_mutation.run_one(m) for m in ("weaken:packet_store.org_isolation",
                                                     "drop:memory_embeddings.user_visibility")]
    assert [(o.mutation, o.caught) for o in outcomes] == [(o.mutation, True) for o in outcomes], \
        [o.detail for o in outcomes]
