"""Short variant of the policy mutation check (the full one is `make mutation`): two policies from different
areas, each broken in a copy of the template, must make the suite fail."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import policy_mutation


def test_broken_policies_are_caught_by_behavioural_tests():
    # Each mutation runs in a pytest process with its own embedded cluster, so the two run side by side.
    with ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(policy_mutation.run_one, ("weaken:packet_store.org_isolation",
                                                            "drop:memory_embeddings.user_visibility")))
    assert [(o.mutation, o.caught) for o in outcomes] == [(o.mutation, True) for o in outcomes], \
        [o.detail for o in outcomes]
